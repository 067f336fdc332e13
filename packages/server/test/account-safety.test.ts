import { randomBytes } from "node:crypto";
import { auth } from "@modelcontextprotocol/sdk/client/auth.js";
import type { OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sessionCookie, signUp, type TestAccount } from "../../../test/support/accounts";
import { freePort } from "../../../test/support/free-port";
import { request } from "../../../test/support/http-client";
import { connectApp } from "../../../test/support/oauth-client";
import { type SmtpReceiver, startSmtpReceiver } from "../../../test/support/smtp-receiver";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

/**
 * Issue 22, the accounts slice, over real HTTP (and the reset mail over real
 * SMTP on loopback): what a password reset ends, and what dynamic client
 * registration refuses. The app trusts X-Forwarded-For, so each test speaks
 * from addresses of its own (sign-in and registration are limited per address).
 */
let smtp: SmtpReceiver;
let app: TestApp;
let base: string;

beforeAll(async () => {
  smtp = await startSmtpReceiver();
  const port = await freePort();
  app = await startTestApp({
    ...smtp.env,
    PORT: String(port),
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    RETOUCH_TRUST_PROXY: "1",
    RETOUCH_OAUTH_REGISTRATION_RATE_LIMIT: "1000/1h",
    // A lock reached in a few guesses (the default is 50 failures in 15 minutes): the same lock, sooner.
    RETOUCH_SIGNIN_FAILURES_PER_ACCOUNT: "6/15m",
  });
  base = app.url;
});
afterAll(async () => {
  await app?.close();
  await smtp?.close();
});

let addresses = 0;
const freshAddress = () => `198.51.100.${++addresses}`;

const signIn = (who: Pick<TestAccount, "email">, password: string, address = freshAddress()) =>
  request(base, "POST", "/auth/sign-in/email", { body: { email: who.email, password }, headers: { "x-forwarded-for": address } });

/** The reset mail is sent after the answer: wait for it, and read its token. */
async function resetToken(email: string): Promise<string> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const mail = smtp.received.find((candidate) => candidate.envelopeTo.includes(email) && /reset/i.test(candidate.subject));
    if (mail?.link) return new URL(mail.link).searchParams.get("token") as string;
    if (Date.now() > deadline) throw new Error(`no reset mail for ${email}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe("a password reset", () => {
  it("ends a connected app's refresh and access tokens, and lifts the sign-in lock at once", async () => {
    const account = await signUp(base);
    const cookie = sessionCookie((await signIn(account, account.password)).headers);
    const { provider } = await connectApp(base, cookie, "Connected Before Reset");
    // One refresh, as an app that ran a while: its access token now comes from the refresh token.
    provider.saveTokens({ ...(provider.tokens() as OAuthTokens), expires_in: 0 });
    expect(await auth(provider, { serverUrl: `${base}/mcp` })).toBe("AUTHORIZED");
    const { access_token: accessToken, refresh_token: refreshToken } = provider.tokens() as OAuthTokens;
    const clientId = provider.clientInformation()?.client_id as string;
    const onMcp = () =>
      fetch(`${base}/mcp`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${accessToken}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      });
    expect((await onMcp()).status).toBe(200);

    // Someone guessed at the password from many addresses: the account is locked for every address.
    for (let guess = 0; guess < 6; guess++) expect((await signIn(account, `guess ${guess}`)).status).toBe(401);
    expect((await signIn(account, account.password)).status).toBe(429);

    expect((await request(base, "POST", "/auth/request-password-reset", { body: { email: account.email } })).status).toBe(200);
    const token = await resetToken(account.email);
    const reset = await request(base, "POST", "/auth/reset-password", { body: { token, new_password: "a fresh new password" } });
    expect(reset.status, reset.text).toBe(200);

    // The owner just proved control of the address: the new password works at once.
    expect((await signIn(account, "a fresh new password")).status).toBe(200);

    const refreshed = await fetch(`${base}/auth/oauth2/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: refreshToken as string, client_id: clientId }),
    });
    expect(refreshed.status).toBe(400);
    expect(((await refreshed.json()) as { error: string }).error).toBe("invalid_grant");
    const refused = await onMcp();
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toMatch(/^Bearer /);
  });
});

