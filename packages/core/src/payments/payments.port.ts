import type { PaidPlanName } from "../config/env";

/**
 * What the service needs of a payment provider. Stripe is the one adapter
 * (stripe.adapter.ts); another provider (Paddle, Lemon Squeezy) would be
 * another adapter of this port, and the billing service would not change.
 * The adapter speaks the provider's API; the service keeps the state.
 */
export interface PaymentsPort {
  /** The provider's customer for an account, created once (the id is then kept by the service). */
  createCustomer(input: { userId: string; email: string; name: string }): Promise<{ customerId: string }>;
  /** A hosted checkout page for one pack (a one-time payment) or one plan (a subscription). */
  createCheckout(input: CheckoutInput): Promise<{ url: string; sessionId: string }>;
  /** A hosted page where the customer changes card or plan, cancels, and reads invoices. */
  createPortal(input: { customerId: string; returnUrl: string }): Promise<{ url: string }>;
  /** The invoice a payment paid, if it paid one (a plan period's refund or dispute names only the payment). */
  invoiceOfPayment(paymentIntentId: string): Promise<string | undefined>;
  /** The price of each given price id, as the provider has it; a price it cannot read is left out. */
  readPrices(priceIds: string[]): Promise<Map<string, PriceInfo>>;
  /**
   * Verifies that `payload` (the raw body) was signed by the provider and is
   * fresh, and reads it as one of the events the service acts on. Throws
   * `WebhookSignatureError` when it does not verify; answers `ignored` for a
   * genuine event the service has no use for.
   */
  parseWebhook(payload: string, signature: string | undefined): PaymentEvent;
}

export interface CheckoutInput {
  userId: string;
  customerId: string;
  item: { kind: "pack"; credits: number; priceId: string } | { kind: "plan"; plan: PaidPlanName; priceId: string };
  successUrl: string;
  cancelUrl: string;
}

export interface PriceInfo {
  /** In the currency's smallest unit (cents). */
  amount: number | null;
  currency: string;
  /** For a recurring price: month, year, ... */
  interval: string | null;
}

/** A subscription as the provider last described it. */
export interface SubscriptionState {
  subscriptionId: string;
  customerId: string;
  /** Undefined when its price is not one of RETOUCH_PLAN_PRICES and its metadata names no plan. */
  plan: PaidPlanName | undefined;
  /** The provider's own word: active, trialing, past_due, unpaid, canceled, incomplete, incomplete_expired, paused. */
  status: string;
  currentPeriodEnd: Date | undefined;
  cancelAtPeriodEnd: boolean;
}

/** The events the billing service acts on, in the provider's terms but not its shapes. */
export type PaymentEvent = { id: string; created: number } & (
  | {
      type: "checkout_completed";
      sessionId: string;
      customerId: string | undefined;
      /** From the session's client_reference_id, which the service set. */
      userId: string | undefined;
      /** False for a checkout whose (delayed) payment has not arrived yet: only a paid one grants. */
      paid: boolean;
      item:
        | { kind: "pack"; credits: number }
        | { kind: "plan"; plan: PaidPlanName | undefined; subscriptionId: string | undefined };
      paymentIntentId: string | undefined;
      amount: number | null;
      currency: string | null;
    }
  | { type: "subscription_changed"; subscription: SubscriptionState; deleted: boolean }
  | {
      type: "invoice_paid";
      invoiceId: string;
      customerId: string | undefined;
      subscriptionId: string | undefined;
      /** subscription_create, subscription_cycle, subscription_update, ... */
      billingReason: string | null;
      /** The plan of the invoice's subscription line, by its price. */
      plan: PaidPlanName | undefined;
      periodEnd: Date | undefined;
      paymentIntentId: string | undefined;
      amount: number;
      currency: string;
    }
  | { type: "invoice_payment_failed"; invoiceId: string; customerId: string | undefined; subscriptionId: string | undefined }
  | {
      type: "charge_refunded";
      chargeId: string;
      paymentIntentId: string | undefined;
      customerId: string | undefined;
      amount: number;
      /** Everything refunded on the charge so far (Stripe's cumulative `amount_refunded`). */
      amountRefunded: number;
    }
  | { type: "dispute_opened"; disputeId: string; chargeId: string; paymentIntentId: string | undefined }
  | { type: "ignored"; providerType: string }
);

/** The payload is not signed by the provider (or the signature is stale): refuse it, change nothing. */
export class WebhookSignatureError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WebhookSignatureError";
  }
}

/** The provider refused or could not be reached. */
export class PaymentsProviderError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "PaymentsProviderError";
  }
}
