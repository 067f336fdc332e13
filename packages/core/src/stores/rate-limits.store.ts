import { type Kysely, sql, type Transaction } from "kysely";
import type { Database } from "../db/schema";

export interface RateDecision {
  allowed: boolean;
  /** When refused: seconds until the same request would pass (0 when allowed). */
  retryAfterSeconds: number;
}

export interface RateLimit {
  limit: number;
  windowMs: number;
}

type Executor = Kysely<Database> | Transaction<Database>;

/**
 * Sliding-log limits kept in PostgreSQL, so every API process shares them: per
 * key, the times of the events inside the window. A limit holds over any span
 * of `windowMs` (a fixed clock window lets twice the limit through across its
 * boundary). The check, the pruning and the append are one statement, atomic
 * under concurrency: the upsert locks the key's row. A key holds at most
 * `limit` times, so limits stay small (the plans' are at most 120).
 */
export class RateLimitsStore {
  constructor(private readonly db: Kysely<Database>) {}

  /**
   * Counts `amount` events at `now` against the limit, or refuses them all.
   * Pass a transaction to roll the count back with it. One round trip: the
   * algorithm is the SQL function `retouch_rate_hit` (migration 0006), which
   * submissions call inside their own transaction too.
   */
  async hit(
    key: string,
    options: RateLimit & { amount?: number; now?: number },
    executor: Executor = this.db,
  ): Promise<RateDecision> {
    const amount = options.amount ?? 1;
    const now = options.now ?? Date.now();
    const result = await sql<{ wait: string }>`
      select retouch_rate_hit(${key}, ${options.limit}::int, ${options.windowMs}::bigint, ${amount}::int, ${now}::bigint) as wait
    `.execute(executor);
    const waitMs = Number(result.rows[0]?.wait ?? 0);
    return waitMs === 0
      ? { allowed: true, retryAfterSeconds: 0 }
      : { allowed: false, retryAfterSeconds: retryAfterSeconds(waitMs) };
  }

  /**
   * Counts one event under every key, or none when any key refuses (all in one
   * transaction). The refusal's `retryAfterSeconds` is the longest wait.
   */
  async hitAll(entries: Array<RateLimit & { key: string }>, now: number = Date.now()): Promise<RateDecision> {
    return this.db
      .transaction()
      .execute(async (trx) => {
        let retryAfterSeconds = 0;
        for (const { key, ...limit } of entries) {
          const decision = await this.hit(key, { ...limit, now }, trx);
          if (!decision.allowed) retryAfterSeconds = Math.max(retryAfterSeconds, decision.retryAfterSeconds);
        }
        if (retryAfterSeconds > 0) throw new Refused(retryAfterSeconds);
        return { allowed: true, retryAfterSeconds: 0 };
      })
      .catch((error: unknown) => {
        if (error instanceof Refused) return { allowed: false, retryAfterSeconds: error.retryAfterSeconds };
        throw error;
      });
  }

  /** Takes back one event counted at `at` under each key (an attempt that turned out not to count). */
  async release(keys: string[], at: number): Promise<void> {
    if (keys.length === 0) return;
    await sql`
      update rate_limit_events
      set hits = hits[:array_position(hits, ${at}::bigint) - 1] || hits[array_position(hits, ${at}::bigint) + 1:]
      where key = any(${keys}::text[]) and ${at}::bigint = any(hits)
    `.execute(this.db);
  }

  /** Forgets every event of these keys: the limit starts afresh. */
  async clear(keys: string[]): Promise<void> {
    if (keys.length === 0) return;
    await this.db.deleteFrom("rate_limit_events").where("key", "in", keys).execute();
  }

  /** Forgets keys whose newest event is older than `cutoff`. */
  async deleteOlderThan(cutoff: Date): Promise<number> {
    const result = await sql`
      delete from rate_limit_events where coalesce(hits[cardinality(hits)], 0) < ${cutoff.getTime()}
    `.execute(this.db);
    return Number(result.numAffectedRows ?? 0);
  }
}

/** Rolls back `hitAll`'s transaction when a key refuses. */
class Refused extends Error {
  constructor(readonly retryAfterSeconds: number) {
    super("rate limited");
  }
}

/** A wait in milliseconds as a `Retry-After` value: whole seconds, at least 1. */
export function retryAfterSeconds(waitMs: number): number {
  return Math.max(1, Math.ceil(waitMs / 1000));
}
