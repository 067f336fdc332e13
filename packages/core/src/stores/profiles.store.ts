import type { Kysely, Transaction } from "kysely";
import type { Database, LedgerReason } from "../db/schema";

type Executor = Kysely<Database> | Transaction<Database>;

export interface Profile {
  userId: string;
  plan: string;
  credits: number;
  webhookSecret: string;
}

export interface NewProfile {
  userId: string;
  plan: string;
  credits: number;
  webhookSecret: string;
}

export interface CreditChange {
  userId: string;
  delta: number;
  reason: LedgerReason;
  jobId?: string;
  note?: string;
  /** The payment provider's object a payment grant comes from (billing.store.ts). */
  stripeRef?: string;
}

/** Profiles hold the plan and the credit balance; every balance change is also a ledger row. */
export class ProfilesStore {
  constructor(private readonly db: Kysely<Database>) {}

  /**
   * Creates the profile with its sign-up grant unless it exists. Idempotent,
   * so it is safe to call again after a crash between sign-up and here.
   */
  async ensure(profile: NewProfile): Promise<Profile> {
    await this.db.transaction().execute(async (trx) => {
      const inserted = await trx
        .insertInto("profiles")
        .values({
          user_id: profile.userId,
          plan: profile.plan,
          credits: profile.credits,
          webhook_secret: profile.webhookSecret,
        })
        .onConflict((conflict) => conflict.column("user_id").doNothing())
        .returning("credits")
        .executeTakeFirst();
      if (inserted && inserted.credits > 0) {
        await trx
          .insertInto("credit_ledger")
          .values({
            user_id: profile.userId,
            delta: inserted.credits,
            balance_after: inserted.credits,
            reason: "signup_grant",
            job_id: null,
            note: null,
          })
          .execute();
      }
    });
    const stored = await this.find(profile.userId);
    if (!stored) throw new Error(`profile for ${profile.userId} vanished right after creation`);
    return stored;
  }

  async find(userId: string, executor: Executor = this.db): Promise<Profile | undefined> {
    const row = await executor
      .selectFrom("profiles")
      .select(["user_id", "plan", "credits", "webhook_secret"])
      .where("user_id", "=", userId)
      .executeTakeFirst();
    return row && { userId: row.user_id, plan: row.plan, credits: row.credits, webhookSecret: row.webhook_secret };
  }

  /**
   * Applies a credit change and records it, inside the caller's transaction.
   * Returns the new balance, or undefined when the balance would go negative
   * (nothing is changed then).
   */
  async changeCredits(trx: Transaction<Database>, change: CreditChange): Promise<number | undefined> {
    const updated = await trx
      .updateTable("profiles")
      .set((eb) => ({ credits: eb("credits", "+", change.delta), updated_at: new Date() }))
      .where("user_id", "=", change.userId)
      .where((eb) => eb(eb("credits", "+", change.delta), ">=", 0))
      .returning("credits")
      .executeTakeFirst();
    if (!updated) return undefined;
    await trx
      .insertInto("credit_ledger")
      .values({
        user_id: change.userId,
        delta: change.delta,
        balance_after: updated.credits,
        reason: change.reason,
        job_id: change.jobId ?? null,
        note: change.note ?? null,
        ...(change.stripeRef ? { stripe_ref: change.stripeRef } : {}),
      })
      .execute();
    return updated.credits;
  }

  /** One credit change in its own transaction; see `changeCredits`. */
  async applyCreditChange(change: CreditChange): Promise<number | undefined> {
    return this.db.transaction().execute((trx) => this.changeCredits(trx, change));
  }

  async setPlan(userId: string, plan: string): Promise<boolean> {
    const result = await this.db
      .updateTable("profiles")
      .set({ plan, updated_at: new Date() })
      .where("user_id", "=", userId)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async ledger(
    userId: string,
  ): Promise<Array<{ delta: number; balanceAfter: number; reason: LedgerReason; jobId: string | null }>> {
    const rows = await this.db
      .selectFrom("credit_ledger")
      .select(["delta", "balance_after", "reason", "job_id"])
      .where("user_id", "=", userId)
      .orderBy("id")
      .execute();
    return rows.map((row) => ({ delta: row.delta, balanceAfter: row.balance_after, reason: row.reason, jobId: row.job_id }));
  }
}
