import { type Kysely, sql, type Transaction } from "kysely";
import type { Database } from "../db/schema";

export interface RateDecision {
  allowed: boolean;
  /** Seconds until the current window ends. */
  retryAfterSeconds: number;
}

/**
 * Fixed-window counters kept in PostgreSQL, so every API process shares them
 * and parallel requests cannot slip past: the increment and the check are one
 * statement.
 */
export class RateLimitsStore {
  constructor(private readonly db: Kysely<Database>) {}

  /** Counts `amount` events against the limit; pass a transaction to roll the count back with it. */
  async hit(
    key: string,
    options: { limit: number; windowMs: number; amount?: number; now?: number },
    executor: Kysely<Database> | Transaction<Database> = this.db,
  ): Promise<RateDecision> {
    const amount = options.amount ?? 1;
    const now = options.now ?? Date.now();
    const windowStart = Math.floor(now / options.windowMs) * options.windowMs;
    const retryAfterSeconds = Math.max(1, Math.ceil((windowStart + options.windowMs - now) / 1000));
    if (amount > options.limit) return { allowed: false, retryAfterSeconds };
    const row = await executor
      .insertInto("rate_limit_windows")
      .values({ key, window_start: new Date(windowStart), count: amount })
      .onConflict((conflict) =>
        conflict
          .columns(["key", "window_start"])
          .doUpdateSet({ count: sql`rate_limit_windows.count + excluded.count` })
          .where(sql<boolean>`rate_limit_windows.count + excluded.count <= ${options.limit}`),
      )
      .returning("count")
      .executeTakeFirst();
    return { allowed: row !== undefined, retryAfterSeconds };
  }

  async deleteOlderThan(cutoff: Date): Promise<number> {
    const result = await this.db.deleteFrom("rate_limit_windows").where("window_start", "<", cutoff).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
