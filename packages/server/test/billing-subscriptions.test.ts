import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type KeyedAccount, keyedAccount } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { StripeLoopback } from "../../../test/support/stripe-server";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

/**
 * Plans bought through Stripe: checkout, the subscription's events and its
 * invoices, in the order Stripe sends them, against a loopback Stripe that the
 * service's own SDK talks to; events signed with the SDK's test helper.
 */

let stripe: StripeLoopback;
let app: TestApp;

const DAY = 86_400;

beforeAll(async () => {
  stripe = await new StripeLoopback([
    { id: "price_pack100", unitAmount: 900, currency: "usd" },
    { id: "price_starter", unitAmount: 1900, currency: "usd", interval: "month" },
    { id: "price_core", unitAmount: 4900, currency: "usd", interval: "month" },
  ]).start();
  app = await startTestApp(
    stripe.env({
      RETOUCH_CREDIT_PACKS: "100:price_pack100",
      RETOUCH_PLAN_PRICES: "starter:price_starter,core:price_core",
      RETOUCH_PLAN_MONTHLY_CREDITS: "starter:1000,core:5000,pro:20000",
    }),
  );
});

afterAll(async () => {
  await app?.close();
  await stripe?.close();
});

const deliver = async (event: { payload: string; signature: string }) => {
  const response = await request(app.url, "POST", "/webhooks/stripe", {
    rawBody: event.payload,
    headers: { "content-type": "application/json; charset=utf-8", "stripe-signature": event.signature },
  });
  expect(response.status, response.text).toBe(200);
};

const balanceOf = async (userId: string) => (await app.services.profiles.get(userId)).credits;
const billing = async (account: KeyedAccount) => (await request(app.url, "GET", "/api/billing", { key: account.key })).body;
const account = async (who: KeyedAccount) => (await request(app.url, "GET", "/api/account", { key: who.key })).body;
/** Credits spent by jobs, as the submit function debits them. */
const spend = (userId: string, credits: number) =>
  app.services.stores.profiles.applyCreditChange({ userId, delta: -credits, reason: "job_debit" });

interface Subscribed {
  customer: string;
  subscription: string;
  periodStart: number;
  periodEnd: number;
  /** The first period's invoice. */
  invoice: string;
}

/** Checkout for a plan, paid, then the events Stripe sends for a new subscription, in its usual order. */
async function subscribe(who: KeyedAccount, plan: "starter" | "core"): Promise<Subscribed> {
  const checkout = await request(app.url, "POST", "/api/billing/checkout", { key: who.key, body: { plan } });
  expect(checkout.status, checkout.text).toBe(200);
  const sessionCall = stripe.calls.at(-1);
  expect(sessionCall?.form).toMatchObject({
    mode: "subscription",
    "line_items[0][price]": `price_${plan}`,
    "subscription_data[metadata][plan]": plan,
  });
  const session = stripe.completeSession(stripe.sessionOfUrl(checkout.body.url));
  const customer = session.customer as string;
  const subscription = session.subscription as string;
  const periodStart = Math.floor(Date.now() / 1000);
  const periodEnd = periodStart + 30 * DAY;
  const state = stripe.subscription({ id: subscription, customer, priceId: `price_${plan}`, periodStart, periodEnd });
  await deliver(stripe.event("checkout.session.completed", session, { created: periodStart }));
  await deliver(stripe.event("customer.subscription.created", state, { created: periodStart }));
  const invoice = stripe.invoice({
    customer,
    subscription,
    priceId: `price_${plan}`,
    billingReason: "subscription_create",
    periodStart,
    periodEnd,
  });
  await deliver(stripe.event("invoice.paid", invoice, { created: periodStart }));
  return { customer, subscription, periodStart, periodEnd, invoice: invoice.id as string };
}

