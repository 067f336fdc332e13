import { sql } from "kysely";
import type { Db } from "../db/database";
import type { QueueDepth } from "../lib/metrics";

/** What operators' endpoints read from the database: whether it answers (/readyz) and the queue's depth (/metrics). */
export class OperationsStore {
  constructor(private readonly db: Db) {}

  /** One round trip: throws when the database cannot be reached. */
  async ping(): Promise<void> {
    await sql`select 1`.execute(this.db);
  }

  /**
   * Pending jobs, waiting and held, and the oldest one's submission time, in
   * one query read at each scrape. It touches pending rows only (the partial
   * index jobs_pending_created_idx): its cost follows the queue's depth, never
   * the table's history.
   */
  async queueDepth(): Promise<QueueDepth> {
    const { rows } = await sql<{ waiting: string; running: string; oldest: Date | null }>`
      select count(*) filter (where claimed_until is null or claimed_until < now()) as waiting,
             count(*) filter (where claimed_until >= now()) as running,
             min(created_at) as oldest
        from jobs
       where status = 'pending'`.execute(this.db);
    const row = rows[0];
    return {
      waiting: Number(row?.waiting ?? 0),
      running: Number(row?.running ?? 0),
      oldestPendingAt: row?.oldest ?? undefined,
    };
  }
}
