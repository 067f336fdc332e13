import { type Kysely, sql } from "kysely";

/**
 * Rate limits become a sliding log: per key, the times (ms since the epoch) of
 * the events still inside the window, so a limit holds over any span of its
 * window rather than per clock minute. The fixed-window counters go.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table rate_limit_events (
      key text primary key,
      hits bigint[] not null
    );
    drop table rate_limit_windows;
  `.execute(db);
}
