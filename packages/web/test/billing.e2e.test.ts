import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signUp, type TestAccount } from "../../../test/support/accounts";
import { freePort } from "../../../test/support/free-port";
import { request } from "../../../test/support/http-client";
import { StripeLoopback } from "../../../test/support/stripe-server";
import { startTestApp, type TestApp } from "../../../test/support/test-app";
import { ensureWebBuild } from "../scripts/build-if-stale.mjs";
import { webAssetsDirectory } from "../src/assets-directory";
import { launchChromium } from "./support/chromium";
import { expectAccessible, openWatchedPage, screenshot, type WatchedPage } from "./support/page-checks";

/**
 * The Billing page in Chromium against a real service that sells through the
 * official Stripe SDK pointed at a loopback Stripe (test/support/stripe-server.ts):
 * a pack bought from the page up to Stripe's checkout URL, the browser sent
 * back, the signed `checkout.session.completed` delivered to /webhooks/stripe
 * and the balance updated on the page; a plan's checkout and the customer
 * portal; and a server without payments saying so for a person. axe-core
 * checks each state of the page.
 *
 * The checkout and portal URLs are Stripe's hosts, as the loopback Stripe hands
 * them out; the browser's requests to them are answered by the test (nothing
 * leaves the machine), standing in for Stripe's pages.
 */

const STRIPE_PAGES = ["https://checkout.stripe.com/**", "https://billing.stripe.com/**"];

let stripe: StripeLoopback;
let app: TestApp;
let browser: Browser;
let watched: WatchedPage;
let page: Page;
let account: TestAccount;
/** The browser's requests to Stripe's hosts, in order. */
const stripeVisits: string[] = [];

const eventually = <T>(read: () => Promise<T>) => expect.poll(read, { timeout: 15_000, interval: 100 });

async function signInBrowser(target: Page, baseUrl: string, who: TestAccount): Promise<void> {
  const [name, ...value] = who.cookie.split("=");
  await target.context().addCookies([{ name: name ?? "", value: value.join("="), url: baseUrl }]);
}

async function openBilling(): Promise<void> {
  await page.getByRole("navigation", { name: "Dashboard" }).getByRole("link", { name: "Billing", exact: true }).click();
  await page.getByRole("heading", { level: 1, name: "Billing" }).waitFor();
}

beforeAll(async () => {
  ensureWebBuild({ quiet: true });
  browser = await launchChromium();
  stripe = await new StripeLoopback([
    { id: "price_pack100", unitAmount: 900, currency: "usd" },
    { id: "price_pack500", unitAmount: 3900, currency: "usd" },
    { id: "price_starter", unitAmount: 1900, currency: "usd", interval: "month" },
    { id: "price_core", unitAmount: 7900, currency: "usd", interval: "month" },
  ]).start();
  const port = await freePort();
  app = await startTestApp(
    stripe.env({
      PORT: String(port),
      // Checkout sends the browser back to PUBLIC_BASE_URL/billing: the address the browser uses.
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      RETOUCH_CREDIT_PACKS: "100:price_pack100,500:price_pack500",
      RETOUCH_PLAN_PRICES: "starter:price_starter,core:price_core",
    }),
    { dashboardDir: webAssetsDirectory() ?? "" },
  );
  // Not verified yet: paying verifies the email, so the page sells to it.
  account = await signUp(app.url);
  watched = await openWatchedPage(browser, app.url);
  page = watched.page;
  for (const pattern of STRIPE_PAGES) {
    await page.route(pattern, (route) => {
      stripeVisits.push(route.request().url());
      return route.fulfill({
        status: 200,
        contentType: "text/html",
        body: "<!doctype html><html lang=en><title>Stripe</title><h1>Stripe stand-in</h1></html>",
      });
    });
  }
  await signInBrowser(page, app.url, account);
  await page.goto("/dashboard");
  await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
}, 120_000);

afterAll(async () => {
  await watched?.context.close();
  await browser?.close();
  await app?.close();
  await stripe?.close();
});

