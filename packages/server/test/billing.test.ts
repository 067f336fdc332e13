import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey, type KeyedAccount, keyedAccount, signUp } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { base64, productPhoto } from "../../../test/support/images";
import { STRIPE_TEST_WEBHOOK_SECRET, StripeLoopback } from "../../../test/support/stripe-server";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

/**
 * Credit packs bought through Stripe: the official SDK (the service's) talks to
 * a loopback Stripe, and events come signed with the SDK's test helper.
 */

let stripe: StripeLoopback;
let app: TestApp;

beforeAll(async () => {
  stripe = await new StripeLoopback([
    { id: "price_pack100", unitAmount: 900, currency: "usd" },
    { id: "price_pack500", unitAmount: 3900, currency: "usd" },
    { id: "price_starter", unitAmount: 1900, currency: "usd", interval: "month" },
  ]).start();
  app = await startTestApp(
    stripe.env({ RETOUCH_CREDIT_PACKS: "500:price_pack500,100:price_pack100", RETOUCH_PLAN_PRICES: "starter:price_starter" }),
  );
});

afterAll(async () => {
  await app?.close();
  await stripe?.close();
});

type Credentials = { key: string } | { cookie: string };

const deliver = (event: { payload: string; signature?: string }) =>
  request(app.url, "POST", "/webhooks/stripe", {
    rawBody: event.payload,
    headers: {
      "content-type": "application/json; charset=utf-8",
      ...(event.signature !== undefined ? { "stripe-signature": event.signature } : {}),
    },
  });

const balanceOf = async (userId: string) => (await app.services.profiles.get(userId)).credits;

async function ledgerOf(userId: string, reason: string) {
  return (await app.services.stores.profiles.ledger(userId)).filter((row) => row.reason === reason);
}

/** POST /api/billing/checkout for a pack; the session Stripe made for it. */
async function buyPack(who: Credentials, credits: number) {
  const response = await request(app.url, "POST", "/api/billing/checkout", { ...who, body: { credits } });
  expect(response.status, response.text).toBe(200);
  return stripe.sessionOfUrl(response.body.url);
}

/** The pack's checkout, paid: the signed checkout.session.completed as Stripe sends it. */
function paidEvent(sessionId: string) {
  return stripe.event("checkout.session.completed", stripe.completeSession(sessionId));
}

describe("a credit pack", () => {
  it("is bought once: the checkout URL, then the signed event grants the pack; GET /api/billing shows it", async () => {
    const account = await keyedAccount(app);
    const before = stripe.calls.length;
    const response = await request(app.url, "POST", "/api/billing/checkout", { key: account.key, body: { credits: 100 } });
    expect(response.status, response.text).toBe(200);
    expect(response.body.url).toMatch(/^https:\/\/checkout\.stripe\.com\/c\/pay\/cs_test_/);
    // What the service asked Stripe, through the SDK: a customer, then a checkout session for the pack's price.
    const calls = stripe.calls.slice(before);
    expect(calls.map((call) => `${call.method} ${call.path}`)).toEqual(["POST /v1/customers", "POST /v1/checkout/sessions"]);
    const [customerCall, sessionCall] = calls;
    expect(customerCall?.form).toMatchObject({ email: account.email, "metadata[retouch_user_id]": account.userId });
    expect(sessionCall?.form).toMatchObject({
      mode: "payment",
      "line_items[0][price]": "price_pack100",
      "line_items[0][quantity]": "1",
      client_reference_id: account.userId,
      "metadata[credits]": "100",
      success_url: `${app.config.publicBaseUrl}/billing?checkout=success&session_id={CHECKOUT_SESSION_ID}`,
    });
    expect(sessionCall?.headers["stripe-version"]).toBe("2026-10-28.endive");

    const sessionId = stripe.sessionOfUrl(response.body.url);
    expect(await balanceOf(account.userId)).toBe(10);
    const delivered = await deliver(paidEvent(sessionId));
    expect(delivered.status, delivered.text).toBe(200);
    expect(await balanceOf(account.userId)).toBe(110);
    expect(await ledgerOf(account.userId, "pack_purchase")).toEqual([expect.objectContaining({ delta: 100, balanceAfter: 110 })]);

    const state = await request(app.url, "GET", "/api/billing", { key: account.key });
    expect(state.status, state.text).toBe(200);
    expect(state.body).toMatchObject({
      plan: "free",
      subscription: null,
      credits_remaining: 110,
      limits: { per_minute: 5, concurrent: 3 },
      allowance: null,
      packs: [
        { credits: 100, amount: 900, currency: "usd" },
        { credits: 500, amount: 3900, currency: "usd" },
      ],
      plans: [{ plan: "starter", monthly_credits: 1000, amount: 1900, currency: "usd", interval: "month" }],
      purchases: [{ kind: "pack", credits: 100, amount: 900, currency: "usd", status: "paid", plan: null }],
    });

    // The same customer is used for the next purchase.
    const second = stripe.calls.length;
    await buyPack({ key: account.key }, 500);
    expect(stripe.calls.slice(second).map((call) => call.path)).toEqual(["/v1/checkout/sessions"]);
  });

  it("grants once when Stripe delivers the same event 10 times at once, and once more for a second event of the same checkout", async () => {
    const account = await keyedAccount(app);
    const sessionId = await buyPack({ key: account.key }, 500);
    const event = paidEvent(sessionId);
    const answers = await Promise.all(Array.from({ length: 10 }, () => deliver(event)));
    expect(answers.map((answer) => answer.status)).toEqual(Array(10).fill(200));
    expect(await balanceOf(account.userId)).toBe(510);
    // checkout.session.async_payment_succeeded for the same session, a distinct event: still the one grant.
    const again = stripe.event("checkout.session.async_payment_succeeded", stripe.completeSession(sessionId));
    expect((await deliver(again)).status).toBe(200);
    expect(await balanceOf(account.userId)).toBe(510);
    expect(await ledgerOf(account.userId, "pack_purchase")).toHaveLength(1);
    const state = await request(app.url, "GET", "/api/billing", { key: account.key });
    expect(state.body.purchases).toHaveLength(1);
  });

  it("verifies the email of an unverified account that pays (by its session cookie)", async () => {
    const account = await signUp(app.url);
    const refused = await request(app.url, "POST", "/api/keys", { cookie: account.cookie, body: { name: "k" } });
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe("email_unverified");
    // The dashboard's own page calls it: the cookie, from this origin.
    const sessionId = await buyPack({ cookie: account.cookie }, 100);
    const unpaid = stripe.event("checkout.session.completed", stripe.completeSession(sessionId, { paid: false }));
    expect((await deliver(unpaid)).status).toBe(200);
    expect(await balanceOf(account.userId)).toBe(10);
    expect((await app.services.stores.users.findById(account.userId))?.emailVerified).toBe(false);

    expect((await deliver(paidEvent(sessionId))).status).toBe(200);
    expect(await balanceOf(account.userId)).toBe(110);
    expect((await app.services.stores.users.findById(account.userId))?.emailVerified).toBe(true);
    await createKey(app.url, account);
  });
});

