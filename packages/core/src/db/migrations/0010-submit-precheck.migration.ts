import { type Kysely, sql } from "kysely";

/**
 * The refusals of `retouch_submit` (migration 0006), read-only, so that a
 * submission is refused before any `image_url` is fetched: a doomed request
 * (no credits, a batch over the plan, over the rate, too many in flight)
 * used to download every image first. `retouch_submit` stays the authority:
 * it takes the profile lock and checks again, so two requests racing past
 * the pre-check are still never both charged past a limit.
 *
 * `retouch_rate_wait` is `retouch_rate_hit` without the append: the same
 * answer (0 when `amount` events would fit now, else the milliseconds until
 * they would), nothing counted.
 *
 * `retouch_submit_precheck` raises the same RTX01 exceptions with the same
 * detail, in the same order, for the number of images that could still
 * become jobs; an idempotency key already answered returns { replay }, so a
 * retry is still answered from the saved response before any limit.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create function retouch_rate_wait(p_key text, p_limit int, p_window_ms bigint, p_amount int, p_now_ms bigint)
    returns bigint
    language sql stable as $fn$
      select case
        when p_amount > p_limit then p_window_ms
        when cardinality(s.live) + p_amount <= p_limit then 0
        else greatest(1, s.live[cardinality(s.live) + p_amount - p_limit] + p_window_ms - p_now_ms)
      end
      from (
        select coalesce(
          (select array(select h from unnest(r.hits) h where h > p_now_ms - p_window_ms order by h)
           from rate_limit_events r where r.key = p_key),
          '{}'::bigint[]) as live
      ) s
    $fn$;

    -- p: { user_id, idempotency_key?, request_hash?, now_ms, window_ms, plans, batch: { size }?, count }
    -- where count is how many images could become pending jobs. Returns {} when nothing
    -- refuses, { replay: response } for an idempotency key already answered.
    create function retouch_submit_precheck(p jsonb)
    returns jsonb
    language plpgsql stable as $fn$
    declare
      v_user text := p->>'user_id';
      v_key text := p->>'idempotency_key';
      v_previous record;
      v_plan text;
      v_credits int;
      v_limits jsonb;
      v_count int := (p->>'count')::int;
      v_pending int;
      v_wait bigint;
    begin
      if v_key is not null then
        select request_hash, response into v_previous from idempotency_keys
        where user_id = v_user and key = v_key and response is not null;
        if found then
          if v_previous.request_hash is distinct from p->>'request_hash' then
            raise exception using errcode = 'RTX01', message = 'idempotency_key_reused', detail = '{}';
          end if;
          return jsonb_build_object('replay', v_previous.response);
        end if;
      end if;

      select plan, credits into v_plan, v_credits from profiles where user_id = v_user;
      if not found then
        raise exception 'no profile for user %', v_user;
      end if;
      v_limits := coalesce(p->'plans'->v_plan, p->'plans'->'free');
      if (p->'batch'->>'size')::int > (v_limits->>'concurrent')::int then
        raise exception using errcode = 'RTX01', message = 'batch_exceeds_plan_limit',
          detail = jsonb_build_object('plan', v_plan, 'limit', (v_limits->>'concurrent')::int)::text;
      end if;

      if v_count > 0 then
        v_wait := retouch_rate_wait('submissions:' || v_user, (v_limits->>'per_minute')::int,
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
        if v_credits < v_count then
          raise exception using errcode = 'RTX01', message = 'insufficient_credits',
            detail = jsonb_build_object('needed', v_count, 'balance', v_credits)::text;
        end if;
      end if;
      return '{}'::jsonb;
    end
    $fn$;
  `.execute(db);
}
