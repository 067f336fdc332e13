import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signUp, signUpVerified, type TestAccount } from "../../../test/support/accounts";
import { freePort } from "../../../test/support/free-port";
import { MemoryOAuthClientProvider } from "../../../test/support/oauth-client";
import { verificationLinkFor } from "../../../test/support/outbox";
import { startTestApp, type TestApp } from "../../../test/support/test-app";
import { ensureWebBuild } from "../scripts/build-if-stale.mjs";
import { webAssetsDirectory } from "../src/assets-directory";
import { launchChromium } from "./support/chromium";
import { expectAccessible, openWatchedPage, screenshot, type WatchedPage } from "./support/page-checks";

/**
 * An MCP client signing a person in with OAuth, the person's side in a real
 * browser (Debian's Chromium through playwright-core, as the dashboard's tests
 * do): the official SDK's transport meets the 401, registers and opens the
 * authorization URL; the person signs in on the dashboard, approves on its
 * consent page; the browser lands on the client's loopback callback with the
 * code; the client finishes and calls the tools. Then the person disconnects
 * the app in the dashboard, and denies another.
 */

let app: TestApp;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let account: TestAccount;
let callback: Server;
let callbackUrl: string;
/** Query strings the client's callback received, newest last. */
const callbacks: URLSearchParams[] = [];
/** The page's script errors and CSP violations, checked at the end. */
let watched: WatchedPage;

/** Opens the authorization URL as the client's "open the browser" would, and waits for the page it ends on. */
async function openAuthorization(url: URL, heading: string): Promise<void> {
  await page.goto(url.href);
  await page.getByRole("heading", { level: 1, name: heading }).waitFor();
}

/** Clicks the consent page's button; the browser arrives at the client's callback: the query it brought. */
async function answer(button: "Approve" | "Deny"): Promise<URLSearchParams> {
  const before = callbacks.length;
  await page.getByRole("button", { name: button, exact: true }).click();
  await page.waitForURL((url) => url.href.startsWith(callbackUrl));
  await expect.poll(() => callbacks.length).toBe(before + 1);
  return callbacks[callbacks.length - 1] as URLSearchParams;
}

beforeAll(async () => {
  ensureWebBuild({ quiet: true });
  browser = await launchChromium();
  // The MCP client's loopback redirect listener, as desktop clients run one.
  callback = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    // The browser also asks this origin for /favicon.ico.
    if (url.pathname === "/callback") callbacks.push(url.searchParams);
    res
      .writeHead(200, { "content-type": "text/html" })
      .end("<!doctype html><title>Done</title><p>You can close this window.</p>");
  });
  await new Promise<void>((resolve) => callback.listen(0, "127.0.0.1", resolve));
  callbackUrl = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`;
  const port = await freePort();
  app = await startTestApp(
    { PORT: String(port), PUBLIC_BASE_URL: `http://127.0.0.1:${port}` },
    { dashboardDir: webAssetsDirectory() ?? "" },
  );
  account = await signUpVerified(app);
  watched = await openWatchedPage(browser, app.url);
  ({ context, page } = watched);
}, 120_000);

afterAll(async () => {
  await context?.close();
  await browser?.close();
  await app?.close();
  await new Promise((resolve) => callback?.close(resolve));
});

