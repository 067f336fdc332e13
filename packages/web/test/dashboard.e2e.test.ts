import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser, BrowserContext, Page } from "playwright-core";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../../test/support/free-port";
import { request } from "../../../test/support/http-client";
import { verificationLinkFor } from "../../../test/support/outbox";
import { startTestApp, type TestApp } from "../../../test/support/test-app";
import { WebhookReceiver } from "../../../test/support/webhook-receiver";
import { ensureWebBuild } from "../scripts/build-if-stale.mjs";
import { webAssetsDirectory } from "../src/assets-directory";
import { launchChromium } from "./support/chromium";
import { expectAccessible, openWatchedPage, screenshot, type WatchedPage } from "./support/page-checks";

/**
 * The dashboard in a real browser (Debian's Chromium through playwright-core)
 * against a real service on loopback: sign up, verify from the mail outbox,
 * create a key and use it, edit a real photograph in the playground, read the
 * jobs and the webhook log, revoke the key. axe-core checks every page.
 *
 * `RETOUCH_SCREENSHOTS=1` also writes each page to docs/dashboard/*.png
 * (docs/dashboard.md shows them).
 */

const rootDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const PHOTO = path.join(rootDir, "packages/engine/test/fixtures/coffee.jpg");
const PASSWORD = "correct horse battery";
const PROMPT = "make it black and white";
const FAILING_PROMPT = "crop to 5000x5000 pixels";

let app: TestApp;
let receiver: WebhookReceiver;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const email = `dashboard-${Date.now().toString(36)}@example.com`;
let key: { id: string; key: string; prefix: string };
let hookedJob: string;
/** The page's script errors and CSP violations, checked at the end. */
let watched: WatchedPage;

/** expect.poll with the patience of a page that loads, renders and calls the service. */
const eventually = <T>(read: () => Promise<T>) => expect.poll(read, { timeout: 15_000, interval: 100 });

async function visit(pathname: string, heading: string): Promise<void> {
  await page.goto(pathname);
  await page.getByRole("heading", { level: 1, name: heading }).waitFor();
}

async function openSection(link: string, heading: string): Promise<void> {
  await page.getByRole("navigation", { name: "Dashboard" }).getByRole("link", { name: link, exact: true }).click();
  await page.getByRole("heading", { level: 1, name: heading }).waitFor();
}

async function waitForMailLink(address: string): Promise<string> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      return await verificationLinkFor(app.outboxDir, address);
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** Mean of each colour channel: a black-and-white picture has all three equal. */
async function channelSpread(bytes: Buffer): Promise<number> {
  const { channels } = await sharp(bytes).stats();
  const means = channels.slice(0, 3).map((channel) => channel.mean);
  return Math.max(...means) - Math.min(...means);
}

beforeAll(async () => {
  // The service serves packages/web/dist: built here when its sources changed since the last build.
  ensureWebBuild({ quiet: true });
  browser = await launchChromium();
  receiver = await new WebhookReceiver().start();
  receiver.script("/hook", [500, 200]);
  const port = await freePort();
  app = await startTestApp(
    {
      PORT: String(port),
      // The browser uses the same origin as the links in the mail, so the session cookie is the same one.
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      RETOUCH_WEBHOOK_ALLOW_INSECURE: "1",
      RETOUCH_WEBHOOK_RETRY_DELAYS: "1s",
      RETOUCH_QUEUE_POLL_INTERVAL: "200ms",
    },
    { dashboardDir: webAssetsDirectory() ?? "" },
  );
  watched = await openWatchedPage(browser, app.url);
  ({ context, page } = watched);
}, 120_000);

afterAll(async () => {
  await context?.close();
  await browser?.close();
  await app?.close();
  await receiver?.stop();
});

