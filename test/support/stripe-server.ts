import { randomBytes } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import Stripe from "stripe";

/** The secrets a test app is configured with (test-mode shapes; they only ever meet this server). */
export const STRIPE_TEST_SECRET_KEY = "sk_test_retouchloopback";
export const STRIPE_TEST_WEBHOOK_SECRET = "whsec_retouchloopbacksecret";
export const STRIPE_API_VERSION = "2026-10-28.endive";

export interface StripeCall {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The form body as Stripe's bracket notation sends it, flattened: `line_items[0][price]` → value. */
  form: Record<string, string>;
}

export interface LoopbackPrice {
  id: string;
  unitAmount: number;
  currency: string;
  /** month for a plan's recurring price; undefined for a one-time (pack) price. */
  interval?: "month";
}

const id = (prefix: string) => `${prefix}_test_${randomBytes(12).toString("hex")}`;
const now = () => Math.floor(Date.now() / 1000);

/**
 * A loopback stand-in for api.stripe.com: node:http on 127.0.0.1 answering the
 * REST calls the service makes (customers, checkout sessions, billing portal
 * sessions, prices) with Stripe's documented object shapes for the API version
 * the SDK pins, and building the events Stripe would send, signed with the
 * SDK's own `generateTestHeaderString`. Only the official SDK talks to it (the
 * service's, through STRIPE_API_BASE).
 */
export class StripeLoopback {
  readonly calls: StripeCall[] = [];
  readonly customers = new Map<string, Record<string, unknown>>();
  readonly sessions = new Map<string, Record<string, unknown>>();
  private readonly idempotent = new Map<string, string>();
  /** The payment intent that paid each invoice built here (Stripe's invoice_payments). */
  private readonly invoicePayments = new Map<string, { invoice: string; amount: number; currency: string }>();
  private readonly prices = new Map<string, LoopbackPrice>();
  private server: Server | undefined;
  /** The SDK, only for its webhook helpers (signing); it makes no request. */
  private readonly sdk = new Stripe(STRIPE_TEST_SECRET_KEY);
  url = "";

  constructor(prices: LoopbackPrice[]) {
    for (const price of prices) this.prices.set(price.id, price);
  }