describe("dynamic client registration (RFC 7591) refuses", () => {
  const loopback = "http://127.0.0.1:9/callback";
  const register = (metadata: Record<string, unknown>) =>
    request(base, "POST", "/auth/oauth2/register", {
      body: { token_endpoint_auth_method: "none", ...metadata },
      headers: { "x-forwarded-for": freshAddress() },
    });
  const expectRefused = async (metadata: Record<string, unknown>, error: string) => {
    const response = await register(metadata);
    expect(response.status, response.text.slice(0, 300)).toBe(400);
    expect(response.body.error).toBe(error);
    expect(response.body.error_description).toEqual(expect.any(String));
    return response;
  };

  it("script, data and other browser-local redirect URIs, and http: off loopback", async () => {
    for (const uri of [
      "javascript:alert(document.cookie)",
      "JavaScript://example.com/%0aalert(1)",
      "data:text/html,<script>alert(1)</script>",
      "vbscript:msgbox(1)",
      "file:///etc/passwd",
      "blob:https://example.com/1",
      "about:blank",
      "http://example.com/callback",
      "https://example.com/callback#fragment",
    ]) {
      await expectRefused(
        { client_name: "Scheme Test", redirect_uris: [uri], application_type: "native" },
        "invalid_redirect_uri",
      );
      await expectRefused({ client_name: "Scheme Test", redirect_uris: [uri] }, "invalid_redirect_uri");
    }
  });

  // 5,000 URIs or a 100,000-character name do not fit the registration's 64 KiB body: the edge refuses them
  // unread (413, edge-attacks.test.ts). These rules are what refuses what fits.
  it("5,000 redirect URIs (413 at the edge), 11 of them, and one of more than 2,000 characters", async () => {
    const many = (count: number) => Array.from({ length: count }, (_, i) => `https://app.example.com/callback/${i}`);
    const tooLarge = await register({ client_name: "Many Redirects", redirect_uris: many(5000) });
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.body.error).toBe("payload_too_large");
    const response = await expectRefused({ client_name: "Many Redirects", redirect_uris: many(11) }, "invalid_redirect_uri");
    expect(response.body.error_description).toMatch(/at most 10/);
    await expectRefused(
      { client_name: "Long Redirect", redirect_uris: [`https://app.example.com/${"a".repeat(2100)}`] },
      "invalid_redirect_uri",
    );
  });

  it("a 100,000-character name (413 at the edge), a 101-character one, and names with control or invisible characters", async () => {
    const tooLarge = await register({ client_name: "A".repeat(100_000), redirect_uris: [loopback] });
    expect(tooLarge.status).toBe(413);
    const response = await expectRefused({ client_name: "A".repeat(101), redirect_uris: [loopback] }, "invalid_client_metadata");
    expect(response.body.error_description).toMatch(/at most 100 characters/);
    for (const name of ["Tab\tAgent", "New\nline", "Bidi \u202Egnp.exe", "Zero\u200Bwidth"]) {
      await expectRefused({ client_name: name, redirect_uris: [loopback] }, "invalid_client_metadata");
    }
  });

  it("names that pass for the service, however spelled", async () => {
    for (const name of [
      "Retouch",
      "retouch official",
      "RETOUCH Security Team",
      "Re-Touch",
      "R.e.t.o.u.c.h",
      "re touch",
      "Ｒｅｔｏｕｃｈ",
      "Rеtоuсh", // Cyrillic е, о, с
      "R3touch Admin",
      "Re\u00A0touch",
    ]) {
      const response = await expectRefused({ client_name: name, redirect_uris: [loopback] }, "invalid_client_metadata");
      expect(response.body.error_description, name).toMatch(/service's name/);
    }
  });

  it("a javascript: client_uri (the consent page links to it)", async () => {
    await expectRefused(
      { client_name: "Link Agent", redirect_uris: [loopback], client_uri: "javascript:alert(1)" },
      "invalid_client_metadata",
    );
  });

  it("but takes a normal MCP client: loopback, https, a reverse-domain scheme, an ordinary name", async () => {
    for (const redirect of [loopback, "http://localhost:3334/oauth/callback", "http://[::1]:8080/cb"]) {
      const response = await register({ client_name: "Claude Code", redirect_uris: [redirect] });
      expect(response.status, response.text).toBe(201);
    }
    const web = await register({ client_name: "Touch Up Studio", redirect_uris: ["https://studio.example.com/callback"] });
    expect(web.status, web.text).toBe(201);
    const native = await register({
      client_name: "Photo Agent",
      redirect_uris: ["com.example.photoagent:/oauth2redirect"],
      application_type: "native",
    });
    expect(native.status, native.text).toBe(201);
    expect(native.body.client_name).toBe("Photo Agent");

    // The official SDK's own registration, end to end.
    const account = await signUp(base);
    const cookie = sessionCookie((await signIn(account, account.password)).headers);
    const { clientId } = await connectApp(base, cookie, `Agent ${randomBytes(3).toString("hex")}`);
    expect(clientId).toEqual(expect.any(String));
  });
});
