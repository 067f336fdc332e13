import { type Kysely, sql } from "kysely";

/**
 * The edit plan is made once, at submission, and kept with the job (batch
 * items are job rows too): `plan` is planEdit's accepted answer as JSON (the
 * engine's PlannedEdit), which the worker hands to its engine to execute as
 * stored. Before, the worker read the prompt again from its own configuration,
 * so an api and a worker configured differently could make a different edit
 * from the one accepted. Jobs queued before this migration (and rejected batch
 * items) have none: the worker's engine plans those itself, as it used to.
 *
 * `retouch_submit` (migration 0006) stays the whole submission in one round
 * trip: it is renamed `retouch_submit_rows` and the new `retouch_submit` calls
 * it, then writes each new job's plan in the same transaction, so a job is
 * never announced to a worker without it (NOTIFY is delivered at commit). A
 * replay wrote no rows and writes no plans.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table jobs add column plan jsonb;
    alter function retouch_submit(jsonb) rename to retouch_submit_rows;

    create function retouch_submit(p jsonb)
    returns jsonb
    language plpgsql as $fn$
    declare
      v_outcome jsonb;
    begin
      v_outcome := retouch_submit_rows(p);
      if v_outcome ? 'response' then
        update jobs set plan = j.plan
        from jsonb_to_recordset(p->'jobs') as j(id text, plan jsonb)
        where jobs.id = j.id and jobs.user_id = p->>'user_id' and j.plan is not null and j.plan <> 'null'::jsonb;
      end if;
      return v_outcome;
    end
    $fn$;
  `.execute(db);
}
