import { createHash } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sessionCookie, signUp, uniqueEmail, verifyEmail } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { readOutbox, verificationLinkFor } from "../../../test/support/outbox";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ RETOUCH_SIGNUP_CREDITS: "7", RETOUCH_DEFAULT_PLAN: "starter" });
});
afterAll(() => app.close());

describe("POST /auth/sign-up/email", () => {
  it("creates the account and returns exactly token + user{id,email,name} with a session cookie", async () => {
    const email = uniqueEmail("Mixed.Case");
    const response = await request(app.url, "POST", "/auth/sign-up/email", {
      body: { email, password: "password-123", name: "Ada" },
    });
    expect(response.status).toBe(200);
    expect(Object.keys(response.body).sort()).toEqual(["token", "user"]);
    expect(Object.keys(response.body.user).sort()).toEqual(["email", "id", "name"]);
    expect(response.body.user).toMatchObject({ email: email.toLowerCase(), name: "Ada" });
    expect(response.body.user.id).toMatch(/^usr_[0-9a-z]{26}$/);
    expect(response.body.token).toEqual(expect.any(String));

    const setCookie = response.headers.getSetCookie();
    const cookie = setCookie.find((value) => value.startsWith("retouch.session_token="));
    expect(cookie).toBeDefined();
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    expect(cookie).not.toMatch(/^__Secure-/);
  });

  it("grants RETOUCH_SIGNUP_CREDITS on RETOUCH_DEFAULT_PLAN, recorded in the ledger", async () => {
    const account = await signUp(app.url);
    const profile = await app.services.profiles.get(account.userId);
    expect(profile).toMatchObject({ plan: "starter", credits: 7 });
    expect(await app.services.stores.profiles.ledger(account.userId)).toEqual([
      { delta: 7, balanceAfter: 7, reason: "signup_grant", jobId: null },
    ]);
  });

  it("emails a verification link that verifies the address in a browser", async () => {
    const account = await signUp(app.url);
    const mail = (await readOutbox(app.outboxDir)).find((candidate) => candidate.to.includes(account.email));
    expect(mail?.subject).toMatch(/verify/i);
    expect(mail?.link).toMatch(new RegExp(`^${app.config.publicBaseUrl}/auth/verify-email\\?token=`));
    expect(app.logs.some((line) => line.includes("verification email written to the outbox"))).toBe(true);

    const before = await request(app.url, "POST", "/api/keys", { cookie: account.cookie, body: { name: "k" } });
    expect(before.status).toBe(403);
    expect(before.body.code).toBe("email_unverified");

    const link = new URL(mail?.link as string);
    const page = await fetch(`${app.url}${link.pathname}${link.search}`, { headers: { cookie: account.cookie } });
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/text\/html/);
    const html = await page.text();
    expect(html).toContain("is verified");
    expect(html).toContain(account.email);

    const after = await request(app.url, "POST", "/api/keys", { cookie: account.cookie, body: { name: "k" } });
    expect(after.status).toBe(201);
  });

  it("shows a readable error page for a tampered or missing verification token", async () => {
    const account = await signUp(app.url);
    const link = new URL(await verificationLinkFor(app.outboxDir, account.email));
    const token = link.searchParams.get("token") as string;
    const tampered = await fetch(`${app.url}/auth/verify-email?token=${token.slice(0, -3)}abc`);
    expect(tampered.status).toBe(400);
    expect(await tampered.text()).toContain("could not verify your email");
    const missing = await fetch(`${app.url}/auth/verify-email`);
    expect(missing.status).toBe(400);
    expect(await missing.text()).toContain("incomplete");
    const user = await app.services.stores.users.findById(account.userId);
    expect(user?.emailVerified).toBe(false);
  });

  it.each([
    ["no body", undefined],
    ["missing name", { email: "x@example.com", password: "password-123" }],
    ["bad email", { email: "not-an-email", password: "password-123", name: "X" }],
    ["short password", { email: "y@example.com", password: "short", name: "X" }],
    ["blank name", { email: "z@example.com", password: "password-123", name: "   " }],
  ])("answers 400 for invalid input (%s) and creates nothing", async (_label, body) => {
    const response = await request(app.url, "POST", "/auth/sign-up/email", {
      ...(body ? { body } : { rawBody: "", headers: { "content-type": "application/json" } }),
    });
    expect(response.status).toBe(400);
    expect(response.body.code).toBe("invalid_request");
    expect(response.body.message).toMatch(/^Invalid request: /);
    expect(response.headers.getSetCookie()).toEqual([]);
    if (body && "email" in body) expect(await app.services.stores.users.findByEmail(body.email)).toBeUndefined();
  });

  it("answers 422 for an email already registered and changes nothing", async () => {
    const account = await signUp(app.url, { name: "Original" });
    const mailsBefore = (await readOutbox(app.outboxDir)).length;
    const again = await request(app.url, "POST", "/auth/sign-up/email", {
      body: { email: account.email.toUpperCase(), password: "another-password", name: "Impostor" },
    });
    expect(again.status).toBe(422);
    expect(again.body).toEqual({ code: "email_already_registered", message: expect.stringMatching(/already exists/) });
    expect(again.headers.getSetCookie()).toEqual([]);

    const user = await app.services.stores.users.findById(account.userId);
    expect(user?.name).toBe("Original");
    expect((await readOutbox(app.outboxDir)).length).toBe(mailsBefore);
    const oldPassword = await request(app.url, "POST", "/auth/sign-in/email", {
      body: { email: account.email, password: account.password },
    });
    expect(oldPassword.status).toBe(200);
    const newPassword = await request(app.url, "POST", "/auth/sign-in/email", {
      body: { email: account.email, password: "another-password" },
    });
    expect(newPassword.status).toBe(401);
    expect((await app.services.profiles.get(account.userId)).credits).toBe(7);
  });
});

