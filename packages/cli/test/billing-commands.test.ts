import { chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type KeyedAccount, keyedAccount } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { StripeLoopback } from "../../../test/support/stripe-server";
import { startTestApp, type TestApp } from "../../../test/support/test-app";
import { type CliRun, runCli } from "./run-cli";

/** `retouch billing`, `retouch buy` and `retouch plan`: the built binary against a real Retouch selling through a loopback Stripe. */

let stripe: StripeLoopback;
let app: TestApp;
let home: string;
let account: KeyedAccount;

function cli(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return runCli(args, {
    HOME: home,
    RETOUCH_CONFIG: path.join(home, "config.json"),
    RETOUCH_BASE_URL: app.url,
    RETOUCH_API_KEY: account.key,
    ...env,
  });
}

beforeAll(async () => {
  stripe = await new StripeLoopback([
    { id: "price_pack100", unitAmount: 900, currency: "usd" },
    { id: "price_starter", unitAmount: 1900, currency: "usd", interval: "month" },
  ]).start();
  app = await startTestApp(
    stripe.env({ RETOUCH_CREDIT_PACKS: "100:price_pack100", RETOUCH_PLAN_PRICES: "starter:price_starter" }),
  );
  home = await mkdtemp(path.join(os.tmpdir(), "retouch-cli-billing-"));
  account = await keyedAccount(app);
}, 120_000);
afterAll(async () => {
  await app?.close();
  await stripe?.close();
  await rm(home, { recursive: true, force: true });
});

describe("retouch buy / plan / billing", () => {
  it("buy prints the pack's checkout URL; paid, billing shows the credits and the purchase", async () => {
    const bought = await cli(["buy", "100"]);
    expect(bought.code, bought.stderr).toBe(0);
    const url = bought.stdout.trim();
    expect(url).toMatch(/^https:\/\/checkout\.stripe\.com\/c\/pay\/cs_test_/);
    const paid = stripe.event("checkout.session.completed", stripe.completeSession(stripe.sessionOfUrl(url)));
    const delivered = await request(app.url, "POST", "/webhooks/stripe", {
      rawBody: paid.payload,
      headers: { "content-type": "application/json", "stripe-signature": paid.signature },
    });
    expect(delivered.status).toBe(200);

    const human = await cli(["billing"]);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/Plan:\s+free \(5 images a minute, 3 at once\)/);
    expect(human.stdout).toMatch(/Credits:\s+110/);
    expect(human.stdout).toMatch(/100 credits\s+\$9\.00/);
    expect(human.stdout).toMatch(/starter\s+\$19\.00\/month\s+1000 credits a month/);
    expect(human.stdout).toMatch(/credit pack\s+100\s+\$9\.00\s+paid/);
    const json = await cli(["billing", "--json"]);
    expect(JSON.parse(json.stdout)).toEqual((await request(app.url, "GET", "/api/billing", { key: account.key })).body);
  });

  it("plan --open hands the checkout URL to the browser; --portal prints the portal's", async () => {
    const opened = path.join(home, "opened.txt");
    const browser = path.join(home, "browser.sh");
    await writeFile(browser, `#!/bin/sh\necho "$1" > "${opened}"\n`);
    await chmod(browser, 0o755);
    const subscribed = await cli(["plan", "starter", "--open"], { BROWSER: browser });
    expect(subscribed.code, subscribed.stderr).toBe(0);
    const url = subscribed.stdout.trim();
    expect(url).toMatch(/^https:\/\/checkout\.stripe\.com\/c\/pay\//);
    await expect.poll(async () => (await readFile(opened, "utf8").catch(() => "")).trim()).toBe(url);
    const portal = await cli(["billing", "--portal"]);
    expect(portal.code, portal.stderr).toBe(0);
    expect(portal.stdout.trim()).toMatch(/^https:\/\/billing\.stripe\.com\/p\/session\//);
  });

  it("refuses what is not on sale: a usage error for a plan that does not exist, the server's 400 for a missing pack", async () => {
    const gold = await cli(["plan", "gold"]);
    expect(gold.code).toBe(2);
    expect(gold.stderr).toContain('"gold" is not a plan you can buy (starter, core, pro)');
    const odd = await cli(["buy", "42"]);
    expect(odd.code).toBe(1);
    expect(odd.stderr).toContain("There is no 42-credit pack; packs on sale: 100 credits.");
  });
});
