import { type Kysely, sql, type Transaction } from "kysely";
import type { Database } from "../db/schema";
import type { ProfilesStore } from "./profiles.store";

type Trx = Transaction<Database>;

/** Statuses in which a subscription still gives its plan: a failed renewal (past_due) keeps it until Stripe gives up. */
export const LIVE_SUBSCRIPTION_STATUSES = ["active", "trialing", "past_due"] as const;

export interface SubscriptionRow {
  subscriptionId: string;
  userId: string;
  plan: string;
  status: string;
  currentPeriodEnd: Date | null;
  cancelAtPeriodEnd: boolean;
}

export interface SubscriptionUpdate {
  userId: string;
  subscriptionId: string;
  plan: string;
  status: string;
  currentPeriodEnd: Date | undefined;
  cancelAtPeriodEnd: boolean;
  /** The event's `created` (seconds): an update older than the row's is ignored. */
  eventCreated: number;
}

export interface PurchaseRow {
  id: string;
  kind: "pack" | "plan";
  plan: string | null;
  credits: number;
  amount: number | null;
  currency: string | null;
  creditsClawedBack: number;
  amountRefunded: number;
  disputed: boolean;
  createdAt: Date;
}

/**
 * Billing state (0013-billing): customers, subscriptions, purchases, and the
 * ledger grants they make. Every change of credits here first locks the
 * account's profile row, so grants of one account are serialized; each grant
 * is then written only if its (stripe_ref, reason) is not in the ledger yet,
 * which the unique index backs: one Stripe object grants once, however many
 * times and however concurrently its event is delivered.
 */
