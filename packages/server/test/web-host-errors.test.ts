import { createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signUp } from "../../../test/support/accounts";
import { type DashboardBuild, dashboardBuild } from "../../../test/support/dashboard-build";
import { verificationLinkFor } from "../../../test/support/outbox";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

/**
 * What the host answers a browser when something is missing or wrong: API
 * paths keep their JSON 404, a verification link that does not work lands on
 * the sign-in page, and a service without a built dashboard says so.
 */

const PAGE_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
const AUTH_SECRET = "a-test-secret-that-is-long-enough-0123456789";

let app: TestApp;
let bare: TestApp;
let build: DashboardBuild;
beforeAll(async () => {
  build = await dashboardBuild();
  [app, bare] = await Promise.all([
    startTestApp({ RETOUCH_AUTH_SECRET: AUTH_SECRET }, { role: "api", dashboardDir: build.dir }),
    startTestApp({}, { role: "api" }),
  ]);
});
afterAll(async () => {
  await Promise.all([app.close(), bare.close()]);
  await build.remove();
});

const open = (base: string, path: string, init: RequestInit = {}) =>
  fetch(`${base}${path}`, { redirect: "manual", ...init, headers: { accept: PAGE_ACCEPT, ...init.headers } });

/** A verification token as better-auth signs one (HS256 with the auth secret), already expired. */
function expiredVerificationToken(email: string): string {
  const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const now = Math.floor(Date.now() / 1000);
  const unsigned = `${encode({ alg: "HS256", typ: "JWT" })}.${encode({ email, iat: now - 7200, exp: now - 3600 })}`;
  return `${unsigned}.${createHmac("sha256", AUTH_SECRET).update(unsigned).digest("base64url")}`;
}

describe("API paths keep their JSON 404, even for a browser", () => {
  it.each([
    ["/api/nope", 404],
    ["/api/keys/key_1/extra", 404],
    ["/trpc", 404],
    ["/trpc/nope.nothing", 404],
    ["/auth/nope", 404],
    ["/files/results/nope.png", 403],
    ["/.well-known/nope", 404],
    ["/docs/nope", 404],
    ["/healthz/nope", 404],
    ["/mcp/nope", 404],
  ])("GET %s answers %i in JSON", async (path, status) => {
    const response = await open(app.url, path);
    expect(response.status).toBe(status);
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await response.text()).not.toContain("<!doctype html>");
  });

  it("answers a request that is not for a page with the JSON 404, not index.html", async () => {
    for (const init of [
      { headers: { accept: "application/json" } },
      { headers: { accept: "*/*" } },
      { method: "POST" },
      { method: "DELETE" },
    ]) {
      const response = await fetch(`${app.url}/dashboard/keys`, init);
      expect(response.status, JSON.stringify(init)).toBe(404);
      expect(await response.json()).toEqual({ code: "not_found", message: expect.stringContaining("/dashboard/keys") });
    }
    // With a body, the edge refuses it first: no route there takes one (413, unread), in JSON too.
    const withBody = await fetch(`${app.url}/dashboard/keys`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(withBody.status).toBe(413);
    expect(await withBody.json()).toEqual({ code: "payload_too_large", message: "POST /dashboard/keys takes no request body." });
  });

  it("answers a missing asset with 404, never with index.html", async () => {
    const response = await fetch(`${app.url}/assets/index-00000000.js`, { headers: { accept: "*/*" } });
    expect(response.status).toBe(404);
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  });

  it("refuses to serve anything outside the build directory", async () => {
    for (const path of ["/..%2f..%2fetc%2fpasswd", "/assets/..%2F..%2Findex.html", "/%2e%2e/package.json"]) {
      const response = await fetch(`${app.url}${path}`, { headers: { accept: "*/*" } });
      expect(response.status, path).toBe(404);
    }
  });
});

describe("a verification link that does not work, with the dashboard served", () => {
  it("lands an expired link on /sign-in?verify_error=expired, signed out and unverified", async () => {
    const account = await signUp(app.url);
    const response = await open(app.url, `/auth/verify-email?token=${expiredVerificationToken(account.email)}`);
    expect(response.status).toBe(303);
    expect(response.headers.get("location")).toBe("/sign-in?verify_error=expired");
    expect(response.headers.getSetCookie()).toEqual([]);
    expect((await app.services.stores.users.findById(account.userId))?.emailVerified).toBe(false);
  });

  it("lands a tampered or incomplete link on /sign-in?verify_error=invalid", async () => {
    const account = await signUp(app.url);
    const token = new URL(await verificationLinkFor(app.outboxDir, account.email)).searchParams.get("token") as string;
    for (const path of [`/auth/verify-email?token=${token.slice(0, -3)}abc`, "/auth/verify-email", "/auth/verify-email?token="]) {
      const response = await open(app.url, path);
      expect(response.status, path).toBe(303);
      expect(response.headers.get("location")).toBe("/sign-in?verify_error=invalid");
      expect(response.headers.getSetCookie()).toEqual([]);
    }
    expect((await app.services.stores.users.findById(account.userId))?.emailVerified).toBe(false);
  });
});

describe("without a built dashboard", () => {
  it("answers / with a page that says the dashboard is not built and how to build it", async () => {
    // `/` is a page whatever the client asks for: curl sees it too.
    for (const accept of [PAGE_ACCEPT, "*/*"]) {
      const response = await open(bare.url, "/", { headers: { accept } });
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
      const html = await response.text();
      expect(html).toContain("dashboard is not built");
      expect(html).toContain("pnpm --filter @retouch/web build");
    }
    const route = await open(bare.url, "/dashboard/keys");
    expect(await route.text()).toContain("dashboard is not built");
    const api = await open(bare.url, "/api/nope");
    expect(api.status).toBe(404);
    expect(api.headers.get("content-type")).toMatch(/^application\/json/);
  });

  it("answers a verification link with a page that asks to sign in (no session cookie), not a redirect into nothing", async () => {
    const account = await signUp(bare.url);
    const link = new URL(await verificationLinkFor(bare.outboxDir, account.email));
    const response = await open(bare.url, `${link.pathname}${link.search}`);
    expect(response.status).toBe(200);
    const html = await response.text();
    expect(html).toContain("is verified");
    expect(html).toContain("please sign in");
    expect(response.headers.getSetCookie().some((cookie) => cookie.includes(".session_token="))).toBe(false);
  });

  it("sends no CORS header when RETOUCH_CORS_ORIGINS is unset: a preflight meets the 404", async () => {
    const preflight = await fetch(`${bare.url}/api/keys`, {
      method: "OPTIONS",
      headers: { origin: "https://app.example.com", "access-control-request-method": "POST" },
    });
    expect(preflight.status).toBe(404);
    expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
    const actual = await fetch(`${bare.url}/api/capabilities`, { headers: { origin: "https://app.example.com" } });
    expect(actual.status).toBe(200);
    expect(actual.headers.get("access-control-allow-origin")).toBeNull();
  });
});