describe("the Billing page, selling through Stripe", { timeout: 60_000 }, () => {
  it("shows the balance, the plan, the packs and plans on sale with Stripe's prices, and no purchases yet", async () => {
    await openBilling();
    await eventually(() => page.getByTestId("billing-credits").textContent()).toBe("10");
    expect(await page.getByTestId("billing-plan").textContent()).toBe("Free");
    await page.getByRole("button", { name: /^Buy 100 credits for US\$9\.00$/ }).waitFor();
    await page.getByRole("button", { name: /^Buy 500 credits for US\$39\.00$/ }).waitFor();
    const starter = page.getByRole("listitem").filter({ has: page.getByRole("heading", { name: "Starter" }) });
    await starter.getByText("US$19.00 a month").waitFor();
    await starter.getByText(/1,?000 credits each period/).waitFor();
    await page.getByRole("button", { name: "Choose Core" }).waitFor();
    await page.getByText("No purchases yet.").waitFor();
    await expectAccessible(page, "billing");
  });

  it("buys a pack: to Stripe's checkout URL, back to the page, and the balance updated when the signed event arrives", async () => {
    const before = stripe.sessions.size;
    await page.getByRole("button", { name: /^Buy 100 credits/ }).click();
    // The browser is sent to the checkout URL the loopback Stripe handed the service.
    await page.waitForURL(/^https:\/\/checkout\.stripe\.com\/c\/pay\/cs_test_/);
    expect(stripe.sessions.size).toBe(before + 1);
    const sessionId = stripe.sessionOfUrl(page.url());
    const session = stripe.sessions.get(sessionId) as { success_url: string; mode: string; metadata: Record<string, string> };
    expect(session.mode).toBe("payment");
    expect(session.metadata.credits).toBe("100");

    // Stripe sends the browser back to /billing, which is the Billing page; the credits wait for Stripe's event.
    await page.goto(session.success_url.replace("{CHECKOUT_SESSION_ID}", sessionId));
    await page.getByRole("heading", { level: 1, name: "Billing" }).waitFor();
    expect(new URL(page.url()).pathname).toBe("/dashboard/billing");
    await page
      .getByRole("status")
      .getByText(/Thank you/)
      .waitFor();
    expect(await page.getByTestId("billing-credits").textContent()).toBe("10");

    // Stripe's signed event, as Stripe delivers it to the service.
    const event = stripe.event("checkout.session.completed", stripe.completeSession(sessionId));
    const delivered = await request(app.url, "POST", "/webhooks/stripe", {
      rawBody: event.payload,
      headers: { "content-type": "application/json; charset=utf-8", "stripe-signature": event.signature },
    });
    expect(delivered.status, delivered.text).toBe(200);

    // The page looks again on its own: the balance and the purchase appear without a reload.
    await eventually(() => page.getByTestId("billing-credits").textContent()).toBe("110");
    const row = page.getByRole("row").filter({ hasText: "100 credits pack" });
    await row.getByText("US$9.00").waitFor();
    await row.getByText("Paid", { exact: true }).waitFor();
    await expectAccessible(page, "billing after a purchase");

    // Paying verified the address, and the overview shows the same balance.
    const me = await request(app.url, "GET", "/api/account", { cookie: account.cookie });
    expect(me.body).toMatchObject({ email_verified: true, credits_remaining: 110 });
  });

  it("says so when a checkout is cancelled at Stripe: nothing charged", async () => {
    await page.goto("/dashboard/billing");
    await page.getByRole("button", { name: "Choose Starter" }).click();
    await page.waitForURL(/^https:\/\/checkout\.stripe\.com\/c\/pay\/cs_test_/);
    const session = stripe.sessions.get(stripe.sessionOfUrl(page.url())) as { cancel_url: string };
    await page.goto(session.cancel_url);
    await page.getByRole("status").getByText("The checkout was cancelled: nothing was charged.").waitFor();
    expect(await page.getByTestId("billing-credits").textContent()).toBe("110");
    expect(await page.getByTestId("billing-plan").textContent()).toBe("Free");
    await expectAccessible(page, "billing, checkout cancelled");
  });

  it("subscribes to a plan: its checkout and Stripe's events, then the plan, its allowance and renewal date on the page", async () => {
    await page.goto("/dashboard/billing");
    await page.getByRole("button", { name: "Choose Starter" }).click();
    await page.waitForURL(/^https:\/\/checkout\.stripe\.com\/c\/pay\/cs_test_/);
    const sessionId = stripe.sessionOfUrl(page.url());
    const session = stripe.completeSession(sessionId);
    expect(session.mode).toBe("subscription");
    // What Stripe sends for a new subscription: the checkout, the subscription, its first invoice paid.
    const customer = session.customer as string;
    const subscription = session.subscription as string;
    const periodStart = Math.floor(Date.now() / 1000);
    const periodEnd = periodStart + 30 * 86_400;
    const priceId = "price_starter";
    for (const event of [
      stripe.event("checkout.session.completed", session),
      stripe.event(
        "customer.subscription.created",
        stripe.subscription({ id: subscription, customer, priceId, periodStart, periodEnd }),
      ),
      stripe.event(
        "invoice.paid",
        stripe.invoice({ customer, subscription, priceId, billingReason: "subscription_create", periodStart, periodEnd }),
      ),
    ]) {
      const delivered = await request(app.url, "POST", "/webhooks/stripe", {
        rawBody: event.payload,
        headers: { "content-type": "application/json; charset=utf-8", "stripe-signature": event.signature },
      });
      expect(delivered.status, delivered.text).toBe(200);
    }
    await page.goto((session.success_url as string).replace("{CHECKOUT_SESSION_ID}", sessionId));
    await page.getByRole("heading", { level: 1, name: "Billing" }).waitFor();
    await eventually(() => page.getByTestId("billing-plan").textContent()).toBe("Starter");
    expect(await page.getByTestId("billing-credits").textContent()).toBe("1110");
    expect(await page.getByTestId("billing-allowance").textContent()).toBe("1000");
    await page.getByText(/^Left of 1000 this period/).waitFor();
    const renews = await page.evaluate(
      (iso) => new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" }).format(new Date(iso)),
      new Date(periodEnd * 1000).toISOString(),
    );
    await page.locator(".stat").filter({ hasText: "Renews" }).getByText(renews).waitFor();
    // The plan held is marked, and another is chosen in the portal, not bought beside it.
    await page
      .getByRole("listitem")
      .filter({ hasText: "Your plan" })
      .getByRole("heading", { name: /Starter/ })
      .waitFor();
    expect(await page.getByRole("button", { name: /^Choose/ }).count()).toBe(0);
    await page.getByRole("row").filter({ hasText: "Starter plan, one period" }).getByText("US$19.00").waitFor();
    await expectAccessible(page, "billing with a plan");
    await screenshot(page, "billing-plan");
  });

  it("opens Stripe's customer portal", async () => {
    await page.getByRole("button", { name: "Manage your plan" }).click();
    await page.waitForURL(/^https:\/\/billing\.stripe\.com\/p\/session\/bps_test_/);
    expect(stripeVisits.at(-1)).toBe(page.url());
  });

  it("ran without a script error or a Content-Security-Policy violation", () => {
    expect(watched.pageErrors).toEqual([]);
    expect(watched.cspViolations).toEqual([]);
  });
});