describe("POST /auth/sign-up/email and /auth/sign-in/email: overlong fields", () => {
  it("say which field is too long and by what measure, not that it is missing, and create nothing", async () => {
    const email = uniqueEmail();
    const longName = await request(app.url, "POST", "/auth/sign-up/email", {
      body: { email, password: "correct-horse-battery", name: "n".repeat(101) },
    });
    expect(longName.status).toBe(400);
    expect(longName.body.message).toMatch(/name: must be at most 100 characters/);
    const longPassword = await request(app.url, "POST", "/auth/sign-up/email", {
      body: { email, password: "p".repeat(257), name: "Ada" },
    });
    expect(longPassword.status).toBe(400);
    expect(longPassword.body.message).toMatch(/password: must be at most 256 characters/);
    const signIn = await request(app.url, "POST", "/auth/sign-in/email", { body: { email, password: "p".repeat(257) } });
    expect(signIn.status).toBe(400);
    expect(signIn.body.message).toMatch(/password: must be at most 256 characters/);
    // Nothing was created: the address is still free.
    expect((await signUp(app.url, { email })).userId).toMatch(/^usr_/);
  });
});

describe("POST /auth/send-verification-email", () => {
  it("sends a fresh working link to an unverified account", async () => {
    const account = await signUp(app.url);
    const before = (await readOutbox(app.outboxDir)).filter((mail) => mail.to.includes(account.email)).length;
    const response = await request(app.url, "POST", "/auth/send-verification-email", { body: { email: account.email } });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ ok: true });
    const mails = (await readOutbox(app.outboxDir)).filter((mail) => mail.to.includes(account.email));
    expect(mails.length).toBe(before + 1);
    await verifyEmail(app.url, app.outboxDir, account.email);
    expect((await app.services.stores.users.findById(account.userId))?.emailVerified).toBe(true);
  });

  it("answers the same for an unknown address and sends nothing", async () => {
    const before = (await readOutbox(app.outboxDir)).length;
    const response = await request(app.url, "POST", "/auth/send-verification-email", { body: { email: uniqueEmail("ghost") } });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ ok: true });
    expect((await readOutbox(app.outboxDir)).length).toBe(before);
  });
});

