import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type KeyedAccount, keyedAccount, signUp, uniqueEmail } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

/**
 * What keeps a browser safe: CORS only for the configured origins and never
 * with credentials, the session cookie refused on state changes sent from
 * other sites, and the security headers and Content-Security-Policy.
 */

const APP_ORIGIN = "https://app.example.com";
const EVIL_ORIGIN = "https://evil.example.net";
/** The service's public address: its origin is not the loopback address the tests send to. */
const PUBLIC = "https://retouch.example.com";

let app: TestApp;
let account: KeyedAccount;
beforeAll(async () => {
  app = await startTestApp({ RETOUCH_CORS_ORIGINS: APP_ORIGIN, PUBLIC_BASE_URL: PUBLIC }, { role: "api" });
  account = await keyedAccount(app);
});
afterAll(() => app.close());

const keyNames = async () =>
  (await request(app.url, "GET", "/api/keys", { key: account.key })).body.keys.map((key: { name: string }) => key.name);

describe("CORS", () => {
  it("gives a page on another origin nothing: no Access-Control-Allow-Origin on the preflight or the answer", async () => {
    const preflight = await fetch(`${app.url}/api/process`, {
      method: "OPTIONS",
      headers: {
        origin: EVIL_ORIGIN,
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization",
      },
    });
    expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
    const answer = await fetch(`${app.url}/api/keys`, {
      headers: { origin: EVIL_ORIGIN, authorization: `Bearer ${account.key}` },
    });
    expect(answer.headers.get("access-control-allow-origin")).toBeNull();
    // Origins are compared whole: a look-alike is another origin.
    for (const origin of [`${APP_ORIGIN}.evil.example.net`, "http://app.example.com", "https://app.example.com:8443", "null"]) {
      const response = await fetch(`${app.url}/api/capabilities`, { headers: { origin } });
      expect(response.headers.get("access-control-allow-origin"), origin).toBeNull();
    }
  });

  it("never allows credentials, even for the allowed origin and a cookie", async () => {
    const preflight = await fetch(`${app.url}/api/keys`, {
      method: "OPTIONS",
      headers: { origin: APP_ORIGIN, "access-control-request-method": "POST" },
    });
    expect(preflight.headers.get("access-control-allow-origin")).toBe(APP_ORIGIN);
    expect(preflight.headers.get("access-control-allow-credentials")).toBeNull();
    const answer = await fetch(`${app.url}/api/keys`, { headers: { origin: APP_ORIGIN, cookie: account.cookie } });
    expect(answer.headers.get("access-control-allow-credentials")).toBeNull();
  });

  it("is only on the API: not on sign-in, the pages, the documents or /healthz", async () => {
    const preflight = await fetch(`${app.url}/auth/sign-in/email`, {
      method: "OPTIONS",
      headers: { origin: APP_ORIGIN, "access-control-request-method": "POST" },
    });
    expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
    for (const path of ["/", "/healthz", "/llms.txt", "/openapi.json", "/auth/verify-email?token=x"]) {
      const response = await fetch(`${app.url}${path}`, { headers: { origin: APP_ORIGIN }, redirect: "manual" });
      expect(response.headers.get("access-control-allow-origin"), path).toBeNull();
    }
  });
});

