import { type Kysely, sql } from "kysely";

/**
 * An account's jobs newest first (`GET /api/jobs`, keyset-paginated on
 * `(created_at, id)`; the jobs of a batch share one `created_at`, so the id
 * breaks the tie) and its jobs since a date (`usage.this_month` of
 * `GET /api/account`): both are one range scan of this index.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create index jobs_user_created_idx on jobs (user_id, created_at desc, id desc)`.execute(db);
}
