import { type Config, isPaidPlanName, type PaidPlanName } from "../config/env";
import { PLAN_LIMITS, type PlanName } from "../config/plans";
import { RetouchError } from "../errors/retouch-error";
import type { Logger } from "../lib/logger";
import {
  type PaymentEvent,
  type PaymentsPort,
  PaymentsProviderError,
  type PriceInfo,
  WebhookSignatureError,
} from "../payments/payments.port";
import { type BillingStore, LIVE_SUBSCRIPTION_STATUSES } from "../stores/billing.store";
import type { Principal } from "./principal";
import type { ProfilesService } from "./profiles.service";

/** Prices change rarely; GET /api/billing should not ask Stripe each time. */
const PRICE_CACHE_MS = 10 * 60_000;

type CheckoutRequest = { credits?: number | undefined; plan?: PaidPlanName | undefined };

/**
 * Buying credits and plans (docs/billing.md): checkout and portal links from
 * the payment provider, and the provider's signed events turned into plans
 * and ledger grants (billing.store.ts keeps them exactly-once).
 */
export class BillingService {
  private prices: { at: number; byId: Map<string, PriceInfo> } | undefined;

  constructor(
    private readonly deps: {
      /** The provider's adapter, loaded on first use (the SDK is not loaded by a server that takes no payments); undefined with RETOUCH_PAYMENTS=none. */
      payments: (() => Promise<PaymentsPort>) | undefined;
      store: BillingStore;
      profiles: ProfilesService;
      config: Pick<Config, "payments" | "publicBaseUrl">;
      logger: Logger;
    },
  ) {}

  async state(principal: Principal) {
    const { settings } = this.configured();
    const [profile, subscription, purchases, allowanceLeft, prices] = await Promise.all([
      this.deps.profiles.get(principal.userId),
      this.deps.store.subscriptionOf(principal.userId),
      this.deps.store.purchases(principal.userId),
      this.deps.store.allowanceLeft(principal.userId),
      this.readPrices(),
    ]);
    const plan: PlanName =
      profile.plan === "starter" || profile.plan === "core" || profile.plan === "pro" ? profile.plan : "free";
    const limitsOf = (name: PlanName) => ({
      per_minute: PLAN_LIMITS[name].submissionsPerMinute,
      concurrent: PLAN_LIMITS[name].concurrentJobs,
    });
    const priceOf = (priceId: string) => {
      const price = prices.get(priceId);
      return { amount: price?.amount ?? null, currency: price?.currency ?? null, interval: price?.interval ?? null };
    };
    return {
      plan,
      subscription: subscription
        ? {
            plan: subscription.plan as PaidPlanName,
            status: subscription.status,
            renews_at: subscription.currentPeriodEnd?.toISOString() ?? null,
            cancel_at_period_end: subscription.cancelAtPeriodEnd,
          }
        : null,
      credits_remaining: profile.credits,
      limits: limitsOf(plan),
      // Only a live subscription has an allowance (a plan an operator set grants none).
      allowance:
        subscription &&
        (LIVE_SUBSCRIPTION_STATUSES as readonly string[]).includes(subscription.status) &&
        isPaidPlanName(subscription.plan)
          ? { monthly: settings.planMonthlyCredits[subscription.plan], remaining: allowanceLeft }
          : null,
      packs: settings.creditPacks.map((pack) => {
        const { amount, currency } = priceOf(pack.priceId);
        return { credits: pack.credits, amount, currency };
      }),
      plans: (Object.entries(settings.planPrices) as Array<[PaidPlanName, string]>).map(([name, priceId]) => ({
        plan: name,
        monthly_credits: settings.planMonthlyCredits[name],
        limits: limitsOf(name),
        ...priceOf(priceId),
      })),
      purchases: purchases.map((purchase) => ({
        id: purchase.id,
        kind: purchase.kind,
        plan: (purchase.plan as PaidPlanName | null) ?? null,
        credits: purchase.credits,
        amount: purchase.amount,
        currency: purchase.currency,
        status: purchase.disputed
          ? ("disputed" as const)
          : purchase.amountRefunded > 0 && purchase.amount !== null && purchase.amountRefunded >= purchase.amount
            ? ("refunded" as const)
            : purchase.amountRefunded > 0
              ? ("partially_refunded" as const)
              : ("paid" as const),
        created_at: purchase.createdAt.toISOString(),
      })),
    };
  }

