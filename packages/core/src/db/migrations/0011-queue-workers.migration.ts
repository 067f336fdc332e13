import { type Kysely, sql } from "kysely";

/**
 * The processes working the queue, each with its heartbeat. A worker that
 * stops beating (killed, frozen, cut off) is found by the others, which free
 * the queue locks it held (agenda_jobs.last_modified_by names the holder), so
 * its jobs run at once rather than when the locks expire. Times are the
 * database's own, so the workers' clocks never matter.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table queue_workers (
      id varchar(255) primary key,
      started_at timestamptz not null default now(),
      heartbeat_at timestamptz not null default now(),
      -- Its own period: it is dead once silent for three of them, whatever the judge's setting.
      heartbeat_ms integer not null check (heartbeat_ms > 0)
    );
  `.execute(db);
}