describe("the Billing page on a server without payments", { timeout: 60_000 }, () => {
  let plain: TestApp;
  let plainPage: WatchedPage;

  beforeAll(async () => {
    const port = await freePort();
    plain = await startTestApp(
      { PORT: String(port), PUBLIC_BASE_URL: `http://127.0.0.1:${port}` },
      { dashboardDir: webAssetsDirectory() ?? "" },
    );
    plainPage = await openWatchedPage(browser, plain.url);
    await signInBrowser(plainPage.page, plain.url, await signUp(plain.url));
  }, 60_000);

  afterAll(async () => {
    await plainPage?.context.close();
    await plain?.close();
  });

  it("says plainly that this server takes no payments, with the balance and plan, and offers nothing to buy", async () => {
    await plainPage.page.goto("/dashboard/billing");
    await plainPage.page.getByRole("heading", { level: 1, name: "Billing" }).waitFor();
    await plainPage.page.getByText("This server does not take payments.").waitFor();
    await eventually(() => plainPage.page.getByTestId("billing-credits").textContent()).toBe("10");
    expect(await plainPage.page.getByRole("button", { name: /^Buy|^Choose|Manage your plan/ }).count()).toBe(0);
    // Said for a person: nothing about settings or endpoints.
    expect(await plainPage.page.getByRole("main").textContent()).not.toMatch(/RETOUCH_|\/api\/|configured/);
    expect(await plainPage.page.getByRole("alert").count()).toBe(0);
    await expectAccessible(plainPage.page, "billing without payments");
    await screenshot(plainPage.page, "billing-no-payments");
    expect(plainPage.pageErrors).toEqual([]);
  });
});