describe("POST /auth/sign-in/email", () => {
  it("returns a new session before the email is verified", async () => {
    const account = await signUp(app.url);
    const response = await request(app.url, "POST", "/auth/sign-in/email", {
      body: { email: account.email, password: account.password },
    });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      token: expect.any(String),
      user: { id: account.userId, email: account.email, name: account.name },
    });
    expect(response.body.token).not.toBe(account.token);
    const cookie = sessionCookie(response.headers);
    const keys = await request(app.url, "GET", "/api/keys", { cookie });
    expect(keys.status).toBe(200);
  });

  it("accepts the exact Set-Cookie value resent as a Cookie header", async () => {
    const account = await signUp(app.url);
    await verifyEmail(app.url, app.outboxDir, account.email);
    const response = await request(app.url, "POST", "/auth/sign-in/email", {
      body: { email: account.email, password: account.password },
    });
    const exact = response.headers.getSetCookie()[0] as string;
    expect(exact).toMatch(/; Path=\//);
    const created = await request(app.url, "POST", "/api/keys", { cookie: exact, body: { name: "from exact cookie" } });
    expect(created.status).toBe(201);
  });

  it.each([
    ["wrong password", (email: string) => ({ email, password: "wrong-password" })],
    ["unknown email", () => ({ email: uniqueEmail("nobody"), password: "whatever-123" })],
  ])("answers 401 for %s", async (_label, body) => {
    const account = await signUp(app.url);
    const response = await request(app.url, "POST", "/auth/sign-in/email", { body: body(account.email) });
    expect(response.status).toBe(401);
    expect(response.body).toEqual({ code: "invalid_credentials", message: expect.any(String) });
    expect(response.headers.getSetCookie()).toEqual([]);
  });

  it("answers 400 when a field is missing", async () => {
    const response = await request(app.url, "POST", "/auth/sign-in/email", { body: { email: uniqueEmail() } });
    expect(response.status).toBe(400);
    expect(response.body.code).toBe("invalid_request");
  });
});

describe("session tokens at rest", () => {
  it("stores only a SHA-256 of the session token", async () => {
    const account = await signUp(app.url);
    const client = new pg.Client({ connectionString: app.config.databaseUrl });
    await client.connect();
    const { rows } = await client.query<{ token: string }>('select token from "session" where "userId" = $1', [account.userId]);
    await client.end();
    expect(rows).toHaveLength(1);
    expect(rows[0]?.token).toBe(`sha256:${createHash("sha256").update(account.token).digest("hex")}`);
  });
});

describe("sign-up rate limit per IP", () => {
  let limited: TestApp;
  beforeAll(async () => {
    limited = await startTestApp({ RETOUCH_SIGNUP_RATE_LIMIT: "2/1h" });
  });
  afterAll(() => limited.close());

  it("answers 429 with Retry-After after the limit, and creates nothing", async () => {
    await signUp(limited.url);
    await signUp(limited.url);
    const email = uniqueEmail();
    const response = await request(limited.url, "POST", "/auth/sign-up/email", {
      body: { email, password: "password-123", name: "X" },
    });
    expect(response.status).toBe(429);
    expect(response.body.code).toBe("rate_limited");
    const retryAfter = Number(response.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(3600);
    expect(await limited.services.stores.users.findByEmail(email)).toBeUndefined();
    // Sign-in is not limited by the sign-up budget.
    const signIn = await request(limited.url, "POST", "/auth/sign-in/email", { body: { email, password: "password-123" } });
    expect(signIn.status).toBe(401);
  });
});

describe("behind https", () => {
  let secure: TestApp;
  beforeAll(async () => {
    secure = await startTestApp({ PUBLIC_BASE_URL: "https://retouch.example.com" });
  });
  afterAll(() => secure.close());

  it("names the cookie with the __Secure- prefix and marks it Secure", async () => {
    const response = await request(secure.url, "POST", "/auth/sign-up/email", {
      body: { email: uniqueEmail(), password: "password-123", name: "S" },
    });
    expect(response.status).toBe(200);
    const cookie = response.headers.getSetCookie().find((value) => value.includes(".session_token="));
    expect(cookie).toMatch(/^__Secure-retouch\.session_token=/);
    expect(cookie).toMatch(/; Secure/i);
    const keys = await request(secure.url, "GET", "/api/keys", { cookie: sessionCookie(response.headers) });
    expect(keys.status).toBe(200);
  });
});
