import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey, sessionCookie, signUp, type TestAccount, uniqueEmail } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import type { ReceivedMail } from "../../../test/support/outbox";
import { type SmtpReceiver, startSmtpReceiver } from "../../../test/support/smtp-receiver";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

/**
 * The browser's session flows (who is signed in, sign-out) and the password
 * reset, end to end: real HTTP, and the reset mail through a real SMTP server
 * on loopback, as in mail-smtp.test.ts.
 */
let smtp: SmtpReceiver;
let app: TestApp;
let db: pg.Client;

beforeAll(async () => {
  smtp = await startSmtpReceiver();
  app = await startTestApp(smtp.env);
  db = new pg.Client({ connectionString: app.config.databaseUrl as string });
  await db.connect();
});

afterAll(async () => {
  await db.end();
  await app.close();
  await smtp.close();
});

const resetMails = (email: string) =>
  smtp.received.filter((mail) => mail.envelopeTo.includes(email) && mail.subject === "Reset your Retouch password");

/** The reset mail is sent after the answer (so the answer's timing says nothing): wait for it to arrive. */
async function nextResetMail(email: string, already = 0): Promise<ReceivedMail> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const mail = resetMails(email)[already];
    if (mail) return mail;
    if (Date.now() > deadline) throw new Error(`no reset mail for ${email}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

async function signIn(account: Pick<TestAccount, "email" | "password">, password = account.password) {
  return request(app.url, "POST", "/auth/sign-in/email", { body: { email: account.email, password } });
}

async function verificationRows(): Promise<number> {
  return Number((await db.query<{ count: string }>(`select count(*) from "verification"`)).rows[0]?.count);
}

describe("GET /auth/get-session", () => {
  it("answers the cookie's user and session", async () => {
    const account = await signUp(app.url, { name: "Session Person" });
    const response = await request(app.url, "GET", "/auth/get-session", { cookie: account.cookie });
    expect(response.status, response.text).toBe(200);
    expect(response.body).toEqual({
      user: { id: account.userId, email: account.email, name: "Session Person", email_verified: false },
      session: { expires_at: expect.any(String) },
    });
    const expiresIn = Date.parse(response.body.session.expires_at) - Date.now();
    expect(expiresIn).toBeGreaterThan(6 * 24 * 3600_000);
    expect(expiresIn).toBeLessThanOrEqual(7 * 24 * 3600_000);
  });

  it("answers null without a cookie, with an unknown one, and for an API key (it is about the browser's session)", async () => {
    const account = await signUp(app.url);
    await verifyEmailBySmtp(account.email);
    const { key } = await createKey(app.url, account);
    for (const options of [{}, { cookie: "retouch.session_token=forged.value" }, { key }]) {
      const response = await request(app.url, "GET", "/auth/get-session", options);
      expect(response.status, response.text).toBe(200);
      expect(response.body).toBeNull();
    }
  });

  it("is offered over tRPC as auth.session", async () => {
    const account = await signUp(app.url);
    const response = await request(app.url, "GET", "/trpc/auth.session", { cookie: account.cookie });
    expect(response.status, response.text).toBe(200);
    expect(response.body.result.data.user.email).toBe(account.email);
  });
});

async function verifyEmailBySmtp(email: string): Promise<void> {
  const mail = smtp.received.find((candidate) => candidate.envelopeTo.includes(email) && /verify/i.test(candidate.subject));
  const link = new URL(mail?.link as string);
  expect((await fetch(`${app.url}${link.pathname}${link.search}`)).status).toBe(200);
}

describe("POST /auth/sign-out", () => {
  it("ends this session at once and clears the cookie; the account's other sessions and keys keep working", async () => {
    const account = await signUp(app.url);
    await verifyEmailBySmtp(account.email);
    const { key } = await createKey(app.url, account);
    const other = sessionCookie((await signIn(account)).headers);
    // Count rather than assume how many sessions the account has.
    const sessions = async () =>
      (await db.query(`select count(*)::int as n from "session" where "userId" = $1`, [account.userId])).rows[0].n;
    const before = await sessions();

    const response = await request(app.url, "POST", "/auth/sign-out", { cookie: account.cookie, body: {} });
    expect(response.status, response.text).toBe(200);
    expect(response.body).toEqual({ ok: true });
    const cleared = response.headers.getSetCookie().find((cookie) => cookie.startsWith("retouch.session_token="));
    expect(cleared).toMatch(/^retouch\.session_token=;/);
    expect(cleared).toMatch(/Max-Age=0/i);

    expect((await request(app.url, "GET", "/api/account", { cookie: account.cookie })).status).toBe(401);
    expect((await request(app.url, "GET", "/api/keys", { cookie: account.cookie })).status).toBe(401);
    expect((await request(app.url, "GET", "/auth/get-session", { cookie: account.cookie })).body).toBeNull();
    expect(await sessions()).toBe(before - 1);

    expect((await request(app.url, "GET", "/api/account", { cookie: other })).status).toBe(200);
    expect((await request(app.url, "GET", "/api/account", { key })).status).toBe(200);
  });

  it("answers the same without a session (nothing to end), and over tRPC", async () => {
    const none = await request(app.url, "POST", "/auth/sign-out", { body: {} });
    expect(none.status).toBe(200);
    expect(none.body).toEqual({ ok: true });
    expect(none.headers.getSetCookie().some((cookie) => /^retouch\.session_token=;.*Max-Age=0/i.test(cookie))).toBe(true);

    const account = await signUp(app.url);
    const trpc = await request(app.url, "POST", "/trpc/auth.signOut", { cookie: account.cookie, body: {} });
    expect(trpc.status, trpc.text).toBe(200);
    expect((await request(app.url, "GET", "/api/account", { cookie: account.cookie })).status).toBe(401);
  });
});

describe("password reset", () => {
  it("mails a link; the reset sets the new password, refuses the old, and ends every session", async () => {
    const account = await signUp(app.url, { name: "Forgetful" });
    await verifyEmailBySmtp(account.email);
    const { key } = await createKey(app.url, account);
    const laptop = sessionCookie((await signIn(account)).headers);

    const asked = await request(app.url, "POST", "/auth/request-password-reset", { body: { email: account.email } });
    expect(asked.status, asked.text).toBe(200);
    expect(asked.body).toEqual({ ok: true });
    const mail = await nextResetMail(account.email);
    expect(mail.text).toContain("Hi Forgetful,");
    expect(mail.text).toContain("within 60 minutes");
    const link = new URL(mail.link as string);
    expect(`${link.origin}${link.pathname}`).toBe(`${app.config.publicBaseUrl}/reset-password`);
    expect([...link.searchParams.keys()]).toEqual(["token"]);
    const token = link.searchParams.get("token") as string;
    // The token is kept hashed: the table holds nothing that works as a link.
    const identifiers = (await db.query<{ identifier: string }>(`select identifier from "verification"`)).rows;
    expect(identifiers.some((row) => row.identifier.includes(token))).toBe(false);

    const reset = await request(app.url, "POST", "/auth/reset-password", {
      body: { token, new_password: "a brand new password" },
    });
    expect(reset.status, reset.text).toBe(200);
    expect(reset.body).toEqual({ ok: true });

    expect((await signIn(account)).status).toBe(401);
    const fresh = await signIn(account, "a brand new password");
    expect(fresh.status).toBe(200);
    for (const cookie of [account.cookie, laptop]) {
      expect((await request(app.url, "GET", "/api/account", { cookie })).status).toBe(401);
      expect((await request(app.url, "GET", "/auth/get-session", { cookie })).body).toBeNull();
    }
    expect((await request(app.url, "GET", "/api/account", { cookie: sessionCookie(fresh.headers) })).status).toBe(200);
    // API keys are not sessions: they keep working until revoked.
    expect((await request(app.url, "GET", "/api/account", { key })).status).toBe(200);

    // The link works once.
    const again = await request(app.url, "POST", "/auth/reset-password", { body: { token, new_password: "yet another one" } });
    expect(again.status).toBe(400);
    expect(again.body).toEqual({ code: "reset_token_invalid", message: expect.stringMatching(/request a new one/) });
    expect((await signIn(account, "a brand new password")).status).toBe(200);
  });

  it("answers an unknown address exactly like a known one, and mails nothing to it", async () => {
    const account = await signUp(app.url);
    const ghost = uniqueEmail("ghost");
    const rowsBefore = await verificationRows();
    const unknown = await request(app.url, "POST", "/auth/request-password-reset", { body: { email: ghost } });
    expect(await verificationRows()).toBe(rowsBefore);
    const known = await request(app.url, "POST", "/auth/request-password-reset", { body: { email: account.email } });
    expect(await verificationRows()).toBe(rowsBefore + 1);
    expect(unknown.status).toBe(known.status);
    expect(unknown.text).toBe(known.text);
    expect(unknown.headers.getSetCookie()).toEqual(known.headers.getSetCookie());
    await nextResetMail(account.email);
    expect(smtp.received.some((mail) => mail.envelopeTo.includes(ghost))).toBe(false);
  });

  it("adds a same-site redirect_to to the link, and refuses one that leaves the site (400, no mail)", async () => {
    const account = await signUp(app.url);
    const ok = await request(app.url, "POST", "/auth/request-password-reset", {
      body: { email: account.email, redirect_to: "/dashboard/keys?tab=new" },
    });
    expect(ok.status, ok.text).toBe(200);
    const link = new URL((await nextResetMail(account.email)).link as string);
    expect(link.searchParams.get("redirect_to")).toBe("/dashboard/keys?tab=new");
    expect(link.searchParams.get("token")).toMatch(/\S{16,}/);

    const rowsBefore = await verificationRows();
    for (const redirect of [
      "https://evil.example/steal",
      "//evil.example/x",
      "/\\evil.example",
      "dashboard",
      "javascript:alert(1)",
    ]) {
      const refused = await request(app.url, "POST", "/auth/request-password-reset", {
        body: { email: account.email, redirect_to: redirect },
      });
      expect(refused.status, redirect).toBe(400);
      expect(refused.body.code).toBe("invalid_request");
      expect(refused.body.message).toMatch(/redirect_to: must be a path on this site/);
    }
    expect(await verificationRows()).toBe(rowsBefore);
    // A window, not a wait: mail leaves after the answer, so a refused request's mail would land within it.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(resetMails(account.email)).toHaveLength(1);
  });

  it("refuses a wrong or expired token with reset_token_invalid, and a short password with invalid_request, changing nothing", async () => {
    const account = await signUp(app.url);
    await request(app.url, "POST", "/auth/request-password-reset", { body: { email: account.email } });
    const token = new URL((await nextResetMail(account.email)).link as string).searchParams.get("token") as string;

    const wrong = await request(app.url, "POST", "/auth/reset-password", {
      body: { token: `${token.slice(0, -2)}xx`, new_password: "another password" },
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.code).toBe("reset_token_invalid");

    const short = await request(app.url, "POST", "/auth/reset-password", { body: { token, new_password: "short" } });
    expect(short.status).toBe(400);
    expect(short.body.code).toBe("invalid_request");
    expect(short.body.message).toMatch(/new_password: must be at least 8 characters/);
    const missing = await request(app.url, "POST", "/auth/reset-password", { body: { new_password: "long enough" } });
    expect(missing.status).toBe(400);
    expect(missing.body.message).toMatch(/token/);

    // Still the old password, and the session still works.
    expect((await signIn(account)).status).toBe(200);
    expect((await request(app.url, "GET", "/api/account", { cookie: account.cookie })).status).toBe(200);

    await db.query(`update "verification" set "expiresAt" = now() - interval '1 second' where value = $1`, [account.userId]);
    const expired = await request(app.url, "POST", "/auth/reset-password", { body: { token, new_password: "another password" } });
    expect(expired.status).toBe(400);
    expect(expired.body.code).toBe("reset_token_invalid");
    expect((await signIn(account)).status).toBe(200);
  });

  it("is offered over tRPC", async () => {
    const account = await signUp(app.url);
    const asked = await request(app.url, "POST", "/trpc/auth.requestPasswordReset", { body: { email: account.email } });
    expect(asked.status, asked.text).toBe(200);
    const token = new URL((await nextResetMail(account.email)).link as string).searchParams.get("token") as string;
    const reset = await request(app.url, "POST", "/trpc/auth.resetPassword", {
      body: { token, new_password: "set over trpc" },
    });
    expect(reset.status, reset.text).toBe(200);
    expect((await signIn(account, "set over trpc")).status).toBe(200);
    const bad = await request(app.url, "POST", "/trpc/auth.resetPassword", { body: { token, new_password: "set over trpc" } });
    expect(bad.body.error.data).toMatchObject({ code: "reset_token_invalid", httpStatus: 400 });
  });
});

describe("password reset, as proof of the address", () => {
  it("verifies an address that was never verified: the link came to its inbox", async () => {
    const account = await signUp(app.url, { name: "Never Verified" });
    expect((await request(app.url, "GET", "/api/account", { cookie: account.cookie })).body.email_verified).toBe(false);
    await request(app.url, "POST", "/auth/request-password-reset", { body: { email: account.email } });
    const token = new URL((await nextResetMail(account.email)).link as string).searchParams.get("token") as string;
    const reset = await request(app.url, "POST", "/auth/reset-password", { body: { token, new_password: "verified by reset" } });
    expect(reset.status, reset.text).toBe(200);
    const fresh = sessionCookie((await signIn(account, "verified by reset")).headers);
    expect((await request(app.url, "GET", "/api/account", { cookie: fresh })).body.email_verified).toBe(true);
  });
});

describe("mails to one address are limited, whoever asks", () => {
  it("a sixth reset mail for one address within the hour is 429 (known or not, from any IP); other addresses carry on", async () => {
    const account = await signUp(app.url);
    for (const email of [account.email, uniqueEmail("never-registered")]) {
      const answers = [];
      for (let i = 0; i < 6; i++) {
        answers.push(
          await request(app.url, "POST", "/auth/request-password-reset", {
            body: { email: i % 2 === 0 ? email : email.toUpperCase() },
          }),
        );
      }
      expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 200, 429]);
      expect(answers[5]?.body).toEqual({ code: "rate_limited", message: expect.stringMatching(/for this email address/) });
      expect(Number(answers[5]?.headers.get("retry-after"))).toBeGreaterThan(0);
    }
    await expect.poll(() => resetMails(account.email).length, { timeout: 10_000 }).toBe(5);
    expect((await request(app.url, "POST", "/auth/request-password-reset", { body: { email: uniqueEmail() } })).status).toBe(200);
  });

  it("the same for verification mails", async () => {
    const account = await signUp(app.url);
    const statuses = [];
    for (let i = 0; i < 6; i++) {
      statuses.push((await request(app.url, "POST", "/auth/send-verification-email", { body: { email: account.email } })).status);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
  });
});

describe("password reset requests are rate limited per IP", () => {
  let limited: TestApp;
  beforeAll(async () => {
    limited = await startTestApp({ RETOUCH_SIGNUP_RATE_LIMIT: "2/1h" });
  });
  afterAll(() => limited.close());

  it("answers 429 with Retry-After once the address has asked too often, known email or not", async () => {
    const answers = [];
    for (const email of [uniqueEmail("a"), uniqueEmail("b"), uniqueEmail("c")]) {
      answers.push(await request(limited.url, "POST", "/auth/request-password-reset", { body: { email } }));
    }
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 429]);
    expect(answers[2]?.body.code).toBe("rate_limited");
    expect(Number(answers[2]?.headers.get("retry-after"))).toBeGreaterThan(3000);
    // Its own bucket: sign-ups from the same address are not spent by it.
    expect(
      (
        await request(limited.url, "POST", "/auth/sign-up/email", {
          body: { email: uniqueEmail(), password: "password-123", name: "X" },
        })
      ).status,
    ).toBe(200);
  });
});