describe("state changes with the session cookie from another site (CSRF)", () => {
  const createKeyFrom = (headers: Record<string, string>, name = "csrf") =>
    request(app.url, "POST", "/api/keys", { cookie: account.cookie, headers, body: { name } });

  it.each([
    ["a foreign Origin", { origin: EVIL_ORIGIN }],
    ["an allowed CORS origin (CORS is for keys, not cookies)", { origin: APP_ORIGIN }],
    ["Origin: null (a sandboxed frame)", { origin: "null" }],
    ["a sibling site (Sec-Fetch-Site: same-site)", { "sec-fetch-site": "same-site" }],
    ["another site (Sec-Fetch-Site: cross-site)", { "sec-fetch-site": "cross-site" }],
    ["only a foreign Referer", { referer: `${EVIL_ORIGIN}/page` }],
  ])("refuses a key creation from %s with 403, and creates nothing", async (_label, headers) => {
    const before = await keyNames();
    const response = await createKeyFrom(headers);
    expect(response.status).toBe(403);
    expect(response.body).toEqual({ code: "cross_site_request", message: expect.stringMatching(/API key/) });
    expect(await keyNames()).toEqual(before);
  });

  it("refuses a revocation and a tRPC mutation from a foreign page, and the key keeps working", async () => {
    const { id } = (await request(app.url, "POST", "/api/keys", { key: account.key, body: { name: "target" } })).body;
    const revoke = await request(app.url, "DELETE", `/api/keys/${id}`, {
      cookie: account.cookie,
      headers: { origin: EVIL_ORIGIN },
    });
    expect(revoke.status).toBe(403);
    expect(revoke.body.code).toBe("cross_site_request");
    const trpc = await request(app.url, "POST", "/trpc/keys.create", {
      cookie: account.cookie,
      headers: { origin: EVIL_ORIGIN },
      body: { name: "via trpc" },
    });
    expect(trpc.status).toBe(403);
    expect(trpc.body.error.data).toMatchObject({ code: "cross_site_request", httpStatus: 403 });
    const names = await keyNames();
    expect(names).toContain("target");
    expect(names).not.toContain("via trpc");
  });

  it.each([
    ["PUBLIC_BASE_URL's origin", () => ({ origin: PUBLIC })],
    ["the origin the request was sent to", () => ({ origin: app.url })],
    ["Sec-Fetch-Site: same-origin", () => ({ "sec-fetch-site": "same-origin" })],
    ["a Referer on this service", () => ({ referer: `${PUBLIC}/dashboard/keys` })],
    ["no browser headers at all (curl, the SDK, the CLI)", () => ({})],
  ])("accepts the same mutation from %s", async (label, headers) => {
    const response = await createKeyFrom(headers(), label);
    expect(response.status, response.text).toBe(201);
    expect(await keyNames()).toContain(label);
  });

  it("accepts a bearer key from any origin (a browser never sends one on its own), cookie or not", async () => {
    const response = await request(app.url, "POST", "/api/keys", {
      key: account.key,
      cookie: account.cookie,
      headers: { origin: EVIL_ORIGIN },
      body: { name: "keyed" },
    });
    expect(response.status).toBe(201);
  });

  it("lets a foreign page read nothing-changing requests: GET with the cookie is not refused", async () => {
    const response = await request(app.url, "GET", "/api/keys", { cookie: account.cookie, headers: { origin: EVIL_ORIGIN } });
    expect(response.status).toBe(200);
  });

  it("refuses sign-up and sign-in from a foreign page (no session planted in the visitor's browser)", async () => {
    const email = uniqueEmail("planted");
    const signUpFromEvil = await request(app.url, "POST", "/auth/sign-up/email", {
      headers: { origin: EVIL_ORIGIN },
      body: { email, password: "correct horse battery", name: "Planted" },
    });
    expect(signUpFromEvil.status).toBe(403);
    expect(signUpFromEvil.body.code).toBe("cross_site_request");
    expect(signUpFromEvil.headers.getSetCookie()).toEqual([]);
    expect(await app.services.stores.users.findByEmail(email)).toBeUndefined();

    const signInFromEvil = await request(app.url, "POST", "/auth/sign-in/email", {
      headers: { "sec-fetch-site": "cross-site" },
      body: { email: account.email, password: account.password },
    });
    expect(signInFromEvil.status).toBe(403);
    expect(signInFromEvil.headers.getSetCookie()).toEqual([]);

    const trpcSignIn = await request(app.url, "POST", "/trpc/auth.signIn", {
      headers: { origin: EVIL_ORIGIN },
      body: { email: account.email, password: account.password },
    });
    expect(trpcSignIn.status).toBe(403);
    expect(trpcSignIn.body.error.data.code).toBe("cross_site_request");
    expect(trpcSignIn.headers.getSetCookie()).toEqual([]);

    // The service's own page signs up as before.
    const own = await signUp(app.url, { email });
    expect(own.cookie).toMatch(/session_token=/);
  });
});

describe("security headers", () => {
  const policy = (response: Response) =>
    new Map(
      (response.headers.get("content-security-policy") ?? "").split(";").map((directive) => {
        const [name, ...values] = directive.trim().split(/\s+/);
        return [name as string, values];
      }),
    );

  it("are on every response: pages, JSON, errors, documents", async () => {
    for (const path of ["/", "/api/capabilities", "/api/nope", "/openapi.json", "/docs", "/healthz"]) {
      const response = await fetch(`${app.url}${path}`);
      expect(response.headers.get("x-content-type-options"), path).toBe("nosniff");
      expect(response.headers.get("x-frame-options"), path).toBe("DENY");
      expect(response.headers.get("referrer-policy"), path).toBe("same-origin");
      expect(response.headers.get("cross-origin-opener-policy"), path).toBe("same-origin");
      expect(policy(response).get("frame-ancestors"), path).toEqual(["'none'"]);
      // PUBLIC_BASE_URL is https here: browsers are told to keep to it.
      expect(response.headers.get("strict-transport-security"), path).toBe("max-age=15552000");
    }
  });

  it("give the pages a Content-Security-Policy with no inline script and only this origin", async () => {
    const csp = policy(await fetch(`${app.url}/`));
    expect(csp.get("default-src")).toEqual(["'self'"]);
    expect(csp.get("script-src")).toEqual(["'self'"]);
    expect(csp.get("img-src")).toEqual(["'self'", "data:", "blob:"]);
    expect(csp.get("connect-src")).toEqual(["'self'"]);
    expect(csp.get("base-uri")).toEqual(["'none'"]);
    expect(csp.get("form-action")).toEqual(["'self'"]);
    expect(csp.get("object-src")).toEqual(["'none'"]);
    const styles = csp.get("style-src") ?? [];
    expect(styles[0]).toBe("'self'");
    expect(styles.slice(1).every((source) => /^'sha256-[A-Za-z0-9+/=]+'$/.test(source))).toBe(true);
  });

  it("let the server-rendered pages run under that policy: no script, one style allowed by its hash", async () => {
    const csp = policy(await fetch(`${app.url}/`));
    const pages = [
      await fetch(`${app.url}/`),
      await fetch(`${app.url}/auth/verify-email?token=not-a-token`),
      await fetch(`${app.url}/auth/verify-email`),
    ];
    for (const page of pages) {
      const html = await page.text();
      expect(html).not.toMatch(/<script|\son\w+=|style=|javascript:/i);
      const inline = [...html.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((match) => match[1] as string);
      expect(inline).toHaveLength(1);
      const hash = `'sha256-${createHash("sha256")
        .update(inline[0] as string)
        .digest("base64")}'`;
      expect(csp.get("style-src")).toContain(hash);
    }
  });

  it("let the API reference at /docs load only its own scripts", async () => {
    const html = await (await fetch(`${app.url}/docs`)).text();
    const scripts = [...html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.length).toBeGreaterThan(0);
    for (const [, attributes, body] of scripts) {
      expect(attributes).toMatch(/src="\/docs\/assets\//);
      expect(body).toBe("");
    }
    expect(html).not.toMatch(/<style|style=/);
  });
});
