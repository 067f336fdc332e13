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
   * Pass a transaction to roll the count back with it. One round trip when
   * allowed; a refusal reads the log once more to say when to retry.
   */
  async hit(
    key: string,
    options: RateLimit & { amount?: number; now?: number },
    executor: Executor = this.db,
  ): Promise<RateDecision> {
    const amount = options.amount ?? 1;
    const now = options.now ?? Date.now();
    if (amount > options.limit) return { allowed: false, retryAfterSeconds: Math.ceil(options.windowMs / 1000) };
    const since = now - options.windowMs;
    const inserted = await sql<{ key: string }>`
      insert into rate_limit_events as r (key, hits)
      values (${key}, array_fill(${now}::bigint, array[${amount}::int]))
      on conflict (key) do update
        set hits = array(select h from unnest(r.hits) h where h > ${since}) || excluded.hits
        where (select count(*) from unnest(r.hits) h where h > ${since}) + ${amount} <= ${options.limit}
      returning key
    `.execute(executor);
    if (inserted.rows.length > 0) return { allowed: true, retryAfterSeconds: 0 };
    const row = await executor.selectFrom("rate_limit_events").select("hits").where("key", "=", key).executeTakeFirst();
    return { allowed: false, retryAfterSeconds: retryAfter(row?.hits ?? [], { ...options, amount, now }) };
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

/** Seconds until enough logged events leave the window for `amount` more to fit. */
function retryAfter(hits: string[], options: RateLimit & { amount: number; now: number }): number {
  const live = hits
    .map(Number)
    .filter((at) => at > options.now - options.windowMs)
    .sort((a, b) => a - b);
  const mustExpire = live.length + options.amount - options.limit;
  // Events left the window since the refusal: the very next try fits.
  if (mustExpire <= 0) return 1;
  const freedAt = (live[mustExpire - 1] ?? options.now) + options.windowMs;
  return Math.max(1, Math.ceil((freedAt - options.now) / 1000));
}