describe("the dashboard in a real browser", { timeout: 60_000 }, () => {
  it("welcomes a visitor on the landing page", async () => {
    await visit("/", "Edit images with a sentence");
    await page.getByRole("heading", { name: "What you can ask for" }).waitFor();
    await expectAccessible(page, "landing");
    await screenshot(page, "landing");
  });

  it("signs up, then asks to check the email", async () => {
    await page.getByRole("main").getByRole("link", { name: "Create an account" }).click();
    await page.getByRole("heading", { level: 1, name: "Create your account" }).waitFor();
    await page.getByLabel("Name", { exact: true }).fill("Ada Lovelace");
    await page.getByLabel("Email", { exact: true }).fill(email);
    await page.getByLabel("Password", { exact: true }).fill(PASSWORD);
    await expectAccessible(page, "sign-up");
    await screenshot(page, "sign-up");
    await page.getByRole("button", { name: "Sign up", exact: true }).click();
    await page.getByRole("heading", { level: 1, name: "Check your email" }).waitFor();
    expect(new URL(page.url()).pathname).toBe("/check-email");
    await page.getByText(email).waitFor();
    await expectAccessible(page, "check-email");
    await screenshot(page, "check-email");
  });

  it("verifies the address from the emailed link and lands in the dashboard", async () => {
    const link = new URL(await waitForMailLink(email));
    expect(link.origin).toBe(app.url);
    await page.goto(link.href);
    expect(new URL(page.url()).pathname).toBe("/dashboard");
    await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
    await eventually(() => page.getByTestId("credits").textContent()).toBe("10");
    await expectAccessible(page, "overview");
    await screenshot(page, "overview");
  });

  it("creates an API key, shown once, that works from any HTTP client", async () => {
    await openSection("API keys", "API keys");
    await page.getByLabel("Key name", { exact: true }).fill("laptop");
    await page.getByRole("button", { name: "Create key", exact: true }).click();
    const shown = page.getByTestId("new-key");
    await shown.waitFor();
    const full = (await shown.textContent()) ?? "";
    expect(full).toMatch(/^pk_/);
    await page.getByRole("row", { name: /laptop/ }).waitFor();
    await expectAccessible(page, "keys");
    await screenshot(page, "keys", [shown]);

    const listed = await request(app.url, "GET", "/api/keys", { key: full });
    expect(listed.status, listed.text).toBe(200);
    const row = listed.body.keys.find((candidate: { name: string }) => candidate.name === "laptop");
    expect(full.startsWith(row.prefix.replace(/\.+$/, ""))).toBe(true);
    key = { id: row.id, key: full, prefix: row.prefix };

    // A submission with the key from outside the browser: one credit, and a webhook whose first attempt fails.
    const submitted = await request(app.url, "POST", "/api/process", {
      key: full,
      headers: { "idempotency-key": crypto.randomUUID() },
      body: {
        prompt: "make it sepia",
        image: (await readFile(PHOTO)).toString("base64"),
        webhook_url: `${receiver.url}/hook`,
      },
    });
    expect(submitted.status, submitted.text).toBe(200);
    expect(submitted.body.credits_remaining).toBe(9);
    hookedJob = submitted.body.job_id;
  });

  it("edits a photograph in the playground and shows the result and the new balance", async () => {
    await openSection("Playground", "Playground");
    // The key created on the keys page is this tab's key.
    await page.getByText(key.prefix, { exact: true }).waitFor();
    await page.getByLabel("Image", { exact: true }).setInputFiles(PHOTO);
    await page.getByRole("img", { name: /Your picture, coffee\.jpg/ }).waitFor();
    await page.getByLabel("Prompt", { exact: true }).fill(PROMPT);
    await expectAccessible(page, "playground");
    await page.getByRole("button", { name: "Run edit", exact: true }).click();

    const result = page.getByAltText("Result", { exact: true });
    await result.waitFor({ timeout: 45_000 });
    await eventually(() => page.getByTestId("playground-credits").textContent()).toBe("8");
    // What the page shows is the edit that was asked for: the result's channels are equal (grey), the photo's are not.
    const url = (await result.getAttribute("src")) ?? "";
    const download = await fetch(new URL(url, app.url));
    expect(download.status).toBe(200);
    expect(await channelSpread(Buffer.from(await download.arrayBuffer()))).toBeLessThan(1);
    expect(await channelSpread(await readFile(PHOTO))).toBeGreaterThan(10);
    await eventually(() => result.evaluate((image) => (image as { naturalWidth: number }).naturalWidth)).toBe(600);
    await page.getByRole("link", { name: "Download", exact: true }).waitFor();
    await expectAccessible(page, "playground with a result");
    await screenshot(page, "playground");

    // An edit the picture does not allow fails at run time: the page says why, and the credit comes back.
    await page.getByRole("button", { name: "Back to the picture" }).click();
    await page.getByLabel("Prompt", { exact: true }).fill(FAILING_PROMPT);
    await page.getByRole("button", { name: "Run edit", exact: true }).click();
    await page
      .getByRole("alert")
      .getByText(/failed \(unsupported_instruction\)/)
      .waitFor({ timeout: 45_000 });
    await eventually(() => page.getByTestId("playground-credits").textContent()).toBe("8");
    await expectAccessible(page, "playground with a failure");

    await openSection("Overview", "Overview");
    await eventually(() => page.getByTestId("credits").textContent()).toBe("8");
  });

  it("lists the jobs with their thumbnails", async () => {
    await openSection("Jobs", "Jobs");
    await page.getByRole("img", { name: `Result of “${PROMPT}”` }).waitFor();
    await page.getByText("make it sepia").waitFor();
    // The failed one, with its code and the service's sentence.
    const failed = page.getByRole("listitem").filter({ hasText: FAILING_PROMPT });
    await failed.getByText("Failed", { exact: true }).waitFor();
    await failed.getByText("unsupported_instruction", { exact: true }).waitFor();
    await expectAccessible(page, "jobs");
    await screenshot(page, "jobs");
  });

  it("reveals the webhook secret and shows the delivery log", async () => {
    await receiver.waitFor("/hook", 2, 30_000);
    await openSection("Webhooks", "Webhooks");
    await page.getByRole("button", { name: "Reveal the secret" }).click();
    const secret = await request(app.url, "GET", "/api/webhooks/secret", { key: key.key });
    const shown = page.getByText(secret.body.secret, { exact: true });
    await shown.waitFor();
    // Two attempts (500, then 200), delivered.
    const delivery = page.getByRole("row").filter({ hasText: hookedJob }).filter({ hasText: "Delivered" });
    await delivery.waitFor();
    expect(await delivery.getByRole("cell").nth(2).textContent()).toBe("2");
    expect(await delivery.getByRole("cell").nth(3).textContent()).toContain("200");
    await expectAccessible(page, "webhooks");
    await screenshot(page, "webhooks", [page.locator(".secrets code")]);
  });

  it("fills in the connection snippets with the site's address", async () => {
    await openSection("Connect", "Connect");
    const mcp = page.getByRole("figure", { name: /MCP configuration/ });
    await eventually(() => mcp.textContent()).toContain(`"url": "${app.url}/mcp"`);
    expect(await mcp.textContent()).toContain(`Bearer ${key.prefix}`);
    expect(await page.locator("main").textContent()).not.toContain(key.key);
    await expectAccessible(page, "connect");
    await screenshot(page, "connect");
  });

  it("revokes the key after a confirmation, and the key is refused from then on", async () => {
    await openSection("API keys", "API keys");
    await page
      .getByRole("row", { name: /laptop/ })
      .getByRole("button", { name: "Revoke", exact: true })
      .click();
    const dialog = page.getByRole("dialog");
    await dialog.getByRole("heading", { name: "Revoke “laptop”?" }).waitFor();
    await expectAccessible(page, "keys, revoke confirmation");
    await screenshot(page, "keys-revoke");
    await dialog.getByRole("button", { name: "Revoke key", exact: true }).click();
    await page.getByRole("row", { name: /laptop/ }).waitFor({ state: "detached" });

    const refused = await request(app.url, "GET", "/api/keys", { key: key.key });
    expect(refused.status).toBe(401);
    expect(refused.body.code).toBe("unauthorized");
    // The tab forgot it too.
    await openSection("Playground", "Playground");
    await page.getByRole("button", { name: "Create a key for this tab" }).waitFor();
    expect(await page.getByRole("button", { name: "Run edit", exact: true }).isDisabled()).toBe(true);
  });

  it("signs out, and signs in again", async () => {
    await page.getByRole("button", { name: "Sign out", exact: true }).click();
    await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
    await page.goto("/dashboard/keys");
    await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
    expect(new URL(page.url()).searchParams.get("next")).toBe("/dashboard/keys");
    await page.getByLabel("Email", { exact: true }).fill(email);
    await page.getByLabel("Password", { exact: true }).fill(PASSWORD);
    await expectAccessible(page, "sign-in");
    await screenshot(page, "sign-in");
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByRole("heading", { level: 1, name: "API keys" }).waitFor();
  });

  it("offers the password reset pages", async () => {
    await visit("/forgot-password", "Forgot your password?");
    await page.getByLabel("Email", { exact: true }).fill(email);
    await expectAccessible(page, "forgot-password");
    await screenshot(page, "forgot-password");
    await page.getByRole("button", { name: "Send the link" }).click();
    await page
      .getByRole("status")
      .getByText(/a link to choose a new password is on its way/)
      .waitFor();
    await visit("/reset-password?token=not-a-real-token", "Choose a new password");
    await expectAccessible(page, "reset-password");
  });

  it("ran without a script error or a Content-Security-Policy violation", () => {
    expect(watched.pageErrors).toEqual([]);
    expect(watched.cspViolations).toEqual([]);
  });
});