describe("a plan", () => {
  it("subscribing changes the limits at once and grants the allowance; a second checkout for a plan is refused", async () => {
    const who = await keyedAccount(app);
    expect((await account(who)).limits).toEqual({ per_minute: 5, concurrent: 3 });
    const sub = await subscribe(who, "starter");
    expect(await account(who)).toMatchObject({
      plan: "starter",
      limits: { per_minute: 15, concurrent: 10 },
      credits_remaining: 1010,
    });
    expect((await app.services.profiles.get(who.userId)).plan).toBe("starter");
    expect(await billing(who)).toMatchObject({
      plan: "starter",
      subscription: {
        plan: "starter",
        status: "active",
        renews_at: new Date(sub.periodEnd * 1000).toISOString(),
        cancel_at_period_end: false,
      },
      credits_remaining: 1010,
      allowance: { monthly: 1000, remaining: 1000 },
      purchases: [{ kind: "plan", plan: "starter", credits: 1000, amount: 1900, currency: "usd", status: "paid" }],
    });
    // The same invoice again (Stripe retries): no second allowance.
    const ledger = (await app.services.stores.profiles.ledger(who.userId)).filter((row) => row.reason === "plan_allowance");
    expect(ledger).toHaveLength(1);

    const again = await request(app.url, "POST", "/api/billing/checkout", { key: who.key, body: { plan: "core" } });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: "already_subscribed" });
    expect(again.body.message).toMatch(/starter plan; change or cancel it in the customer portal/);
  });

  it("an invoice that arrives before the subscription's events still sets the plan and grants once", async () => {
    const who = await keyedAccount(app);
    const checkout = await request(app.url, "POST", "/api/billing/checkout", { key: who.key, body: { plan: "core" } });
    const session = stripe.completeSession(stripe.sessionOfUrl(checkout.body.url));
    const periodStart = Math.floor(Date.now() / 1000);
    const invoice = stripe.invoice({
      customer: session.customer as string,
      subscription: session.subscription as string,
      priceId: "price_core",
      billingReason: "subscription_create",
      periodStart,
      periodEnd: periodStart + 30 * DAY,
    });
    const paid = stripe.event("invoice.paid", invoice, { created: periodStart });
    await Promise.all([deliver(paid), deliver(paid), deliver(paid)]);
    expect(await account(who)).toMatchObject({ plan: "core", credits_remaining: 5010 });
  });

  it("a renewal resets the allowance: what is left of it does not roll over; bought credits stay", async () => {
    const who = await keyedAccount(app);
    const sub = await subscribe(who, "starter");
    const pack = await request(app.url, "POST", "/api/billing/checkout", { key: who.key, body: { credits: 100 } });
    await deliver(stripe.event("checkout.session.completed", stripe.completeSession(stripe.sessionOfUrl(pack.body.url))));
    expect(await balanceOf(who.userId)).toBe(1110);
    await spend(who.userId, 300);
    expect((await billing(who)).allowance).toEqual({ monthly: 1000, remaining: 700 });

    // The next period: Stripe renews the subscription and the invoice is paid.
    const nextStart = sub.periodEnd;
    const nextEnd = nextStart + 30 * DAY;
    const renewed = stripe.subscription({
      id: sub.subscription,
      customer: sub.customer,
      priceId: "price_starter",
      periodStart: nextStart,
      periodEnd: nextEnd,
    });
    await deliver(stripe.event("customer.subscription.updated", renewed, { created: nextStart }));
    const invoice = stripe.event(
      "invoice.paid",
      stripe.invoice({
        customer: sub.customer,
        subscription: sub.subscription,
        priceId: "price_starter",
        billingReason: "subscription_cycle",
        periodStart: nextStart,
        periodEnd: nextEnd,
      }),
      { created: nextStart },
    );
    await Promise.all([deliver(invoice), deliver(invoice)]);
    // 1110 - 300 spent = 810; the 700 left of the allowance expire, the new 1000 arrive: the 10 + 100 stay.
    expect(await balanceOf(who.userId)).toBe(1110);
    const state = await billing(who);
    expect(state.allowance).toEqual({ monthly: 1000, remaining: 1000 });
    expect(state.subscription.renews_at).toBe(new Date(nextEnd * 1000).toISOString());
    const reasons = (await app.services.stores.profiles.ledger(who.userId)).map((row) => [row.reason, row.delta]);
    expect(reasons.slice(-2)).toEqual([
      ["plan_allowance_expiry", -700],
      ["plan_allowance", 1000],
    ]);
  });

  it("an upgrade in the portal changes the limits at once and tops the allowance up to the new plan's, once", async () => {
    const who = await keyedAccount(app);
    const sub = await subscribe(who, "starter");
    await spend(who.userId, 400);
    const upgraded = stripe.subscription({
      id: sub.subscription,
      customer: sub.customer,
      priceId: "price_core",
      periodStart: sub.periodStart,
      periodEnd: sub.periodEnd,
      // The checkout's metadata still says starter: the price decides.
      metadata: { plan: "starter" },
    });
    await deliver(stripe.event("customer.subscription.updated", upgraded, { created: sub.periodStart + DAY }));
    expect(await account(who)).toMatchObject({ plan: "core", limits: { per_minute: 40, concurrent: 25 } });
    const proration = stripe.event(
      "invoice.paid",
      stripe.invoice({
        customer: sub.customer,
        subscription: sub.subscription,
        priceId: "price_core",
        billingReason: "subscription_update",
        periodStart: sub.periodStart + DAY,
        periodEnd: sub.periodEnd,
      }),
      { created: sub.periodStart + DAY },
    );
    await Promise.all([deliver(proration), deliver(proration)]);
    // 1010 - 400 = 610, plus core's 5000 less starter's 1000 already granted this period.
    expect(await balanceOf(who.userId)).toBe(4610);
    expect((await billing(who)).allowance).toEqual({ monthly: 5000, remaining: 4600 });
  });

  it("a pack's refund takes only what is left of the pack, never the allowance; a plan period's, what is left of its allowance", async () => {
    const who = await keyedAccount(app);
    // A pack bought and partly spent before subscribing.
    const pack = await request(app.url, "POST", "/api/billing/checkout", { key: who.key, body: { credits: 100 } });
    const packSession = stripe.completeSession(stripe.sessionOfUrl(pack.body.url));
    await deliver(stripe.event("checkout.session.completed", packSession));
    await spend(who.userId, 50);
    const sub = await subscribe(who, "starter");
    await spend(who.userId, 300);
    // 10 signed up + 100 bought - 50 spent, + 1000 allowance - 300 spent from it.
    expect(await balanceOf(who.userId)).toBe(760);

    // The pack refunded: 60 are left beside the allowance; the allowance's 700 are not the pack's to give back.
    const packCharge = stripe.charge({
      paymentIntent: packSession.payment_intent as string,
      customer: sub.customer,
      amount: 900,
      amountRefunded: 900,
    });
    await deliver(stripe.event("charge.refunded", packCharge));
    expect(await balanceOf(who.userId)).toBe(700);
    expect((await billing(who)).allowance).toEqual({ monthly: 1000, remaining: 700 });

    // The period's invoice refunded: the event names only the payment; the service asks Stripe which invoice it paid.
    const before = stripe.calls.length;
    const periodCharge = stripe.charge({
      paymentIntent: stripe.paymentIntentOfInvoice(sub.invoice),
      customer: sub.customer,
      amount: 1900,
      amountRefunded: 1900,
    });
    const refunded = stripe.event("charge.refunded", periodCharge);
    await Promise.all([deliver(refunded), deliver(refunded)]);
    expect(stripe.calls.slice(before).map((call) => call.path)).toContain("/v1/invoice_payments");
    expect(await balanceOf(who.userId)).toBe(0);
    expect((await billing(who)).allowance).toEqual({ monthly: 1000, remaining: 0 });
    const clawed = (await app.services.stores.profiles.ledger(who.userId)).filter((row) => row.reason === "refund_clawback");
    expect(clawed.map((row) => row.delta)).toEqual([-60, -700]);
  });

  it("a failed renewal keeps the plan while Stripe retries; unpaid (Stripe gave up) returns to free", async () => {
    const who = await keyedAccount(app);
    const sub = await subscribe(who, "starter");
    const at = (status: string, created: number) =>
      stripe.event(
        "customer.subscription.updated",
        stripe.subscription({
          id: sub.subscription,
          customer: sub.customer,
          priceId: "price_starter",
          status,
          periodStart: sub.periodStart,
          periodEnd: sub.periodEnd,
        }),
        { created },
      );
    await deliver(stripe.event("invoice.payment_failed", { id: "in_test_failed", object: "invoice", customer: sub.customer }));
    await deliver(at("past_due", sub.periodEnd + 60));
    expect(await account(who)).toMatchObject({ plan: "starter", limits: { per_minute: 15, concurrent: 10 } });
    expect((await billing(who)).subscription.status).toBe("past_due");
    await deliver(at("unpaid", sub.periodEnd + 7 * DAY));
    expect(await account(who)).toMatchObject({ plan: "free", limits: { per_minute: 5, concurrent: 3 } });
    // The allowance ended with the plan; the sign-up credits stay.
    expect(await balanceOf(who.userId)).toBe(10);
  });

  it("a cancellation at period end keeps the plan to the end, then returns to free; a late older event does not revive it", async () => {
    const who = await keyedAccount(app);
    const sub = await subscribe(who, "starter");
    await spend(who.userId, 200);
    const state = (overrides: { status?: string; cancelAtPeriodEnd?: boolean }) =>
      stripe.subscription({
        id: sub.subscription,
        customer: sub.customer,
        priceId: "price_starter",
        periodStart: sub.periodStart,
        periodEnd: sub.periodEnd,
        ...overrides,
      });
    const canceling = stripe.event("customer.subscription.updated", state({ cancelAtPeriodEnd: true }), {
      created: sub.periodStart + DAY,
    });
    await deliver(canceling);
    expect(await billing(who)).toMatchObject({
      plan: "starter",
      subscription: { status: "active", cancel_at_period_end: true },
      allowance: { monthly: 1000, remaining: 800 },
    });
    await deliver(
      stripe.event("customer.subscription.deleted", state({ status: "canceled", cancelAtPeriodEnd: true }), {
        created: sub.periodEnd,
      }),
    );
    expect(await account(who)).toMatchObject({ plan: "free", limits: { per_minute: 5, concurrent: 3 }, credits_remaining: 10 });
    expect(await billing(who)).toMatchObject({ plan: "free", allowance: null, subscription: { status: "canceled" } });
    // Stripe does not promise order: the earlier "active" update, delivered again now, changes nothing.
    await deliver(canceling);
    expect(await account(who)).toMatchObject({ plan: "free", credits_remaining: 10 });
    // Free again, a new plan may be bought.
    const checkout = await request(app.url, "POST", "/api/billing/checkout", { key: who.key, body: { plan: "core" } });
    expect(checkout.status, checkout.text).toBe(200);
  });
});
