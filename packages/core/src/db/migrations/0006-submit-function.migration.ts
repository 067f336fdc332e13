import { type Kysely, sql } from "kysely";

/**
 * A submission in one round trip. Before, accepting a job took ten statements
 * (idempotency claim, profile lock, rate log, in-flight count, a debit and a
 * ledger row per image, the inserts, the saved answer) and then a queue insert
 * and a NOTIFY, each a round trip from Node. Now the whole
 * transaction is one function call, `retouch_submit`, and the sliding-log rate
 * limit is one function, `retouch_rate_hit`, that every limit in the service
 * uses (sign-up, sign-in, submissions), so the algorithm is written once.
 *
 * A refusal raises an exception (SQLSTATE RTX01) whose message is the error
 * code and whose detail is a JSON object with the figures the client's message
 * needs; the exception rolls back everything the call wrote.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    -- Counts amount events at now_ms under key, unless that would put more than lim
    -- inside the window ending at now_ms. Returns 0 when counted, else the milliseconds
    -- until the same request would fit (nothing is counted then).
    create function retouch_rate_hit(p_key text, p_limit int, p_window_ms bigint, p_amount int, p_now_ms bigint)
    returns bigint
    language plpgsql as $fn$
    declare
      live bigint[];
      must_expire int;
    begin
      if p_amount > p_limit then
        return p_window_ms;
      end if;
      insert into rate_limit_events as r (key, hits)
      values (p_key, array_fill(p_now_ms, array[p_amount]))
      on conflict (key) do update
        set hits = array(select h from unnest(r.hits) h where h > p_now_ms - p_window_ms) || excluded.hits
        where (select count(*) from unnest(r.hits) h where h > p_now_ms - p_window_ms) + p_amount <= p_limit;
      if found then
        return 0;
      end if;
      select array(select h from unnest(hits) h where h > p_now_ms - p_window_ms order by h)
        into live from rate_limit_events where key = p_key;
      must_expire := coalesce(array_length(live, 1), 0) + p_amount - p_limit;
      -- Events left the window since the refusal: the very next try fits.
      if must_expire <= 0 then
        return 1;
      end if;
      return greatest(1, live[must_expire] + p_window_ms - p_now_ms);
    end
    $fn$;

    -- One submission. p: { user_id, idempotency_key?, request_hash?, now_ms, window_ms,
    -- plans: { name: { per_minute, concurrent } }, batch: { id, size }?, jobs: [row...],
    -- queue: { job_name, channel }, response } where response is the client's answer
    -- without credits_remaining. Returns { replay: response } or { response }.
    -- Each pending job's queue entry (Agenda's table, created by migration 0003) is
    -- written here too and announced by NOTIFY, which PostgreSQL delivers at commit:
    -- a job is never committed without its queue entry, nor announced before it exists.
    create function retouch_submit(p jsonb)
    returns jsonb
    language plpgsql as $fn$
    declare
      v_user text := p->>'user_id';
      v_key text := p->>'idempotency_key';
      v_previous record;
      v_plan text;
      v_credits int;
      v_limits jsonb;
      v_count int;
      v_pending int;
      v_wait bigint;
      v_balance int;
      v_response jsonb;
      v_queue_id uuid;
    begin
      if v_key is not null then
        -- A parallel request with the same key waits here until the first commits or rolls back.
        insert into idempotency_keys (user_id, key, request_hash, response)
        values (v_user, v_key, p->>'request_hash', null)
        on conflict (user_id, key) do nothing;
        if not found then
          select request_hash, response into v_previous from idempotency_keys where user_id = v_user and key = v_key;
          if v_previous.request_hash is distinct from p->>'request_hash' then
            raise exception using errcode = 'RTX01', message = 'idempotency_key_reused', detail = '{}';
          end if;
          return jsonb_build_object('replay', v_previous.response);
        end if;
      end if;

      -- Submissions of one account are serialised from here to commit.
      select plan, credits into v_plan, v_credits from profiles where user_id = v_user for update;
      if not found then
        raise exception 'no profile for user %', v_user;
      end if;
      v_limits := coalesce(p->'plans'->v_plan, p->'plans'->'free');
      if (p->'batch'->>'size')::int > (v_limits->>'concurrent')::int then
        raise exception using errcode = 'RTX01', message = 'batch_exceeds_plan_limit',
          detail = jsonb_build_object('plan', v_plan, 'limit', (v_limits->>'concurrent')::int)::text;
      end if;

      select count(*) into v_count from jsonb_array_elements(p->'jobs') j where j->>'status' = 'pending';
      v_balance := v_credits;
      if v_count > 0 then
        v_wait := retouch_rate_hit('submissions:' || v_user, (v_limits->>'per_minute')::int,
          (p->>'window_ms')::bigint, v_count, (p->>'now_ms')::bigint);
        if v_wait > 0 then
          raise exception using errcode = 'RTX01', message = 'rate_limited',
            detail = jsonb_build_object('plan', v_plan, 'limit', (v_limits->>'per_minute')::int, 'retry_after_ms', v_wait)::text;
        end if;
        select count(*) into v_pending from jobs where user_id = v_user and status = 'pending';
        if v_pending + v_count > (v_limits->>'concurrent')::int then
          raise exception using errcode = 'RTX01', message = 'too_many_in_flight',
            detail = jsonb_build_object('plan', v_plan, 'limit', (v_limits->>'concurrent')::int, 'pending', v_pending)::text;
        end if;
        update profiles set credits = credits - v_count, updated_at = now()
        where user_id = v_user and credits >= v_count
        returning credits into v_balance;
        if not found then
          raise exception using errcode = 'RTX01', message = 'insufficient_credits',
            detail = jsonb_build_object('needed', v_count, 'balance', v_credits)::text;
        end if;
      end if;

      if p->'batch' is not null and p->'batch' <> 'null'::jsonb then
        insert into batches (id, user_id) values (p->'batch'->>'id', v_user);
      end if;
      insert into jobs (id, user_id, batch_id, batch_index, status, workflow, prompt, negative_prompt, detect,
        output_format, quality, webhook_url, input_blob, mask_blob, input_width, input_height, credits_used,
        rejection, credits_remaining, finished_at)
      select j.id, v_user, j.batch_id, j.batch_index, j.status, j.workflow, j.prompt, j.negative_prompt, j.detect,
        j.output_format, j.quality, j.webhook_url, j.input_blob, j.mask_blob, j.input_width, j.input_height,
        case when j.status = 'pending' then 1 else 0 end,
        j.rejection,
        case when j.status = 'error' then v_balance end,
        case when j.status = 'error' then now() end
      from jsonb_to_recordset(p->'jobs') as j(id text, batch_id text, batch_index int, status text, workflow text,
        prompt text, negative_prompt text, detect text, output_format text, quality int, webhook_url text,
        input_blob text, mask_blob text, input_width int, input_height int, rejection text);
      -- One ledger row per debited image, each with the balance after it, in the order of the request.
      insert into credit_ledger (user_id, delta, balance_after, reason, job_id)
      select v_user, -1, v_balance + v_count - row_number() over (order by e.n), 'job_debit', e.j->>'id'
      from jsonb_array_elements(p->'jobs') with ordinality as e(j, n)
      where e.j->>'status' = 'pending';

      for v_queue_id in
        insert into agenda_jobs (name, priority, next_run_at, type, data)
        select p->'queue'->>'job_name', 0, now(), 'normal', jsonb_build_object('jobId', j->>'id')
        from jsonb_array_elements(p->'jobs') with ordinality as e(j, n)
        where j->>'status' = 'pending'
        order by n
        returning id
      loop
        -- The payload @agendajs/postgres-backend's own NOTIFY carries; nextRunAt null: run now.
        perform pg_notify(p->'queue'->>'channel', jsonb_build_object('jobId', v_queue_id, 'jobName', p->'queue'->>'job_name',
          'nextRunAt', null, 'priority', 0,
          'timestamp', to_char(clock_timestamp() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text);
      end loop;

      v_response := (p->'response') || jsonb_build_object('credits_remaining', v_balance);
      if v_key is not null then
        update idempotency_keys set response = v_response where user_id = v_user and key = v_key;
      end if;
      return jsonb_build_object('response', v_response);
    end
    $fn$;
  `.execute(db);
}
