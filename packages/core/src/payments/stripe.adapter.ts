import Stripe from "stripe";
import { isPaidPlanName, type PaidPlanName, type PaymentsConfig } from "../config/env";
import {
  type CheckoutInput,
  type PaymentEvent,
  type PaymentsPort,
  PaymentsProviderError,
  type PriceInfo,
  type SubscriptionState,
  WebhookSignatureError,
} from "./payments.port";

type StripeSettings = Extract<PaymentsConfig, { provider: "stripe" }>;

/** How old a signed event may be (Stripe's own default): a replay of a captured delivery is refused after it. */
const SIGNATURE_TOLERANCE_SECONDS = 300;

function idOf(value: string | { id: string } | null | undefined): string | undefined {
  if (!value) return undefined;
  return typeof value === "string" ? value : value.id;
}

function dateOf(seconds: number | null | undefined): Date | undefined {
  return typeof seconds === "number" ? new Date(seconds * 1000) : undefined;
}

/**
 * The payments port on Stripe, with the official SDK. Reads the shapes of the
 * API version the SDK pins (2026-10-28): a subscription's period and price are
 * on its items, an invoice's subscription on `parent.subscription_details`.
 */
export class StripePayments implements PaymentsPort {
  private readonly stripe: Stripe;
  private readonly planByPrice: Map<string, PaidPlanName>;

  constructor(private readonly settings: StripeSettings) {
    this.stripe = new Stripe(settings.secretKey, {
      // Tests (and a proxy) point the SDK elsewhere; Stripe's own host otherwise.
      ...(settings.apiBase
        ? { protocol: settings.apiBase.protocol, host: settings.apiBase.host, port: settings.apiBase.port }
        : {}),
      maxNetworkRetries: 2,
      timeout: 20_000,
      telemetry: false,
      appInfo: { name: "Retouch" },
    });
    this.planByPrice = new Map(
      Object.entries(settings.planPrices).map(([plan, priceId]) => [priceId as string, plan as PaidPlanName]),
    );
  }

  async createCustomer(input: { userId: string; email: string; name: string }): Promise<{ customerId: string }> {
    const customer = await this.call("create a customer", () =>
      this.stripe.customers.create(
        { email: input.email, name: input.name, metadata: { retouch_user_id: input.userId } },
        // Two first checkouts at once make one customer: Stripe answers the second with the first's.
        { idempotencyKey: `retouch-customer-${input.userId}` },
      ),
    );
    return { customerId: customer.id };
  }

  async createCheckout(input: CheckoutInput): Promise<{ url: string; sessionId: string }> {
    const metadata: Record<string, string> =
      input.item.kind === "pack"
        ? { retouch_user_id: input.userId, kind: "pack", credits: String(input.item.credits) }
        : { retouch_user_id: input.userId, kind: "plan", plan: input.item.plan };
    const params: Stripe.Checkout.SessionCreateParams = {
      customer: input.customerId,
      client_reference_id: input.userId,
      line_items: [{ price: input.item.priceId, quantity: 1 }],
      success_url: input.successUrl,
      cancel_url: input.cancelUrl,
      metadata,
      ...(input.item.kind === "pack"
        ? { mode: "payment", payment_intent_data: { metadata } }
        : { mode: "subscription", subscription_data: { metadata } }),
    };
    const session = await this.call("create a checkout session", () => this.stripe.checkout.sessions.create(params));
    if (!session.url) throw new PaymentsProviderError("Stripe created a checkout session without a URL");
    return { url: session.url, sessionId: session.id };
  }

  async createPortal(input: { customerId: string; returnUrl: string }): Promise<{ url: string }> {
    const session = await this.call("create a billing portal session", () =>
      this.stripe.billingPortal.sessions.create({ customer: input.customerId, return_url: input.returnUrl }),
    );
    return { url: session.url };
  }

  async invoiceOfPayment(paymentIntentId: string): Promise<string | undefined> {
    const page = await this.call("find the invoice of a payment", () =>
      this.stripe.invoicePayments.list({ payment: { type: "payment_intent", payment_intent: paymentIntentId }, limit: 1 }),
    );
    return idOf(page.data[0]?.invoice as string | { id: string } | undefined);
  }

  async readPrices(priceIds: string[]): Promise<Map<string, PriceInfo>> {
    const prices = new Map<string, PriceInfo>();
    await Promise.all(
      priceIds.map(async (priceId) => {
        // Prices only decorate GET /api/billing: a slow Stripe must not hold that page up (no retry, 5 s).
        const price = await this.stripe.prices
          .retrieve(priceId, {}, { timeout: 5_000, maxNetworkRetries: 0 })
          .catch(() => undefined);
        if (price) {
          prices.set(priceId, {
            amount: price.unit_amount,
            currency: price.currency,
            interval: price.recurring?.interval ?? null,
          });
        }
      }),
    );
    return prices;
  }