describe("refunds and disputes", () => {
  it("a refund takes back only what is unspent, never below zero, once per refund", async () => {
    const account = await keyedAccount(app);
    const sessionId = await buyPack({ key: account.key }, 100);
    const paid = stripe.completeSession(sessionId);
    expect((await deliver(stripe.event("checkout.session.completed", paid))).status).toBe(200);
    expect(await balanceOf(account.userId)).toBe(110);
    // 80 credits spent (as the submit function debits them).
    await app.services.stores.profiles.applyCreditChange({ userId: account.userId, delta: -80, reason: "job_debit" });
    const customer = paid.customer as string;
    const paymentIntent = paid.payment_intent as string;

    const refunded = stripe.charge({ paymentIntent, customer, amount: 900, amountRefunded: 900 });
    const event = stripe.event("charge.refunded", refunded);
    const answers = await Promise.all(Array.from({ length: 5 }, () => deliver(event)));
    expect(answers.map((answer) => answer.status)).toEqual(Array(5).fill(200));
    // 30 left of 110 - 80: the 30 are taken, the 70 spent are not (the balance never goes negative).
    expect(await balanceOf(account.userId)).toBe(0);
    expect(await ledgerOf(account.userId, "refund_clawback")).toEqual([expect.objectContaining({ delta: -30, balanceAfter: 0 })]);
    // Credits granted later are not taken by a replay of the refund.
    await app.services.profiles.grantCredits(account.userId, 50, "goodwill");
    expect((await deliver(stripe.event("charge.refunded", refunded))).status).toBe(200);
    expect(await balanceOf(account.userId)).toBe(50);
    const state = await request(app.url, "GET", "/api/billing", { key: account.key });
    expect(state.body.purchases[0]).toMatchObject({ credits: 100, status: "refunded" });
  });

  it("a partial refund takes back its share, a later full refund the rest; a dispute takes what is left", async () => {
    const account = await keyedAccount(app);
    const first = stripe.completeSession(await buyPack({ key: account.key }, 500));
    await deliver(stripe.event("checkout.session.completed", first));
    expect(await balanceOf(account.userId)).toBe(510);
    const refund = (amountRefunded: number) =>
      stripe.event(
        "charge.refunded",
        stripe.charge({
          paymentIntent: first.payment_intent as string,
          customer: first.customer as string,
          amount: 3900,
          amountRefunded,
        }),
      );
    expect((await deliver(refund(1950))).status).toBe(200);
    expect(await balanceOf(account.userId)).toBe(260);
    expect((await deliver(refund(3900))).status).toBe(200);
    expect(await balanceOf(account.userId)).toBe(10);

    const second = stripe.completeSession(await buyPack({ key: account.key }, 100));
    await deliver(stripe.event("checkout.session.completed", second));
    expect(await balanceOf(account.userId)).toBe(110);
    const dispute = {
      id: "dp_test_1",
      object: "dispute",
      amount: 900,
      charge: "ch_test_disputed",
      currency: "usd",
      payment_intent: second.payment_intent,
      reason: "fraudulent",
      status: "needs_response",
      created: Math.floor(Date.now() / 1000),
      livemode: false,
      metadata: {},
    };
    const opened = stripe.event("charge.dispute.created", dispute);
    await Promise.all([deliver(opened), deliver(opened)]);
    expect(await balanceOf(account.userId)).toBe(10);
    const state = await request(app.url, "GET", "/api/billing", { key: account.key });
    expect(state.body.purchases.map((purchase: { status: string }) => purchase.status)).toEqual(["disputed", "refunded"]);
  });
});