export class BillingStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly profiles: ProfilesStore,
  ) {}

  async customerOf(userId: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom("billing_customers")
      .select("stripe_customer_id")
      .where("user_id", "=", userId)
      .executeTakeFirst();
    return row?.stripe_customer_id;
  }

  /** Keeps the first customer saved for the account (two first checkouts at once) and returns it. */
  async saveCustomer(userId: string, customerId: string): Promise<string> {
    await this.db
      .insertInto("billing_customers")
      .values({ user_id: userId, stripe_customer_id: customerId })
      .onConflict((conflict) => conflict.doNothing())
      .execute();
    return (await this.customerOf(userId)) ?? customerId;
  }

  async userOfCustomer(customerId: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom("billing_customers")
      .select("user_id")
      .where("stripe_customer_id", "=", customerId)
      .executeTakeFirst();
    return row?.user_id;
  }

  async userExists(userId: string): Promise<boolean> {
    return (
      (await this.db.selectFrom("profiles").select("user_id").where("user_id", "=", userId).executeTakeFirst()) !== undefined
    );
  }

  /** The account's subscription that gives its plan, else its latest one. */
  async subscriptionOf(userId: string): Promise<SubscriptionRow | undefined> {
    const row = await this.db
      .selectFrom("billing_subscriptions")
      .selectAll()
      .where("user_id", "=", userId)
      .orderBy(sql`status in ('active', 'trialing', 'past_due')`, "desc")
      .orderBy("updated_at", "desc")
      .executeTakeFirst();
    return (
      row && {
        subscriptionId: row.stripe_subscription_id,
        userId: row.user_id,
        plan: row.plan,
        status: row.status,
        currentPeriodEnd: row.current_period_end,
        cancelAtPeriodEnd: row.cancel_at_period_end,
      }
    );
  }

  async purchases(userId: string, limit = 50): Promise<PurchaseRow[]> {
    const rows = await this.db
      .selectFrom("billing_purchases")
      .selectAll()
      .where("user_id", "=", userId)
      .orderBy("id", "desc")
      .limit(limit)
      .execute();
    return rows.map((row) => ({
      id: row.id,
      kind: row.kind,
      plan: row.plan,
      credits: row.credits,
      amount: row.amount,
      currency: row.currency,
      creditsClawedBack: row.credits_clawed_back,
      amountRefunded: row.amount_refunded,
      disputed: row.disputed,
      createdAt: row.created_at,
    }));
  }

  /** What is left of the current period's plan allowance (spent first, so it is what jobs have not used yet). */
  async allowanceLeft(userId: string): Promise<number> {
    return this.db.transaction().execute(async (trx) => {
      const balance = (await this.profiles.find(userId, trx))?.credits ?? 0;
      return this.allowanceLeftIn(trx, userId, balance);
    });
  }

  /**
   * A paid pack: the purchase, its credits and the verified email, once per
   * checkout session. Returns whether this call granted them.
   */
  async grantPack(input: {
    userId: string;
    sessionId: string;
    credits: number;
    amount: number | null;
    currency: string | null;
    paymentIntentId: string | undefined;
  }): Promise<{ granted: boolean; balance: number | undefined }> {
    return this.db.transaction().execute(async (trx) => {
      const balance = await this.lockProfile(trx, input.userId);
      if (balance === undefined) return { granted: false, balance };
      await this.markVerified(trx, input.userId);
      const purchase = await trx
        .insertInto("billing_purchases")
        .values({
          user_id: input.userId,
          kind: "pack",
          plan: null,
          credits: input.credits,
          amount: input.amount,
          currency: input.currency,
          stripe_ref: input.sessionId,
          stripe_payment_intent: input.paymentIntentId ?? null,
          period_end: null,
        })
        .onConflict((conflict) => conflict.doNothing())
        .returning("id")
        .executeTakeFirst();
      if (!purchase || (await this.granted(trx, input.sessionId, "pack_purchase"))) return { granted: false, balance };
      const after = await this.profiles.changeCredits(trx, {
        userId: input.userId,
        delta: input.credits,
        reason: "pack_purchase",
        stripeRef: input.sessionId,
      });
      return { granted: true, balance: after };
    });
  }

  /** A paid checkout of any kind proves the address (spec: "Paying for credits also verifies the email"). */
  async verifyEmail(userId: string): Promise<void> {
    await this.markVerified(this.db, userId);
  }

  /**
   * Writes the subscription as the event says, unless an event created later
   * already wrote it or it has ended (an ended subscription never comes
   * back); then sets the account's plan from its live subscription (free
   * without one). When the subscription stops giving its plan, what is left
   * of its allowance expires. Returns the account's plan, or undefined when
   * the update was ignored.
   */
  async applySubscription(update: SubscriptionUpdate): Promise<{ plan: string; expired: number } | undefined> {
    return this.db.transaction().execute(async (trx) => {
      const balance = await this.lockProfile(trx, update.userId);
      if (balance === undefined) return undefined;
      const existing = await trx
        .selectFrom("billing_subscriptions")
        .select(["event_created", "status", "plan"])
        .where("stripe_subscription_id", "=", update.subscriptionId)
        .forUpdate()
        .executeTakeFirst();
      const ended = (status: string) => status === "canceled" || status === "incomplete_expired";
      if (existing && (ended(existing.status) || Number(existing.event_created) > update.eventCreated)) return undefined;
      const values = {
        user_id: update.userId,
        plan: update.plan,
        status: update.status,
        current_period_end: update.currentPeriodEnd ?? null,
        cancel_at_period_end: update.cancelAtPeriodEnd,
        event_created: update.eventCreated,
        updated_at: new Date(),
      };
      await trx
        .insertInto("billing_subscriptions")
        .values({ stripe_subscription_id: update.subscriptionId, ...values })
        .onConflict((conflict) => conflict.column("stripe_subscription_id").doUpdateSet(values))
        .execute();
      const live = (LIVE_SUBSCRIPTION_STATUSES as readonly string[]).includes(update.status);
      let expired = 0;
      if (!live && existing && (LIVE_SUBSCRIPTION_STATUSES as readonly string[]).includes(existing.status)) {
        expired = await this.expireAllowance(trx, update.userId, balance, `${update.subscriptionId}:${update.status}`);
      }
      const plan = await this.livePlan(trx, update.userId);
      await trx.updateTable("profiles").set({ plan, updated_at: new Date() }).where("user_id", "=", update.userId).execute();
      return { plan, expired };
    });
  }

  /**
   * A paid subscription invoice. `renew` (a new period): what is left of the
   * last period's allowance expires and the new one is granted; `top_up` (an
   * upgrade within the period): the difference to the new plan's allowance is
   * granted. Once per invoice. Returns whether this call granted.
   */
  async grantAllowance(input: {
    userId: string;
    invoiceId: string;
    subscriptionId: string;
    plan: string;
    credits: number;
    mode: "renew" | "top_up";
    amount: number;
    currency: string;
    paymentIntentId: string | undefined;
    periodEnd: Date | undefined;
  }): Promise<{ granted: number; expired: number } | undefined> {
    return this.db.transaction().execute(async (trx) => {
      const balance = await this.lockProfile(trx, input.userId);
      if (balance === undefined) return undefined;
      const purchase = await trx
        .insertInto("billing_purchases")
        .values({
          user_id: input.userId,
          kind: "plan",
          plan: input.plan,
          credits: input.credits,
          amount: input.amount,
          currency: input.currency,
          stripe_ref: input.invoiceId,
          stripe_payment_intent: input.paymentIntentId ?? null,
          period_end: input.periodEnd ?? null,
        })
        .onConflict((conflict) => conflict.doNothing())
        .returning("id")
        .executeTakeFirst();
      if (!purchase || (await this.granted(trx, input.invoiceId, "plan_allowance"))) return undefined;
      const current = await this.allowanceRow(trx, input.userId);
      let expired = 0;
      let grant = input.credits;
      if (input.mode === "renew") {
        expired = await this.expireAllowance(trx, input.userId, balance, input.invoiceId);
      } else {
        grant = Math.max(0, input.credits - current.credits);
      }
      if (grant > 0) {
        await this.profiles.changeCredits(trx, {
          userId: input.userId,
          delta: grant,
          reason: "plan_allowance",
          stripeRef: input.invoiceId,
          note: `${input.plan} plan`,
        });
      }
      const grantRow =
        input.mode === "renew"
          ? await trx
              .selectFrom("credit_ledger")
              .select(sql<string>`max(id)`.as("id"))
              .where("user_id", "=", input.userId)
              .executeTakeFirstOrThrow()
          : undefined;
      await this.saveAllowance(trx, input.userId, {
        credits: input.mode === "renew" ? input.credits : Math.max(current.credits, input.credits),
        // The period's spending is counted from the grant on (a top-up keeps the period's start).
        sinceLedgerId: grantRow ? grantRow.id : current.sinceLedgerId,
      });
      return { granted: grant, expired };
    });
  }

  /** Whether a purchase was paid with this payment intent. */
  async hasPaymentIntent(paymentIntentId: string): Promise<boolean> {
    const row = await this.db
      .selectFrom("billing_purchases")
      .select("id")
      .where("stripe_payment_intent", "=", paymentIntentId)
      .executeTakeFirst();
    return row !== undefined;
  }

  /** Records the payment intent that paid a plan's invoice (Stripe's invoice events do not always carry it). */
  async linkPaymentIntent(invoiceId: string, paymentIntentId: string): Promise<boolean> {
    const result = await this.db
      .updateTable("billing_purchases")
      .set({ stripe_payment_intent: paymentIntentId })
      .where("stripe_ref", "=", invoiceId)
      .where("stripe_payment_intent", "is", null)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /**
   * Takes back a refunded or disputed purchase's credits, what is unspent of
   * them: `owed` credits in all (for a refund, the refunded share of the
   * purchase) less what earlier claw-backs took. Unspent means: of a plan
   * period, what is left of its allowance while the period lasts (none after);
   * of a pack, what the balance holds beside the allowance (jobs spend the
   * allowance first). The balance never goes negative; spent credits are not
   * taken back. Once per `ref` (the refund's charge and cumulative amount, the
   * dispute).
   */
  async clawBack(input: {
    paymentIntentId: string;
    reason: "refund_clawback" | "dispute_clawback";
    ref: string;
    /** The refunded share (0..1) for a refund; 1 for a dispute. */
    share: number;
    amountRefunded?: number;
  }): Promise<{ userId: string; taken: number; forgiven: number } | undefined> {
    return this.db.transaction().execute(async (trx) => {
      const found = await trx
        .selectFrom("billing_purchases")
        .select(["id", "user_id"])
        .where("stripe_payment_intent", "=", input.paymentIntentId)
        .executeTakeFirst();
      if (!found) return undefined;
      // The profile first, as every grant does (one lock order, no deadlock), then the purchase.
      const balance = await this.lockProfile(trx, found.user_id);
      if (balance === undefined) return undefined;
      const purchase = await trx
        .selectFrom("billing_purchases")
        .select(["kind", "credits", "credits_clawed_back", "period_end"])
        .where("id", "=", found.id)
        .forUpdate()
        .executeTakeFirstOrThrow();
      if (await this.granted(trx, input.ref, input.reason)) return { userId: found.user_id, taken: 0, forgiven: 0 };
      const owed = Math.min(purchase.credits, Math.round(purchase.credits * Math.min(1, Math.max(0, input.share))));
      const due = Math.max(0, owed - purchase.credits_clawed_back);
      const allowanceLeft = await this.allowanceLeftIn(trx, found.user_id, balance);
      const current = purchase.period_end !== null && purchase.period_end.getTime() > Date.now();
      const unspent = purchase.kind === "plan" ? (current ? allowanceLeft : 0) : balance - allowanceLeft;
      const taken = Math.max(0, Math.min(due, unspent, balance));
      if (taken > 0) {
        await this.profiles.changeCredits(trx, {
          userId: found.user_id,
          delta: -taken,
          reason: input.reason,
          stripeRef: input.ref,
        });
        if (purchase.kind === "plan") {
          // What was taken back is no longer allowance to spend.
          const allowance = await this.allowanceRow(trx, found.user_id);
          await this.saveAllowance(trx, found.user_id, { ...allowance, credits: Math.max(0, allowance.credits - taken) });
        }
      }
      await trx
        .updateTable("billing_purchases")
        .set((eb) => ({
          credits_clawed_back: eb("credits_clawed_back", "+", due),
          ...(input.amountRefunded !== undefined ? { amount_refunded: input.amountRefunded } : {}),
          ...(input.reason === "dispute_clawback" ? { disputed: true } : {}),
        }))
        .where("id", "=", found.id)
        .execute();
      return { userId: found.user_id, taken, forgiven: due - taken };
    });
  }

  /** Locks the account's profile row for the transaction; its balance, or undefined without a profile. */
  private async lockProfile(trx: Trx, userId: string): Promise<number | undefined> {
    const row = await trx.selectFrom("profiles").select("credits").where("user_id", "=", userId).forUpdate().executeTakeFirst();
    return row?.credits;
  }

  private async markVerified(executor: Kysely<Database> | Trx, userId: string): Promise<void> {
    await executor
      .updateTable("user")
      .set({ emailVerified: true, updatedAt: new Date() })
      .where("id", "=", userId)
      .where("emailVerified", "=", false)
      .execute();
  }

  private async granted(
    trx: Trx,
    ref: string,
    reason: "pack_purchase" | "plan_allowance" | "refund_clawback" | "dispute_clawback",
  ) {
    const row = await trx
      .selectFrom("credit_ledger")
      .select("id")
      .where("stripe_ref", "=", ref)
      .where("reason", "=", reason)
      .executeTakeFirst();
    return row !== undefined;
  }

  private async livePlan(trx: Trx, userId: string): Promise<string> {
    const live = await trx
      .selectFrom("billing_subscriptions")
      .select("plan")
      .where("user_id", "=", userId)
      .where("status", "in", LIVE_SUBSCRIPTION_STATUSES)
      .orderBy("updated_at", "desc")
      .executeTakeFirst();
    return live?.plan ?? "free";
  }

  /** The current allowance: its credits and the ledger row its period's spending is counted after. */
  private async allowanceRow(trx: Trx, userId: string): Promise<{ credits: number; sinceLedgerId: string }> {
    const row = await trx
      .selectFrom("profiles")
      .select(["allowance_credits", "allowance_since_ledger_id"])
      .where("user_id", "=", userId)
      .executeTakeFirst();
    return { credits: row?.allowance_credits ?? 0, sinceLedgerId: row?.allowance_since_ledger_id ?? "0" };
  }

  private async saveAllowance(trx: Trx, userId: string, allowance: { credits: number; sinceLedgerId: string }): Promise<void> {
    await trx
      .updateTable("profiles")
      .set({ allowance_credits: allowance.credits, allowance_since_ledger_id: allowance.sinceLedgerId })
      .where("user_id", "=", userId)
      .execute();
  }

  /**
   * Jobs spend the allowance before anything else (it expires; bought and
   * granted credits do not): what is left of it is the allowance less the
   * jobs charged since it was granted (refunds given back), at most the balance.
   */
  private async allowanceLeftIn(trx: Trx, userId: string, balance: number): Promise<number> {
    const allowance = await this.allowanceRow(trx, userId);
    if (allowance.credits === 0) return 0;
    const spent = await trx
      .selectFrom("credit_ledger")
      .select(sql<string>`coalesce(-sum(delta), 0)`.as("spent"))
      .where("user_id", "=", userId)
      .where("id", ">", allowance.sinceLedgerId)
      .where("reason", "in", ["job_debit", "job_refund"])
      .executeTakeFirstOrThrow();
    return Math.max(0, Math.min(balance, allowance.credits - Number(spent.spent)));
  }

  /** Ends the current allowance: what is left of it leaves the balance (once per `ref`). Returns the credits expired. */
  private async expireAllowance(trx: Trx, userId: string, balance: number, ref: string): Promise<number> {
    const left = await this.allowanceLeftIn(trx, userId, balance);
    const current = await this.allowanceRow(trx, userId);
    if (left > 0 && !(await this.grantedExpiry(trx, ref))) {
      await this.profiles.changeCredits(trx, { userId, delta: -left, reason: "plan_allowance_expiry", stripeRef: ref });
    }
    await this.saveAllowance(trx, userId, { credits: 0, sinceLedgerId: current.sinceLedgerId });
    return left;
  }

  private async grantedExpiry(trx: Trx, ref: string): Promise<boolean> {
    const row = await trx
      .selectFrom("credit_ledger")
      .select("id")
      .where("stripe_ref", "=", ref)
      .where("reason", "=", "plan_allowance_expiry")
      .executeTakeFirst();
    return row !== undefined;
  }
}
