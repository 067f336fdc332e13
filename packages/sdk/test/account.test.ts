import { authenticate } from "@retouch/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyedAccount, signUp } from "../../../test/support/accounts";
import { freePort } from "../../../test/support/free-port";
import { productPhoto } from "../../../test/support/images";
import { insertPendingJob } from "../../../test/support/jobs";
import { connectApp } from "../../../test/support/oauth-client";
import { readOutbox } from "../../../test/support/outbox";
import { startTestApp, type TestApp } from "../../../test/support/test-app";
import { ApiError, type JobListing, Retouch } from "../src/index";

/** The SDK's account calls, from its sources, against a real Retouch over HTTP (API role: jobs stay pending). */
let app: TestApp;

beforeAll(async () => {
  // Its own address as the public one: OAuth tokens are issued for {PUBLIC_BASE_URL}/mcp, where the test's client connects.
  const port = await freePort();
  app = await startTestApp({ PORT: String(port), PUBLIC_BASE_URL: `http://127.0.0.1:${port}` }, { role: "api" });
});
afterAll(() => app.close());

describe("account()", () => {
  it("reads plan, limits, balance and usage; a submission shows in both", async () => {
    const account = await keyedAccount(app, { plan: "starter" });
    const retouch = new Retouch({ baseUrl: app.url, apiKey: account.key });
    expect(await retouch.account()).toEqual({
      email: account.email,
      name: account.name,
      email_verified: true,
      plan: "starter",
      credits_remaining: 10,
      limits: { per_minute: 15, concurrent: 10 },
      usage: { this_month: 0 },
    });
    await retouch.submit(await productPhoto(), "make it black and white");
    expect(await retouch.account()).toMatchObject({ credits_remaining: 9, usage: { this_month: 1 } });
  });
});

describe("connectedApps() and disconnectApp()", () => {
  it("lists an MCP client the person approved, and disconnecting it ends its tokens", async () => {
    const account = await keyedAccount(app);
    const retouch = new Retouch({ baseUrl: app.url, apiKey: account.key });
    expect(await retouch.connectedApps()).toEqual([]);
    const { clientId, provider } = await connectApp(app.url, account.cookie, "SDK Agent");
    const accessToken = provider.tokens()?.access_token as string;
    expect(await retouch.connectedApps()).toEqual([
      expect.objectContaining({ client_id: clientId, name: "SDK Agent", scopes: ["mcp", "offline_access"] }),
    ]);
    expect(
      await authenticate(app.services, new Headers({ authorization: `Bearer ${accessToken}` }), "key_or_mcp_token"),
    ).toBeDefined();

    await retouch.disconnectApp(clientId);
    expect(await retouch.connectedApps()).toEqual([]);
    expect(
      await authenticate(app.services, new Headers({ authorization: `Bearer ${accessToken}` }), "key_or_mcp_token"),
    ).toBeUndefined();
    const again = await retouch.disconnectApp(clientId).catch((error: unknown) => error);
    expect(again).toBeInstanceOf(ApiError);
    expect((again as ApiError).code).toBe("not_found");
  });
});

describe("jobs() and allJobs()", () => {
  it("pages through every job newest first, and iterates them all", async () => {
    const account = await keyedAccount(app);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.unshift(await insertPendingJob(app.services, account.userId, { prompt: `job ${i}` }));
    const retouch = new Retouch({ baseUrl: app.url, apiKey: account.key });

    const first = await retouch.jobs({ limit: 2 });
    expect(first.jobs.map((job) => job.id)).toEqual(ids.slice(0, 2));
    expect(first.next_cursor).toEqual(expect.any(String));
    const second = await retouch.jobs({ limit: 2, cursor: first.next_cursor as string });
    expect(second.jobs.map((job) => job.id)).toEqual(ids.slice(2, 4));

    const all: JobListing[] = [];
    for await (const job of retouch.allJobs({ pageSize: 2 })) all.push(job);
    expect(all.map((job) => job.id)).toEqual(ids);
    expect(all[0]).toMatchObject({ status: "pending", prompt: "job 4", metadata: null, result_url: null });
  });

  it("filters on the service: by status, workflow and day, through every page", async () => {
    const account = await keyedAccount(app);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.unshift(await insertPendingJob(app.services, account.userId, { prompt: `job ${i}` }));
    const retouch = new Retouch({ baseUrl: app.url, apiKey: account.key });
    const today = new Date().toISOString().slice(0, 10);

    const pending = await retouch.jobs({ status: "pending", workflow: "generative_edit", from: today, to: today });
    expect(pending.jobs.map((job) => job.id)).toEqual(ids);
    expect((await retouch.jobs({ status: "done" })).jobs).toEqual([]);
    expect((await retouch.jobs({ workflow: "background_removal" })).jobs).toEqual([]);
    const all: JobListing[] = [];
    for await (const job of retouch.allJobs({ pageSize: 1, status: "pending" })) all.push(job);
    expect(all.map((job) => job.id)).toEqual(ids);
  });

  it("throws a typed 400 for a bad cursor or limit, without retrying", async () => {
    const account = await keyedAccount(app);
    let calls = 0;
    const retouch = new Retouch({
      baseUrl: app.url,
      apiKey: account.key,
      fetch: (input, init) => {
        calls++;
        return fetch(input, init);
      },
    });
    const error = await retouch.jobs({ cursor: "forged" }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ code: "invalid_request", status: 400, issues: [{ path: "cursor" }] });
    await expect(retouch.jobs({ limit: 0 })).rejects.toMatchObject({ code: "invalid_request", status: 400 });
    expect(calls).toBe(2);
  });
});

describe("sessions and password reset", () => {
  it("reads the session, signs out, and resets a forgotten password", async () => {
    const account = await signUp(app.url);
    const withCookie = new Retouch({ baseUrl: app.url, sessionCookie: account.cookie });
    expect(await withCookie.session()).toMatchObject({ user: { id: account.userId, email: account.email } });
    expect((await withCookie.account()).email).toBe(account.email);
    await withCookie.signOut();
    expect(await withCookie.session()).toBeNull();
    await expect(withCookie.account()).rejects.toMatchObject({ code: "unauthorized", status: 401 });

    const anonymous = new Retouch({ baseUrl: app.url });
    await anonymous.requestPasswordReset(account.email, { redirectTo: "/dashboard" });
    let link: string | undefined;
    for (let tries = 0; !link && tries < 200; tries++) {
      link = (await readOutbox(app.outboxDir)).find(
        (mail) => mail.to.includes(account.email) && /reset/i.test(mail.subject),
      )?.link;
      if (!link) await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const token = new URL(link as string).searchParams.get("token") as string;
    await anonymous.resetPassword(token, "a new sdk password");
    const session = await anonymous.signIn({ email: account.email, password: "a new sdk password" });
    expect(session.user.id).toBe(account.userId);
    await expect(anonymous.resetPassword(token, "once more please")).rejects.toMatchObject({
      code: "reset_token_invalid",
      status: 400,
    });
    await expect(anonymous.requestPasswordReset(account.email, { redirectTo: "https://evil.example" })).rejects.toMatchObject({
      code: "invalid_request",
    });
  });
});