  parseWebhook(payload: string, signature: string | undefined): PaymentEvent {
    if (!signature) throw new WebhookSignatureError("The Stripe-Signature header is missing.");
    let event: Stripe.Event;
    try {
      event = this.stripe.webhooks.constructEvent(payload, signature, this.settings.webhookSecret, SIGNATURE_TOLERANCE_SECONDS);
    } catch (error) {
      // The SDK's message says which check failed (no signature matches, timestamp outside the tolerance); it holds no secret.
      throw new WebhookSignatureError(error instanceof Error ? error.message : String(error));
    }
    return this.read(event);
  }

  private read(event: Stripe.Event): PaymentEvent {
    const base = { id: event.id, created: event.created };
    switch (event.type) {
      case "checkout.session.completed":
      case "checkout.session.async_payment_succeeded": {
        const session = event.data.object;
        const credits = Number(session.metadata?.credits);
        const plan = session.metadata?.plan;
        return {
          ...base,
          type: "checkout_completed",
          sessionId: session.id,
          customerId: idOf(session.customer),
          userId: session.client_reference_id ?? session.metadata?.retouch_user_id ?? undefined,
          // "no_payment_required": a 100 % coupon is paid too.
          paid: session.payment_status !== "unpaid",
          item:
            session.mode === "subscription"
              ? { kind: "plan", plan: this.planNamed(plan), subscriptionId: idOf(session.subscription) }
              : { kind: "pack", credits: Number.isInteger(credits) && credits > 0 ? credits : 0 },
          paymentIntentId: idOf(session.payment_intent),
          amount: session.amount_total,
          currency: session.currency,
        };
      }
      case "customer.subscription.created":
      case "customer.subscription.updated":
      case "customer.subscription.deleted":
        return {
          ...base,
          type: "subscription_changed",
          subscription: this.subscriptionState(event.data.object),
          deleted: event.type === "customer.subscription.deleted",
        };
      case "invoice.paid": {
        const invoice = event.data.object;
        const line = invoice.lines?.data?.find((item) => item.pricing?.price_details?.price) ?? invoice.lines?.data?.[0];
        const priceId = idOf(line?.pricing?.price_details?.price);
        const payment = invoice.payments?.data?.find((item) => item.payment?.payment_intent)?.payment;
        return {
          ...base,
          type: "invoice_paid",
          invoiceId: invoice.id as string,
          customerId: idOf(invoice.customer),
          subscriptionId: idOf(invoice.parent?.subscription_details?.subscription),
          billingReason: invoice.billing_reason,
          plan: priceId ? this.planByPrice.get(priceId) : undefined,
          periodEnd: dateOf(line?.period?.end),
          paymentIntentId: idOf(payment?.payment_intent),
          amount: invoice.amount_paid,
          currency: invoice.currency,
        };
      }
      case "invoice.payment_failed": {
        const invoice = event.data.object;
        return {
          ...base,
          type: "invoice_payment_failed",
          invoiceId: invoice.id as string,
          customerId: idOf(invoice.customer),
          subscriptionId: idOf(invoice.parent?.subscription_details?.subscription),
        };
      }
      case "charge.refunded": {
        const charge = event.data.object;
        return {
          ...base,
          type: "charge_refunded",
          chargeId: charge.id,
          paymentIntentId: idOf(charge.payment_intent),
          customerId: idOf(charge.customer),
          amount: charge.amount,
          amountRefunded: charge.amount_refunded,
        };
      }
      case "charge.dispute.created": {
        const dispute = event.data.object;
        return {
          ...base,
          type: "dispute_opened",
          disputeId: dispute.id,
          chargeId: idOf(dispute.charge) as string,
          paymentIntentId: idOf(dispute.payment_intent),
        };
      }
      default:
        return { ...base, type: "ignored", providerType: event.type };
    }
  }

  private subscriptionState(subscription: Stripe.Subscription): SubscriptionState {
    const item = subscription.items?.data?.[0];
    const priceId = item?.price?.id;
    return {
      subscriptionId: subscription.id,
      customerId: idOf(subscription.customer) as string,
      // The price decides (a plan changed in the portal keeps the checkout's metadata); the metadata is the fallback.
      plan: (priceId ? this.planByPrice.get(priceId) : undefined) ?? this.planNamed(subscription.metadata?.plan),
      status: subscription.status,
      currentPeriodEnd: dateOf(item?.current_period_end),
      cancelAtPeriodEnd: subscription.cancel_at_period_end,
    };
  }

  private planNamed(name: string | undefined): PaidPlanName | undefined {
    return isPaidPlanName(name) ? name : undefined;
  }

  private async call<T>(what: string, request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (error) {
      const detail = error instanceof Stripe.errors.StripeError ? `${error.type}: ${error.message}` : String(error);
      throw new PaymentsProviderError(`Stripe could not ${what} (${detail})`, { cause: error });
    }
  }
}