  /** A checkout page for a pack or a plan. An unverified account may pay (paying verifies it). */
  async checkout(principal: Principal, request: CheckoutRequest): Promise<{ url: string }> {
    const { port, settings } = this.configured();
    const payments = await port();
    let item: { kind: "pack"; credits: number; priceId: string } | { kind: "plan"; plan: PaidPlanName; priceId: string };
    if (request.plan !== undefined) {
      const priceId = settings.planPrices[request.plan];
      if (!priceId) {
        const onSale = Object.keys(settings.planPrices);
        throw new RetouchError(
          "invalid_request",
          `The ${request.plan} plan is not on sale here${onSale.length > 0 ? `; choose one of: ${onSale.join(", ")}` : "; buy a credit pack instead"}.`,
          { issues: [{ path: "plan", message: `is not on sale (${onSale.join(", ") || "no plans are"})` }] },
        );
      }
      const subscription = await this.deps.store.subscriptionOf(principal.userId);
      if (subscription && (LIVE_SUBSCRIPTION_STATUSES as readonly string[]).includes(subscription.status)) {
        throw new RetouchError(
          "already_subscribed",
          `This account already has the ${subscription.plan} plan; change or cancel it in the customer portal (POST /api/billing/portal, or the billing page).`,
        );
      }
      item = { kind: "plan", plan: request.plan, priceId };
    } else {
      const pack = settings.creditPacks.find((candidate) => candidate.credits === request.credits);
      if (!pack) {
        const onSale = settings.creditPacks.map((candidate) => candidate.credits);
        throw new RetouchError(
          "invalid_request",
          `There is no ${request.credits}-credit pack${onSale.length > 0 ? `; packs on sale: ${onSale.join(", ")} credits` : "; subscribe to a plan instead"}.`,
          { issues: [{ path: "credits", message: `no such pack (${onSale.join(", ") || "none on sale"})` }] },
        );
      }
      item = { kind: "pack", credits: pack.credits, priceId: pack.priceId };
    }
    const customerId = await this.customerFor(principal);
    const billingPage = `${this.deps.config.publicBaseUrl}/billing`;
    const session = await this.upstream(() =>
      payments.createCheckout({
        userId: principal.userId,
        customerId,
        item,
        successUrl: `${billingPage}?checkout=success&session_id={CHECKOUT_SESSION_ID}`,
        cancelUrl: `${billingPage}?checkout=canceled`,
      }),
    );
    this.deps.logger.info(
      { userId: principal.userId, item: item.kind, sessionId: session.sessionId },
      "checkout session created",
    );
    return { url: session.url };
  }

  async portal(principal: Principal): Promise<{ url: string }> {
    const payments = await this.configured().port();
    const customerId = await this.customerFor(principal);
    return this.upstream(() => payments.createPortal({ customerId, returnUrl: `${this.deps.config.publicBaseUrl}/billing` }));
  }

  /**
   * POST /webhooks/stripe: verifies the event over the raw body and applies
   * it. A forged or stale signature changes nothing (400); an event about a
   * customer this service does not know is acknowledged and ignored (the
   * Stripe account may serve other apps too).
   */
  async handleWebhook(payload: string, signature: string | undefined): Promise<{ received: true }> {
    const payments = await this.configured().port();
    let event: PaymentEvent;
    try {
      event = payments.parseWebhook(payload, signature);
    } catch (error) {
      if (error instanceof WebhookSignatureError) {
        throw new RetouchError("invalid_request", `The Stripe event's signature does not verify: ${error.message}`);
      }
      throw error;
    }
    await this.apply(event);
    return { received: true };
  }