describe("signatures", () => {
  it("refuses forged, tampered, stale and unsigned events with 400, and changes nothing", async () => {
    const account = await keyedAccount(app);
    const sessionId = await buyPack({ key: account.key }, 500);
    const genuine = paidEvent(sessionId);
    const forged = stripe.event("checkout.session.completed", stripe.completeSession(sessionId), {
      secret: `${STRIPE_TEST_WEBHOOK_SECRET}x`,
    });
    const tampered = { payload: genuine.payload.replace('"credits": "500"', '"credits": "50000"'), signature: genuine.signature };
    expect(tampered.payload).not.toBe(genuine.payload);
    // Signed ten minutes ago: outside the five minutes a captured delivery may be replayed in.
    const stale = stripe.event("checkout.session.completed", stripe.completeSession(sessionId), {
      timestamp: Math.floor(Date.now() / 1000) - 600,
    });
    const unsigned = { payload: genuine.payload };
    for (const [name, event] of Object.entries({ forged, tampered, stale, unsigned })) {
      const response = await deliver(event);
      expect(response.status, name).toBe(400);
      expect(response.body.code, name).toBe("invalid_request");
      expect(response.body.message, name).toMatch(/signature/i);
    }
    expect(await balanceOf(account.userId)).toBe(10);
    expect(await ledgerOf(account.userId, "pack_purchase")).toEqual([]);
    expect((await request(app.url, "GET", "/api/billing", { key: account.key })).body.purchases).toEqual([]);
    // Refusals are the sender's mistake: warnings, never errors.
    const refusals = app.logs.filter((line) => line.includes("Stripe event refused")).map((line) => JSON.parse(line));
    expect(refusals.length).toBeGreaterThanOrEqual(4);
    expect(refusals.every((line) => line.level === 40 && line.err === undefined)).toBe(true);
    // The genuine one still grants.
    expect((await deliver(genuine)).status).toBe(200);
    expect(await balanceOf(account.userId)).toBe(510);
  });

  it("the webhook passes the edge's limits: no body over 256 KiB, JSON only", async () => {
    const big = await deliver({ payload: `{"pad":"${"x".repeat(300 * 1024)}"}`, signature: "t=1,v1=00" });
    expect(big.status).toBe(413);
    const form = await request(app.url, "POST", "/webhooks/stripe", {
      rawBody: "a=b",
      headers: { "content-type": "application/x-www-form-urlencoded", "stripe-signature": "t=1,v1=00" },
    });
    expect(form.status).toBe(415);
  });
});

