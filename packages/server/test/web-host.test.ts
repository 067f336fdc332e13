import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey, keyedAccount, signUp } from "../../../test/support/accounts";
import { type DashboardBuild, dashboardBuild } from "../../../test/support/dashboard-build";
import { request } from "../../../test/support/http-client";
import { verificationLinkFor } from "../../../test/support/outbox";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

/**
 * The host serving a browser: the built dashboard and its client routes, the
 * emailed link's landing, and CORS for a page on an allowed origin.
 * Real server on loopback, real PostgreSQL, a directory laid out as Vite builds.
 */

const APP_ORIGIN = "https://app.example.com";
/** What a browser sends when it navigates to a page. */
const PAGE_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

let app: TestApp;
let build: DashboardBuild;
beforeAll(async () => {
  build = await dashboardBuild();
  app = await startTestApp({ RETOUCH_CORS_ORIGINS: APP_ORIGIN }, { role: "api", dashboardDir: build.dir });
});
afterAll(async () => {
  await app.close();
  await build.remove();
});

const open = (path: string, init: RequestInit = {}) =>
  fetch(`${app.url}${path}`, { redirect: "manual", ...init, headers: { accept: PAGE_ACCEPT, ...init.headers } });

describe("the dashboard at the site URL", () => {
  it("serves index.html at / (revalidated every time) and its hashed assets cached for good", async () => {
    const index = await open("/");
    expect(index.status).toBe(200);
    expect(index.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(index.headers.get("cache-control")).toBe("no-cache");
    expect(await index.text()).toBe(build.indexHtml);

    // A browser asks for a module script with Accept: */*.
    const script = await fetch(`${app.url}${build.scriptPath}`, { headers: { accept: "*/*" } });
    expect(script.status).toBe(200);
    expect(script.headers.get("content-type")).toMatch(/^text\/javascript/);
    expect(script.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(await script.text()).toBe(build.script);

    const icon = await fetch(`${app.url}/favicon.svg`);
    expect(icon.status).toBe(200);
    expect(icon.headers.get("content-type")).toMatch(/^image\/svg\+xml/);
    expect(icon.headers.get("cache-control")).toBe("no-cache");

    const head = await fetch(`${app.url}/`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(Number(head.headers.get("content-length"))).toBe(Buffer.byteLength(build.indexHtml));
    expect(await head.text()).toBe("");
  });

  it.each([
    "/sign-up",
    "/sign-in?next=%2Fdashboard",
    "/check-email",
    "/reset-password?token=abc",
    "/dashboard",
    "/dashboard/keys",
  ])("answers a page request for the client route %s with index.html", async (route) => {
    const response = await open(route);
    expect(response.status).toBe(200);
    expect(response.headers.get("cache-control")).toBe("no-cache");
    expect(response.headers.get("vary")).toMatch(/Accept/);
    expect(await response.text()).toBe(build.indexHtml);
  });

  it("puts the pages under the Content-Security-Policy", async () => {
    const csp = (await open("/dashboard")).headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
  });
});

describe("the emailed verification link", () => {
  it("verifies the address and sends a browser without a session to sign in, with no session cookie (login CSRF)", async () => {
    // Opened on another device than the one that signed up (or someone else's link sent to a victim): no cookie.
    const account = await signUp(app.url);
    const link = new URL(await verificationLinkFor(app.outboxDir, account.email));
    const landing = await open(`${link.pathname}${link.search}`);
    expect(landing.status).toBe(303);
    expect(landing.headers.get("location")).toBe("/sign-in?verified=1");
    expect(landing.headers.get("cache-control")).toBe("no-store");
    expect(landing.headers.getSetCookie()).toEqual([]);
    expect((await app.services.stores.users.findById(account.userId))?.emailVerified).toBe(true);

    // The account's own session (from sign-up) is now a verified one: the dashboard can create a key with it.
    const key = await request(app.url, "POST", "/api/keys", { cookie: account.cookie, body: { name: "from the dashboard" } });
    expect(key.status, key.text).toBe(201);
    const signInPage = await open("/sign-in?verified=1");
    expect(await signInPage.text()).toBe(build.indexHtml);
  });

  it("keeps a browser that is already signed in to that account in its session", async () => {
    const account = await signUp(app.url);
    const link = new URL(await verificationLinkFor(app.outboxDir, account.email));
    const landing = await open(`${link.pathname}${link.search}`, { headers: { cookie: account.cookie } });
    expect(landing.status).toBe(303);
    expect(landing.headers.get("location")).toBe("/dashboard");
    // The same session, no new one: no other session cookie is set.
    expect(landing.headers.getSetCookie().filter((value) => !value.startsWith(`${account.cookie};`))).toEqual([]);
    const session = await request(app.url, "GET", "/auth/get-session", { cookie: account.cookie });
    expect(session.body.user).toMatchObject({ email: account.email, email_verified: true });
    await createKey(app.url, account);
  });

  it("does not switch a browser signed in to another account into the link's account", async () => {
    const mine = await signUp(app.url);
    const attacker = await signUp(app.url);
    const link = new URL(await verificationLinkFor(app.outboxDir, attacker.email));
    const landing = await open(`${link.pathname}${link.search}`, { headers: { cookie: mine.cookie } });
    expect(landing.status).toBe(303);
    expect(landing.headers.get("location")).toBe("/sign-in?verified=1");
    expect(landing.headers.getSetCookie()).toEqual([]);
    const session = await request(app.url, "GET", "/auth/get-session", { cookie: mine.cookie });
    expect(session.body.user.email).toBe(mine.email);
    expect((await app.services.stores.users.findById(attacker.userId))?.emailVerified).toBe(true);
  });
});

describe("CORS for a page on an allowed origin", () => {
  it("answers the preflight of a keyed submission, without credentials", async () => {
    const preflight = await fetch(`${app.url}/api/process`, {
      method: "OPTIONS",
      headers: {
        origin: APP_ORIGIN,
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization,content-type,idempotency-key",
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe(APP_ORIGIN);
    expect(preflight.headers.get("access-control-allow-methods")?.split(",")).toEqual(
      expect.arrayContaining(["GET", "POST", "DELETE"]),
    );
    const allowed = preflight.headers.get("access-control-allow-headers")?.toLowerCase().split(",") ?? [];
    expect(allowed).toEqual(expect.arrayContaining(["authorization", "content-type", "idempotency-key"]));
    expect(preflight.headers.get("access-control-max-age")).toBe("600");
    expect(preflight.headers.get("vary")).toMatch(/Origin/);
    expect(preflight.headers.get("access-control-allow-credentials")).toBeNull();
  });

  it("answers the preflight of a result download (a signed link read with fetch)", async () => {
    const preflight = await fetch(`${app.url}/files/results/job_x.png?expires=1&signature=x`, {
      method: "OPTIONS",
      headers: { origin: APP_ORIGIN, "access-control-request-method": "GET" },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe(APP_ORIGIN);
  });

  it("lets the page read REST and tRPC answers, their request id and Retry-After", async () => {
    const { key } = await keyedAccount(app);
    const headers = { origin: APP_ORIGIN, authorization: `Bearer ${key}` };

    const rest = await fetch(`${app.url}/api/keys`, { headers });
    expect(rest.status).toBe(200);
    expect(rest.headers.get("access-control-allow-origin")).toBe(APP_ORIGIN);
    expect(rest.headers.get("access-control-expose-headers")?.split(",")).toEqual([
      "X-Request-Id",
      "Retry-After",
      "X-RateLimit-Limit",
      "X-RateLimit-Remaining",
      "X-RateLimit-Reset",
    ]);
    expect(rest.headers.get("vary")).toMatch(/Origin/);
    expect(rest.headers.get("access-control-allow-credentials")).toBeNull();

    const trpc = await fetch(`${app.url}/trpc/keys.list`, { headers });
    expect(trpc.status).toBe(200);
    expect(trpc.headers.get("access-control-allow-origin")).toBe(APP_ORIGIN);

    // A refusal is readable too: the page can show the code and honour Retry-After.
    const refused = await fetch(`${app.url}/api/keys`, { headers: { origin: APP_ORIGIN, authorization: "Bearer pk_wrong" } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get("access-control-allow-origin")).toBe(APP_ORIGIN);
  });
});

describe("every response", () => {
  it("carries its own X-Request-Id, whoever answered it", async () => {
    const answers = await Promise.all([
      open("/"),
      fetch(`${app.url}${build.scriptPath}`),
      fetch(`${app.url}/api/nope`),
      fetch(`${app.url}/api/capabilities`),
      fetch(`${app.url}/trpc/service.capabilities`),
      fetch(`${app.url}/mcp`),
      fetch(`${app.url}/healthz`),
      fetch(`${app.url}/openapi.json`),
      fetch(`${app.url}/api/keys`, {
        method: "OPTIONS",
        headers: { origin: APP_ORIGIN, "access-control-request-method": "GET" },
      }),
      open("/auth/verify-email?token=nope"),
    ]);
    const ids = answers.map((response) => response.headers.get("x-request-id"));
    for (const id of ids) expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("is logged as method, path, status and time, without its query string", async () => {
    const response = await fetch(`${app.url}/api/process/status?job_id=job_secretlooking`);
    await response.text();
    const id = response.headers.get("x-request-id") as string;
    // Written when the response is over, which the client may see a moment earlier.
    await expect.poll(() => app.logs.some((candidate) => candidate.includes(id))).toBe(true);
    const line = app.logs.find((candidate) => candidate.includes(id)) ?? "";
    expect(JSON.parse(line)).toMatchObject({ msg: "request", method: "GET", path: "/api/process/status", status: 401 });
    expect(JSON.parse(line).ms).toBeTypeOf("number");
    expect(line).not.toContain("job_secretlooking");
  });
});