  private async apply(event: PaymentEvent): Promise<void> {
    const log = this.deps.logger;
    const { settings } = this.configured();
    switch (event.type) {
      case "checkout_completed": {
        const userId = await this.userFor(event.customerId, event.userId);
        if (!userId) return this.unknown(event, event.customerId);
        if (!event.paid) {
          log.info({ eventId: event.id, userId }, "checkout completed with its payment still pending; nothing granted yet");
          return;
        }
        if (event.item.kind === "pack") {
          if (event.item.credits <= 0) {
            log.warn({ eventId: event.id, sessionId: event.sessionId }, "paid checkout names no credits; nothing granted");
            return;
          }
          const result = await this.deps.store.grantPack({
            userId,
            sessionId: event.sessionId,
            credits: event.item.credits,
            amount: event.amount,
            currency: event.currency,
            paymentIntentId: event.paymentIntentId,
          });
          log.info({ eventId: event.id, userId, credits: event.item.credits, granted: result.granted }, "credit pack paid");
          return;
        }
        await this.deps.store.verifyEmail(userId);
        if (event.item.plan && event.item.subscriptionId) {
          // The plan applies at once; the subscription's own events then keep it up to date (an older one never overrides).
          const result = await this.deps.store.applySubscription({
            userId,
            subscriptionId: event.item.subscriptionId,
            plan: event.item.plan,
            status: "active",
            currentPeriodEnd: undefined,
            cancelAtPeriodEnd: false,
            eventCreated: 0,
          });
          log.info({ eventId: event.id, userId, plan: result?.plan }, "plan checkout paid");
        }
        return;
      }
      case "subscription_changed": {
        const { subscription } = event;
        const userId = await this.deps.store.userOfCustomer(subscription.customerId);
        if (!userId) return this.unknown(event, subscription.customerId);
        if (!subscription.plan) {
          log.warn(
            { eventId: event.id, subscriptionId: subscription.subscriptionId },
            "subscription's price is none of RETOUCH_PLAN_PRICES; its plan is left as it was",
          );
          return;
        }
        const result = await this.deps.store.applySubscription({
          userId,
          subscriptionId: subscription.subscriptionId,
          plan: subscription.plan,
          // A deleted subscription's own status says canceled; say it even if a test or a replay does not.
          status: event.deleted ? "canceled" : subscription.status,
          currentPeriodEnd: subscription.currentPeriodEnd,
          cancelAtPeriodEnd: subscription.cancelAtPeriodEnd,
          eventCreated: event.created,
        });
        log.info(
          {
            eventId: event.id,
            userId,
            status: subscription.status,
            plan: result?.plan,
            expired: result?.expired,
            applied: !!result,
          },
          "subscription changed",
        );
        return;
      }
      case "invoice_paid": {
        if (!event.subscriptionId) return;
        const userId = event.customerId ? await this.deps.store.userOfCustomer(event.customerId) : undefined;
        if (!userId) return this.unknown(event, event.customerId);
        const plan = event.plan ?? (await this.deps.store.subscriptionOf(userId))?.plan;
        if (!plan || plan === "free" || !(plan in settings.planMonthlyCredits)) {
          log.warn({ eventId: event.id, invoiceId: event.invoiceId }, "paid invoice of no plan on sale; no allowance granted");
          return;
        }
        const paidPlan = plan as PaidPlanName;
        const mode =
          event.billingReason === "subscription_create" || event.billingReason === "subscription_cycle"
            ? "renew"
            : event.billingReason === "subscription_update"
              ? "top_up"
              : undefined;
        if (!mode) {
          log.info({ eventId: event.id, billingReason: event.billingReason }, "paid invoice that starts no period; no allowance");
          return;
        }
        // The invoice may come before the subscription's own events: its plan applies at once (an older event never overrides).
        await this.deps.store.applySubscription({
          userId,
          subscriptionId: event.subscriptionId,
          plan: paidPlan,
          status: "active",
          currentPeriodEnd: event.periodEnd,
          cancelAtPeriodEnd: false,
          eventCreated: 0,
        });
        const result = await this.deps.store.grantAllowance({
          userId,
          invoiceId: event.invoiceId,
          subscriptionId: event.subscriptionId,
          plan: paidPlan,
          credits: settings.planMonthlyCredits[paidPlan],
          mode,
          amount: event.amount,
          currency: event.currency,
          paymentIntentId: event.paymentIntentId,
          periodEnd: event.periodEnd,
        });
        log.info({ eventId: event.id, userId, plan: paidPlan, mode, ...result, applied: !!result }, "plan allowance");
        return;
      }
      case "invoice_payment_failed":
        // Stripe retries the payment (past_due keeps the plan) and says when it gives up (deleted or unpaid).
        log.info(
          { eventId: event.id, invoiceId: event.invoiceId },
          "a renewal payment failed; the plan is kept while Stripe retries",
        );
        return;
      case "charge_refunded": {
        if (!event.paymentIntentId || event.amount <= 0) return this.unknown(event, event.customerId);
        await this.findInvoiceOf(event.paymentIntentId);
        const result = await this.deps.store.clawBack({
          paymentIntentId: event.paymentIntentId,
          reason: "refund_clawback",
          ref: `${event.chargeId}:${event.amountRefunded}`,
          share: event.amountRefunded / event.amount,
          amountRefunded: event.amountRefunded,
        });
        if (!result) return this.unknown(event, event.customerId);
        log.info({ eventId: event.id, ...result }, "refund: unspent credits taken back");
        return;
      }
      case "dispute_opened": {
        if (!event.paymentIntentId) return this.unknown(event, undefined);
        await this.findInvoiceOf(event.paymentIntentId);
        const result = await this.deps.store.clawBack({
          paymentIntentId: event.paymentIntentId,
          reason: "dispute_clawback",
          ref: event.disputeId,
          share: 1,
        });
        if (!result) return this.unknown(event, undefined);
        log.warn({ eventId: event.id, ...result }, "dispute opened: unspent credits taken back");
        return;
      }
      case "ignored":
        log.debug({ eventId: event.id, type: event.providerType }, "Stripe event not used");
        return;
    }
  }

