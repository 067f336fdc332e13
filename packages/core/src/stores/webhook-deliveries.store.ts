import { type Kysely, type Selectable, sql, type Transaction } from "kysely";
import type { Database, WebhookDeliveryTable } from "../db/schema";
import { newId } from "../lib/ids";

export type DeliveryRow = Selectable<WebhookDeliveryTable>;

export class WebhookDeliveriesStore {
  constructor(private readonly db: Kysely<Database>) {}

  /** Inside the settle transaction: a job that settles with a webhook_url always gets its delivery. */
  /** The settled job's delivery, written in the settling transaction: its id to schedule, or null without a webhook_url. */
  async createForJob(
    trx: Transaction<Database>,
    job: { id: string; user_id: string; webhook_url: string | null },
  ): Promise<string | null> {
    if (!job.webhook_url) return null;
    const created = await trx
      .insertInto("webhook_deliveries")
      .values({
        id: newId("whd"),
        job_id: job.id,
        user_id: job.user_id,
        url: job.webhook_url,
        status: "pending",
        next_attempt_at: new Date(),
      })
      .onConflict((conflict) => conflict.column("job_id").doNothing())
      .returning("id")
      .executeTakeFirst();
    return created?.id ?? null;
  }

  /**
   * Takes a due delivery for one attempt; undefined when it is settled, not
   * due yet (a duplicate trigger must not shorten the retry spacing), or
   * another worker is on it.
   */
  async lockForAttempt(id: string, leaseMs: number): Promise<DeliveryRow | undefined> {
    return this.db
      .updateTable("webhook_deliveries")
      .set({ locked_until: sql<Date>`now() + ${`${leaseMs} milliseconds`}::interval` })
      .where("id", "=", id)
      .where("status", "=", "pending")
      .where("next_attempt_at", "<=", sql<Date>`now() + interval '1 second'`)
      .where((eb) => eb.or([eb("locked_until", "is", null), eb("locked_until", "<", sql<Date>`now()`)]))
      .returningAll()
      .executeTakeFirst();
  }

  async recordAttempt(
    id: string,
    outcome: { delivered: boolean; statusCode: number | null; error: string | null; nextAttemptAt: Date | null },
  ): Promise<DeliveryRow | undefined> {
    const now = new Date();
    return this.db
      .updateTable("webhook_deliveries")
      .set((eb) => ({
        attempts: eb("attempts", "+", 1),
        last_status_code: outcome.statusCode,
        last_error: outcome.error,
        last_attempt_at: now,
        locked_until: null,
        status: outcome.delivered ? "delivered" : outcome.nextAttemptAt ? "pending" : "failed",
        next_attempt_at: outcome.delivered ? null : outcome.nextAttemptAt,
        delivered_at: outcome.delivered ? now : null,
      }))
      .where("id", "=", id)
      .where("status", "=", "pending")
      .returningAll()
      .executeTakeFirst();
  }

  async listForUser(userId: string, limit: number): Promise<DeliveryRow[]> {
    return this.db
      .selectFrom("webhook_deliveries")
      .selectAll()
      .where("user_id", "=", userId)
      .orderBy("created_at", "desc")
      .orderBy("id", "desc")
      .limit(limit)
      .execute();
  }

  /** Pending deliveries overdue by more than `graceMs` and not being attempted: their queue entry was lost. */
  async overdue(graceMs: number, limit = 500): Promise<Array<{ id: string; nextAttemptAt: Date }>> {
    const rows = await this.db
      .selectFrom("webhook_deliveries")
      .select(["id", "next_attempt_at"])
      .where("status", "=", "pending")
      .where("next_attempt_at", "<", sql<Date>`now() - ${`${graceMs} milliseconds`}::interval`)
      .where((eb) => eb.or([eb("locked_until", "is", null), eb("locked_until", "<", sql<Date>`now()`)]))
      .limit(limit)
      .execute();
    return rows.map((row) => ({ id: row.id, nextAttemptAt: row.next_attempt_at as Date }));
  }
}
