import { randomBytes } from "node:crypto";
import { expect } from "vitest";
import { request } from "./http-client";
import { verificationLinkFor } from "./outbox";

export interface TestAccount {
  email: string;
  password: string;
  name: string;
  userId: string;
  token: string;
  /** `name=value` of the session cookie. */
  cookie: string;
}

export function uniqueEmail(label = "user"): string {
  return `${label}-${randomBytes(4).toString("hex")}@example.com`;
}

/** The `name=value` part of the session cookie from a Set-Cookie header. */
export function sessionCookie(headers: Headers): string {
  const cookie = headers.getSetCookie().find((value) => value.includes(".session_token="));
  if (!cookie) throw new Error("no session cookie in the response");
  return cookie.split(";")[0] as string;
}

export async function signUp(
  baseUrl: string,
  overrides: Partial<Pick<TestAccount, "email" | "password" | "name">> = {},
): Promise<TestAccount> {
  const input = { email: uniqueEmail(), password: "correct horse battery", name: "Test User", ...overrides };
  const response = await request(baseUrl, "POST", "/auth/sign-up/email", { body: input });
  expect(response.status, response.text).toBe(200);
  return { ...input, userId: response.body.user.id, token: response.body.token, cookie: sessionCookie(response.headers) };
}

/**
 * Opens the emailed verification link like a browser without a session would:
 * it answers a page (no dashboard served) or sends the browser on to sign in
 * (303). It signs no one in: use the account's own cookie, or sign in.
 */
export async function verifyEmail(baseUrl: string, outboxDir: string, email: string): Promise<void> {
  const link = await verificationLinkFor(outboxDir, email);
  const target = new URL(link);
  const response = await fetch(`${baseUrl}${target.pathname}${target.search}`, { redirect: "manual" });
  expect([200, 303]).toContain(response.status);
  if (response.status === 303) expect(response.headers.get("location")).toBe("/sign-in?verified=1");
}

export async function signUpVerified(app: { url: string; outboxDir: string }): Promise<TestAccount> {
  const account = await signUp(app.url);
  await verifyEmail(app.url, app.outboxDir, account.email);
  return account;
}

export async function createKey(
  baseUrl: string,
  account: Pick<TestAccount, "cookie">,
  name = "test key",
): Promise<{ key: string; id: string }> {
  const response = await request(baseUrl, "POST", "/api/keys", { cookie: account.cookie, body: { name } });
  expect(response.status, response.text).toBe(201);
  return { key: response.body.key, id: response.body.id };
}

export interface KeyedAccount extends TestAccount {
  key: string;
}

/** A verified account with an API key, optionally on a given plan and balance. */
export async function keyedAccount(
  app: { url: string; outboxDir: string; services: import("@retouch/core").Services },
  options: { plan?: import("@retouch/core").PlanName; credits?: number } = {},
): Promise<KeyedAccount> {
  const account = await signUpVerified(app);
  const { key } = await createKey(app.url, account);
  if (options.plan) await app.services.profiles.setPlan(account.userId, options.plan);
  if (options.credits !== undefined) {
    const current = (await app.services.profiles.get(account.userId)).credits;
    if (options.credits !== current) await app.services.profiles.grantCredits(account.userId, options.credits - current, "test");
  }
  return { ...account, key };
}

/** Polls the status endpoint until the job is no longer pending. */
export async function waitForJob(
  baseUrl: string,
  key: string,
  jobId: string,
  timeoutMs = 60_000,
): Promise<Record<string, unknown>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const response = await fetch(`${baseUrl}/api/process/status?job_id=${jobId}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    const body = (await response.json()) as Record<string, unknown>;
    if (body.status !== "pending") return body;
    if (Date.now() > deadline) throw new Error(`job ${jobId} still pending after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