  /**
   * A pack's payment intent is known from its checkout; a plan period's is
   * not in Stripe's invoice events by default: for a payment no purchase
   * names, ask Stripe which invoice it paid and link it.
   */
  private async findInvoiceOf(paymentIntentId: string): Promise<void> {
    if (await this.deps.store.hasPaymentIntent(paymentIntentId)) return;
    const payments = await this.configured().port();
    const invoiceId = await this.upstream(() => payments.invoiceOfPayment(paymentIntentId));
    if (invoiceId) await this.deps.store.linkPaymentIntent(invoiceId, paymentIntentId);
  }

  private unknown(event: PaymentEvent, customerId: string | undefined): void {
    this.deps.logger.info(
      { eventId: event.id, type: event.type, customerId },
      "Stripe event about nothing of this service; ignored",
    );
  }

  /** The account of a customer; for a checkout, the client_reference_id we set, if that account exists. */
  private async userFor(customerId: string | undefined, userId: string | undefined): Promise<string | undefined> {
    const byCustomer = customerId ? await this.deps.store.userOfCustomer(customerId) : undefined;
    if (byCustomer) return byCustomer;
    return userId && (await this.deps.store.userExists(userId)) ? userId : undefined;
  }

  private async customerFor(principal: Principal): Promise<string> {
    const existing = await this.deps.store.customerOf(principal.userId);
    if (existing) return existing;
    const payments = await this.configured().port();
    const { customerId } = await this.upstream(() =>
      payments.createCustomer({ userId: principal.userId, email: principal.email, name: principal.name }),
    );
    return this.deps.store.saveCustomer(principal.userId, customerId);
  }

  private async readPrices(): Promise<Map<string, PriceInfo>> {
    const { port, settings } = this.configured();
    const payments = await port();
    if (this.prices && Date.now() - this.prices.at < PRICE_CACHE_MS) return this.prices.byId;
    const ids = [...settings.creditPacks.map((pack) => pack.priceId), ...Object.values(settings.planPrices)];
    const byId = await payments.readPrices(ids);
    // A price Stripe did not answer is asked again next time rather than cached as unknown.
    if (byId.size === ids.length) this.prices = { at: Date.now(), byId };
    return byId;
  }

  private configured() {
    const settings = this.deps.config.payments;
    if (settings.provider === "none" || !this.deps.payments) throw new RetouchError("payments_not_configured");
    return { settings, port: this.deps.payments };
  }

  private async upstream<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      if (error instanceof PaymentsProviderError) {
        this.deps.logger.error({ err: error }, "payment provider call failed");
        throw new RetouchError("upstream_error", "The payment provider did not answer; nothing was charged. Retry shortly.", {
          cause: error,
        });
      }
      throw error;
    }
  }
}