describe("connecting an MCP client through the dashboard", { timeout: 60_000 }, () => {
  const provider = () => new MemoryOAuthClientProvider(callbackUrl, "Chromium Agent");
  const endpoint = () => new URL(`${app.url}/mcp`);
  let agent: MemoryOAuthClientProvider;

  it("sign-in, consent, Approve: the client gets a token and calls the tools", async () => {
    agent = provider();
    const first = new StreamableHTTPClientTransport(endpoint(), { authProvider: agent });
    await expect(new Client({ name: "chromium-agent", version: "1.0.0" }).connect(first)).rejects.toThrow(UnauthorizedError);

    // Not signed in: the dashboard's sign-in page says why the person is there.
    await openAuthorization(agent.authorizationUrl as URL, "Sign in");
    await page.getByText("An app asks to connect to your Retouch account").waitFor();
    await expectAccessible(page, "sign-in for an app");
    await page.getByLabel("Email", { exact: true }).fill(account.email);
    await page.getByLabel("Password", { exact: true }).fill(account.password);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();

    await page.getByRole("heading", { level: 1, name: "Connect Chromium Agent to Retouch?" }).waitFor();
    expect(new URL(page.url()).pathname).toBe("/oauth/consent");
    const asks = page.getByRole("list", { name: "What the app asks for" });
    await asks.getByText(/edit images/).waitFor();
    await asks.getByText(/Stay connected/).waitFor();
    await page.getByText(`Signed in as ${account.email}.`).waitFor();
    await expectAccessible(page, "consent");
    await screenshot(page, "oauth-consent");
    const approved = await answer("Approve");
    expect(approved.get("error")).toBeNull();
    await first.finishAuth(approved.get("code") as string);

    const client = new Client({ name: "chromium-agent", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(endpoint(), { authProvider: agent }));
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toContain("edit_image");
    const status = await client.callTool({ name: "get_job_status", arguments: { job_id: `job_${"0".repeat(26)}` } });
    // The account's own lookup answered: an unknown job of this account, not a refused credential.
    expect(status.isError).toBe(true);
    expect(JSON.stringify(status.content)).toContain("not_found");
    await client.close();
  });

  it("Connected apps lists it; Disconnect ends its access at once", async () => {
    await page.goto("/dashboard");
    await page.getByRole("navigation", { name: "Dashboard" }).getByRole("link", { name: "Connected apps", exact: true }).click();
    await page.getByRole("heading", { level: 1, name: "Connected apps" }).waitFor();
    const row = page.getByRole("row", { name: /Chromium Agent/ });
    await row.waitFor();
    await expectAccessible(page, "connected apps");
    await screenshot(page, "connected-apps");
    await row.getByRole("button", { name: "Disconnect", exact: true }).click();
    await page.getByRole("heading", { name: "Disconnect “Chromium Agent”?" }).waitFor();
    await page.getByRole("button", { name: "Disconnect app", exact: true }).click();
    await page.getByText("No connected apps.").waitFor();

    // Its access token is refused now, and its refresh token too: the SDK has to send the person again.
    const refused = new StreamableHTTPClientTransport(endpoint(), { authProvider: agent });
    await expect(new Client({ name: "chromium-agent", version: "1.0.0" }).connect(refused)).rejects.toThrow(UnauthorizedError);
  });

  it("Deny sends the browser back to the client with access_denied", async () => {
    const denied = provider();
    const transport = new StreamableHTTPClientTransport(endpoint(), { authProvider: denied });
    await expect(new Client({ name: "denied-agent", version: "1.0.0" }).connect(transport)).rejects.toThrow(UnauthorizedError);
    // Signed in already: straight to the consent page.
    await openAuthorization(denied.authorizationUrl as URL, "Connect Chromium Agent to Retouch?");
    const refusal = await answer("Deny");
    expect(refusal.get("error")).toBe("access_denied");
    expect(refusal.get("code")).toBeNull();
  });

  it("a return address the app never registered: the person sees why, and nothing reaches that address", async () => {
    const stray = provider();
    const transport = new StreamableHTTPClientTransport(endpoint(), { authProvider: stray });
    await expect(new Client({ name: "stray-agent", version: "1.0.0" }).connect(transport)).rejects.toThrow(UnauthorizedError);
    const url = new URL(stray.authorizationUrl as URL);
    url.searchParams.set("redirect_uri", "http://127.0.0.1:9/elsewhere");
    const before = callbacks.length;
    await openAuthorization(url, "The app's request was refused");
    expect(new URL(page.url()).pathname).toBe("/oauth/error");
    await page.getByRole("alert").getByText("invalid_redirect", { exact: true }).waitFor();
    await expectAccessible(page, "oauth error");
    await screenshot(page, "oauth-error");
    expect(callbacks.length).toBe(before);
  });

  it("the error page shows only its own words for a code, never text from the link (content spoofing)", async () => {
    const bait = "Your account is locked. Call +1 555 0100 to unlock it";
    for (const [code, expected] of [
      ["x", "The app's request could not be completed."],
      ["invalid_client", "The app is not known to this service"],
      [bait, "The app's request could not be completed."],
    ] as const) {
      const query = new URLSearchParams({ error: code, error_description: bait });
      await page.goto(`/oauth/error?${query}`);
      await page.getByRole("heading", { level: 1, name: "The app's request was refused" }).waitFor();
      await page.getByRole("alert").getByText(expected, { exact: false }).waitFor();
      expect(await page.locator("body").textContent()).not.toContain("Call +1 555");
    }
    await expectAccessible(page, "oauth error, unknown code");
  });

  it("ran without a script error or a CSP violation", () => {
    expect(watched.pageErrors).toEqual([]);
    expect(watched.cspViolations).toEqual([]);
  });
});

describe("an attacker's verification link opened from another site (login CSRF)", { timeout: 60_000 }, () => {
  let attackerSite: Server;
  afterAll(() => new Promise((resolve) => attackerSite?.close(resolve)));

  it("verifies the attacker's address but signs the visitor's browser into nothing", async () => {
    // The attacker signs up with an address they own and keeps the link instead of opening it.
    const attacker = await signUp(app.url);
    const link = await verificationLinkFor(app.outboxDir, attacker.email);
    // Their page, on another site (localhost is not the same site as 127.0.0.1), sends the visitor to it.
    attackerSite = createServer((_req, res) => {
      res
        .writeHead(200, { "content-type": "text/html" })
        .end(`<!doctype html><title>Free credits</title><a id="go" href="${link.replace(/&/g, "&amp;")}">Claim</a>`);
    });
    await new Promise<void>((resolve) => attackerSite.listen(0, "127.0.0.1", resolve));
    const sitePort = (attackerSite.address() as AddressInfo).port;

    // A visitor with no session (a fresh browser profile).
    const visitor = await openWatchedPage(browser, app.url);
    try {
      await visitor.page.goto(`http://localhost:${sitePort}/`);
      await visitor.page.click("#go");
      await visitor.page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
      const landed = new URL(visitor.page.url());
      expect(landed.pathname).toBe("/sign-in");
      expect(landed.searchParams.get("verified")).toBe("1");
      await visitor.page.getByText("Your email address is verified. Sign in to continue.").waitFor();
      const cookies = await visitor.context.cookies(app.url);
      expect(cookies.filter((cookie) => cookie.name.includes("session_token"))).toEqual([]);
      expect((await app.services.stores.users.findById(attacker.userId))?.emailVerified).toBe(true);
      await expectAccessible(visitor.page, "sign-in, verified notice");
      expect(visitor.pageErrors).toEqual([]);
      expect(visitor.cspViolations).toEqual([]);
    } finally {
      await visitor.context.close();
    }
  });
});