  async start(): Promise<this> {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        const url = new URL(req.url ?? "/", "http://stripe.invalid");
        // The SDK sends a GET's parameters in the query, a POST's in the form body.
        const form = Object.fromEntries(
          req.method === "GET" ? url.searchParams : new URLSearchParams(Buffer.concat(chunks).toString("utf8")),
        );
        const call: StripeCall = { method: req.method ?? "GET", path: url.pathname, headers: req.headers, form };
        this.calls.push(call);
        const [status, body] = this.answer(call);
        res.writeHead(status, {
          "Content-Type": "application/json",
          "Request-Id": id("req"),
          "Stripe-Version": STRIPE_API_VERSION,
        });
        res.end(JSON.stringify(body));
      });
    });
    this.server = server;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }

  /** The settings a test app needs to use this server. */
  env(extra: Record<string, string> = {}): Record<string, string> {
    return {
      RETOUCH_PAYMENTS: "stripe",
      STRIPE_SECRET_KEY: STRIPE_TEST_SECRET_KEY,
      STRIPE_WEBHOOK_SECRET: STRIPE_TEST_WEBHOOK_SECRET,
      STRIPE_API_BASE: this.url,
      ...extra,
    };
  }

  private answer(call: StripeCall): [number, unknown] {
    if (call.headers.authorization !== `Bearer ${STRIPE_TEST_SECRET_KEY}`) {
      return [401, { error: { type: "invalid_request_error", message: "Invalid API Key provided" } }];
    }
    const key = call.headers["idempotency-key"];
    if (call.method === "POST" && call.path === "/v1/customers") {
      const earlier = typeof key === "string" ? this.idempotent.get(key) : undefined;
      if (earlier) return [200, this.customers.get(earlier)];
      const customer = {
        id: id("cus"),
        object: "customer",
        email: call.form.email ?? null,
        name: call.form.name ?? null,
        metadata: pick(call.form, "metadata"),
        created: now(),
        livemode: false,
        balance: 0,
        currency: null,
        default_source: null,
        delinquent: false,
        description: null,
        invoice_prefix: randomBytes(4).toString("hex").toUpperCase(),
        invoice_settings: { custom_fields: null, default_payment_method: null, footer: null, rendering_options: null },
        phone: null,
        preferred_locales: [],
        shipping: null,
        tax_exempt: "none",
      };
      this.customers.set(customer.id, customer);
      if (typeof key === "string") this.idempotent.set(key, customer.id);
      return [200, customer];
    }
    if (call.method === "POST" && call.path === "/v1/checkout/sessions") {
      const price = this.prices.get(call.form["line_items[0][price]"] ?? "");
      if (!price)
        return [400, { error: { type: "invalid_request_error", message: "No such price", param: "line_items[0][price]" } }];
      const sessionId = id("cs");
      const session = {
        id: sessionId,
        object: "checkout.session",
        mode: call.form.mode,
        status: "open",
        payment_status: "unpaid",
        url: `https://checkout.stripe.com/c/pay/${sessionId}`,
        customer: call.form.customer ?? null,
        client_reference_id: call.form.client_reference_id ?? null,
        metadata: pick(call.form, "metadata"),
        amount_subtotal: price.unitAmount,
        amount_total: price.unitAmount,
        currency: price.currency,
        success_url: call.form.success_url,
        cancel_url: call.form.cancel_url ?? null,
        payment_intent: null,
        subscription: null,
        invoice: null,
        created: now(),
        expires_at: now() + 86_400,
        livemode: false,
        line_item_price: price.id,
      };
      this.sessions.set(sessionId, session);
      return [200, session];
    }
    if (call.method === "POST" && call.path === "/v1/billing_portal/sessions") {
      const portalId = id("bps");
      return [
        200,
        {
          id: portalId,
          object: "billing_portal.session",
          customer: call.form.customer,
          return_url: call.form.return_url ?? null,
          url: `https://billing.stripe.com/p/session/${portalId}`,
          created: now(),
          livemode: false,
          configuration: id("bpc"),
          flow: null,
          locale: null,
          on_behalf_of: null,
        },
      ];
    }
    if (call.method === "GET" && call.path === "/v1/invoice_payments") {
      const paymentIntent = call.form["payment[payment_intent]"] ?? "";
      const paid = this.invoicePayments.get(paymentIntent);
      const data = paid
        ? [
            {
              id: id("inpay"),
              object: "invoice_payment",
              amount_paid: paid.amount,
              amount_requested: paid.amount,
              created: now(),
              currency: paid.currency,
              invoice: paid.invoice,
              is_default: true,
              livemode: false,
              payment: { type: "payment_intent", payment_intent: paymentIntent },
              status: "paid",
              status_transitions: { canceled_at: null, paid_at: now() },
            },
          ]
        : [];
      return [200, { object: "list", data, has_more: false, url: "/v1/invoice_payments" }];
    }
    const priceMatch = /^\/v1\/prices\/([^/]+)$/.exec(call.path);
    if (call.method === "GET" && priceMatch) {
      const price = this.prices.get(decodeURIComponent(priceMatch[1] as string));
      if (!price) return [404, { error: { type: "invalid_request_error", message: "No such price" } }];
      return [200, priceObject(price)];
    }
    return [
      404,
      { error: { type: "invalid_request_error", message: `Unrecognized request URL (${call.method}: ${call.path})` } },
    ];
  }

  /** The session as Stripe holds it once paid: its payment intent (a pack) or subscription (a plan). */
  completeSession(sessionId: string, options: { paid?: boolean } = {}): Record<string, unknown> {
    const session = this.sessions.get(sessionId);
    if (!session) throw new Error(`no checkout session ${sessionId}`);
    const paid = options.paid ?? true;
    Object.assign(session, {
      status: "complete",
      payment_status: paid ? "paid" : "unpaid",
      ...(session.mode === "payment"
        ? { payment_intent: session.payment_intent ?? id("pi") }
        : { subscription: session.subscription ?? id("sub") }),
    });
    const { line_item_price: _price, ...shape } = session;
    return shape;
  }

  /** The session id of a checkout URL this server handed out. */
  sessionOfUrl(url: string): string {
    const sessionId = url.split("/").pop() as string;
    if (!this.sessions.has(sessionId)) throw new Error(`${url} is no checkout URL of this server`);
    return sessionId;
  }

  subscription(input: {
    id: string;
    customer: string;
    priceId: string;
    status?: string;
    periodStart: number;
    periodEnd: number;
    cancelAtPeriodEnd?: boolean;
    metadata?: Record<string, string>;
  }): Record<string, unknown> {
    const price = this.prices.get(input.priceId);
    if (!price) throw new Error(`no price ${input.priceId}`);
    const status = input.status ?? "active";
    return {
      id: input.id,
      object: "subscription",
      customer: input.customer,
      status,
      cancel_at_period_end: input.cancelAtPeriodEnd ?? false,
      cancel_at: input.cancelAtPeriodEnd ? input.periodEnd : null,
      canceled_at: status === "canceled" ? now() : null,
      ended_at: status === "canceled" ? now() : null,
      collection_method: "charge_automatically",
      created: input.periodStart,
      start_date: input.periodStart,
      currency: price.currency,
      billing_cycle_anchor: input.periodStart,
      items: {
        object: "list",
        data: [
          {
            id: `si_${input.id.slice(4)}`,
            object: "subscription_item",
            created: input.periodStart,
            current_period_start: input.periodStart,
            current_period_end: input.periodEnd,
            metadata: {},
            price: priceObject(price),
            quantity: 1,
            subscription: input.id,
          },
        ],
        has_more: false,
        url: `/v1/subscription_items?subscription=${input.id}`,
      },
      latest_invoice: null,
      livemode: false,
      metadata: input.metadata ?? {},
    };
  }

  invoice(input: {
    customer: string;
    subscription: string;
    priceId: string;
    billingReason: "subscription_create" | "subscription_cycle" | "subscription_update";
    periodStart: number;
    periodEnd: number;
  }): Record<string, unknown> {
    const price = this.prices.get(input.priceId);
    if (!price) throw new Error(`no price ${input.priceId}`);
    const invoiceId = id("in");
    this.invoicePayments.set(id("pi"), { invoice: invoiceId, amount: price.unitAmount, currency: price.currency });
    return {
      id: invoiceId,
      object: "invoice",
      customer: input.customer,
      status: "paid",
      billing_reason: input.billingReason,
      collection_method: "charge_automatically",
      amount_due: price.unitAmount,
      amount_paid: price.unitAmount,
      amount_remaining: 0,
      currency: price.currency,
      created: input.periodStart,
      period_start: input.periodStart,
      period_end: input.periodStart,
      parent: {
        type: "subscription_details",
        quote_details: null,
        subscription_details: { metadata: {}, subscription: input.subscription },
      },
      lines: {
        object: "list",
        data: [
          {
            id: id("il"),
            object: "line_item",
            amount: price.unitAmount,
            currency: price.currency,
            description: "1 × plan (at $ per month)",
            invoice: invoiceId,
            livemode: false,
            metadata: {},
            period: { start: input.periodStart, end: input.periodEnd },
            pricing: {
              type: "price_details",
              price_details: { price: price.id, product: `prod_${price.id.slice(6)}` },
              unit_amount_decimal: String(price.unitAmount),
            },
            quantity: 1,
            parent: {
              type: "subscription_item_details",
              invoice_item_details: null,
              subscription_item_details: {
                invoice_item: null,
                proration: false,
                proration_details: { credited_items: null },
                subscription: input.subscription,
                subscription_item: `si_${input.subscription.slice(4)}`,
              },
            },
          },
        ],
        has_more: false,
        url: `/v1/invoices/${invoiceId}/lines`,
      },
      livemode: false,
      metadata: {},
    };
  }

  /** The payment intent that paid an invoice built here (not in the invoice event, as with Stripe by default). */
  paymentIntentOfInvoice(invoiceId: string): string {
    for (const [paymentIntent, paid] of this.invoicePayments) if (paid.invoice === invoiceId) return paymentIntent;
    throw new Error(`no payment for ${invoiceId}`);
  }

  charge(input: { paymentIntent: string; customer: string; amount: number; amountRefunded: number }): Record<string, unknown> {
    return {
      id: id("ch"),
      object: "charge",
      amount: input.amount,
      amount_captured: input.amount,
      amount_refunded: input.amountRefunded,
      captured: true,
      created: now(),
      currency: "usd",
      customer: input.customer,
      description: null,
      disputed: false,
      livemode: false,
      metadata: {},
      paid: true,
      payment_intent: input.paymentIntent,
      refunded: input.amountRefunded >= input.amount,
      status: "succeeded",
    };
  }

  /** An event as Stripe sends it, with its Stripe-Signature header (timestamp in seconds; now by default). */
  event(
    type: string,
    object: Record<string, unknown>,
    options: { created?: number; timestamp?: number; secret?: string } = {},
  ): { id: string; payload: string; signature: string } {
    const eventId = id("evt");
    const payload = JSON.stringify(
      {
        id: eventId,
        object: "event",
        api_version: STRIPE_API_VERSION,
        created: options.created ?? now(),
        data: { object },
        livemode: false,
        pending_webhooks: 1,
        request: { id: null, idempotency_key: null },
        type,
      },
      null,
      2,
    );
    const signature = this.sdk.webhooks.generateTestHeaderString({
      payload,
      secret: options.secret ?? STRIPE_TEST_WEBHOOK_SECRET,
      ...(options.timestamp !== undefined ? { timestamp: options.timestamp } : {}),
    });
    return { id: eventId, payload, signature };
  }
}

function priceObject(price: LoopbackPrice): Record<string, unknown> {
  return {
    id: price.id,
    object: "price",
    active: true,
    billing_scheme: "per_unit",
    created: now(),
    currency: price.currency,
    livemode: false,
    lookup_key: null,
    metadata: {},
    nickname: null,
    product: `prod_${price.id.slice(6)}`,
    recurring: price.interval
      ? { interval: price.interval, interval_count: 1, meter: null, trial_period_days: null, usage_type: "licensed" }
      : null,
    tax_behavior: "unspecified",
    type: price.interval ? "recurring" : "one_time",
    unit_amount: price.unitAmount,
    unit_amount_decimal: String(price.unitAmount),
  };
}

/** `metadata[kind]=pack` → { kind: "pack" }. */
function pick(form: Record<string, string>, field: string): Record<string, string> {
  const prefix = `${field}[`;
  return Object.fromEntries(
    Object.entries(form)
      .filter(([name]) => name.startsWith(prefix))
      .map(([name, value]) => [name.slice(prefix.length, -1), value]),
  );
}