describe("checkout refusals", () => {
  let account: KeyedAccount;
  beforeAll(async () => {
    account = await keyedAccount(app);
  });

  it("answers 400 with the spec's error shape for a pack or plan not on sale, and 401 without credentials", async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ credits: 42 }, /no 42-credit pack; packs on sale: 100, 500 credits/],
      [{ plan: "pro" }, /pro plan is not on sale here; choose one of: starter/],
      [{ plan: "free" }, /plan/],
      [{ plan: "gold" }, /plan/],
      [{ credits: 100, plan: "starter" }, /either "credits" \(a pack\) or "plan"/],
      [{}, /either "credits" \(a pack\) or "plan"/],
    ];
    for (const [body, message] of cases) {
      const response = await request(app.url, "POST", "/api/billing/checkout", { key: account.key, body });
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.code).toBe("invalid_request");
      expect(response.body.message).toMatch(message);
    }
    const anonymous = await request(app.url, "POST", "/api/billing/checkout", { body: { credits: 100 } });
    expect(anonymous.status).toBe(401);
    expect((await request(app.url, "GET", "/api/billing")).status).toBe(401);
  });

  it("a plan an operator set has no allowance; an event about a customer of another app is acknowledged and ignored", async () => {
    const granted = await keyedAccount(app, { plan: "starter" });
    expect((await request(app.url, "GET", "/api/billing", { key: granted.key })).body).toMatchObject({
      plan: "starter",
      subscription: null,
      allowance: null,
    });
    const foreign = stripe.subscription({
      id: "sub_test_foreign",
      customer: "cus_test_foreign",
      priceId: "price_starter",
      periodStart: 1,
      periodEnd: 2,
    });
    expect((await deliver(stripe.event("customer.subscription.created", foreign))).status).toBe(200);
    expect(await app.services.stores.billing.subscriptionOf(granted.userId)).toBeUndefined();
  });

  it("opens the customer portal", async () => {
    const response = await request(app.url, "POST", "/api/billing/portal", { key: account.key, body: {} });
    expect(response.status, response.text).toBe(200);
    expect(response.body.url).toMatch(/^https:\/\/billing\.stripe\.com\/p\/session\//);
    const call = stripe.calls.at(-1);
    expect(call?.path).toBe("/v1/billing_portal/sessions");
    expect(call?.form.return_url).toBe(`${app.config.publicBaseUrl}/billing`);
  });

  it("the 402 points to the billing page and the checkout endpoint", async () => {
    const broke = await keyedAccount(app, { credits: 0 });
    const response = await request(app.url, "POST", "/api/process", {
      key: broke.key,
      body: { image: base64(await productPhoto()), prompt: "remove the background" },
    });
    expect(response.status, response.text).toBe(402);
    expect(response.body).toEqual({
      code: "insufficient_credits",
      message: `This request needs 1 credit and your balance is 0; top up before retrying: buy credits or a plan on the billing page (${app.config.publicBaseUrl}/billing) or with POST /api/billing/checkout.`,
    });
  });
});

describe("discovery", () => {
  it("documents the billing operations in OpenAPI with their own error responses", async () => {
    const document = (await request(app.url, "GET", "/openapi.json")).body;
    const examples = (
      operation: { responses: Record<string, { content: Record<string, { examples: object }> }> },
      status: string,
    ) => Object.keys(operation.responses[status]?.content["application/json"]?.examples ?? {}).sort();
    const state = document.paths["/api/billing"].get;
    const checkout = document.paths["/api/billing/checkout"].post;
    const portal = document.paths["/api/billing/portal"].post;
    expect(examples(state, "409")).toEqual(["payments_not_configured"]);
    expect(examples(checkout, "409")).toEqual(["already_subscribed", "payments_not_configured"]);
    expect(examples(checkout, "400")).toContain("invalid_request");
    expect(examples(checkout, "502")).toEqual(["upstream_error"]);
    expect(examples(portal, "409")).toEqual(["payments_not_configured"]);
    for (const operation of [state, checkout, portal]) expect(operation.responses["401"]).toBeDefined();
    expect(checkout.requestBody.content["application/json"].schema.properties).toHaveProperty("credits");
    expect(state.responses["200"].content["application/json"].schema.properties).toHaveProperty("purchases");
  });
});

describe("RETOUCH_PAYMENTS=none", () => {
  let plain: TestApp;
  beforeAll(async () => {
    plain = await startTestApp();
  });
  afterAll(async () => {
    await plain?.close();
  });

  it("answers 409 payments_not_configured on every billing endpoint and the webhook", async () => {
    const account = await keyedAccount(plain);
    const calls: Array<[string, string, unknown]> = [
      ["GET", "/api/billing", undefined],
      ["POST", "/api/billing/checkout", { credits: 100 }],
      ["POST", "/api/billing/portal", {}],
    ];
    for (const [method, path, body] of calls) {
      const response = await request(plain.url, method, path, { key: account.key, ...(body ? { body } : {}) });
      expect(response.status, path).toBe(409);
      expect(response.body).toEqual({
        code: "payments_not_configured",
        message:
          "This server does not take payments (RETOUCH_PAYMENTS is none): credits and plans are granted by its operator; ask them for more.",
      });
    }
    const event = stripe.event("checkout.session.completed", { id: "cs_test_x", object: "checkout.session" });
    const webhook = await request(plain.url, "POST", "/webhooks/stripe", {
      rawBody: event.payload,
      headers: { "content-type": "application/json", "stripe-signature": event.signature },
    });
    expect(webhook.status).toBe(409);
    expect(webhook.body.code).toBe("payments_not_configured");
    // The 402 keeps the plain advice: there is no billing page to point to.
    await plain.services.profiles.grantCredits(account.userId, -10);
    const refused = await request(plain.url, "POST", "/api/process", {
      key: account.key,
      body: { image: base64(await productPhoto()), prompt: "remove the background" },
    });
    expect(refused.status).toBe(402);
    expect(refused.body.message).toBe("This request needs 1 credit and your balance is 0; top up before retrying.");
  });
});
