import { PLAN_LIMITS } from "@retouch/core";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type KeyedAccount, keyedAccount, signUp, waitForJob } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { base64, productPhoto } from "../../../test/support/images";
import { insertPendingJob, jobCount } from "../../../test/support/jobs";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

/**
 * GET /api/account and GET /api/jobs over real HTTP, with jobs that really ran
 * (done, failed and refunded, batch items that never started) and a few
 * written straight to the database where a test needs many or old ones.
 */
let app: TestApp;
let photo: string;
let db: pg.Client;

beforeAll(async () => {
  app = await startTestApp({ RETOUCH_QUEUE_POLL_INTERVAL: "200ms" });
  photo = base64(await productPhoto());
  db = new pg.Client({ connectionString: app.config.databaseUrl as string });
  await db.connect();
});
afterAll(async () => {
  await db.end();
  await app.close();
});

async function submit(account: KeyedAccount, body: unknown) {
  const response = await request(app.url, "POST", "/api/process", { key: account.key, body });
  expect(response.status, response.text).toBe(200);
  return response.body;
}

/** The account's job ids in the order the listing promises (newest first, the id breaking ties), read from the table. */
async function jobIdsNewestFirst(userId: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>("select id from jobs where user_id = $1 order by created_at desc, id desc", [
    userId,
  ]);
  return rows.map((row) => row.id);
}

async function balance(userId: string): Promise<number> {
  return (await app.services.profiles.get(userId)).credits;
}

type Listing = { id: string; status: string; batch_id: string | null; [field: string]: unknown };

/** Every page, following next_cursor; `between` runs after each page but the last. */
async function allPages(credential: { key?: string; cookie?: string }, limit: number, between?: () => Promise<void>) {
  const pages: Listing[][] = [];
  let cursor: string | null = null;
  do {
    const query: string = `?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
    const page = await request(app.url, "GET", `/api/jobs${query}`, credential);
    expect(page.status, page.text).toBe(200);
    pages.push(page.body.jobs);
    cursor = page.body.next_cursor;
    if (cursor && between) await between();
  } while (cursor);
  return pages;
}

describe("GET /api/account", () => {
  it("answers exactly the agreed fields, with the plan's limits", async () => {
    const account = await keyedAccount(app, { plan: "core" });
    const response = await request(app.url, "GET", "/api/account", { key: account.key });
    expect(response.status, response.text).toBe(200);
    expect(response.body).toEqual({
      email: account.email,
      name: account.name,
      email_verified: true,
      plan: "core",
      credits_remaining: 10,
      limits: { per_minute: PLAN_LIMITS.core.submissionsPerMinute, concurrent: PLAN_LIMITS.core.concurrentJobs },
      usage: { this_month: 0 },
    });
  });

  it("counts the jobs charged this month: a done job and a pending one count, a failed (refunded) one and last month's do not", async () => {
    const account = await keyedAccount(app, { plan: "pro", credits: 20 });
    const done = await submit(account, { image: photo, prompt: "make it black and white" });
    expect(done.credits_remaining).toBe(19);
    const afterSubmission = await request(app.url, "GET", "/api/account", { key: account.key });
    // Charged at once, while still pending.
    expect(afterSubmission.body).toMatchObject({ credits_remaining: 19, usage: { this_month: 1 } });

    const failed = await submit(account, { image: photo, prompt: "crop to 5000x5000 pixels" });
    expect((await waitForJob(app.url, account.key, done.job_id)).status).toBe("done");
    expect((await waitForJob(app.url, account.key, failed.job_id)).status).toBe("error");
    const settled = await request(app.url, "GET", "/api/account", { key: account.key });
    expect(settled.body).toMatchObject({ credits_remaining: 19, usage: { this_month: 1 } });

    await insertPendingJob(app.services, account.userId, { charge: true });
    const old = await insertPendingJob(app.services, account.userId, { charge: true });
    await db.query(
      "update jobs set created_at = date_trunc('month', now() at time zone 'UTC') at time zone 'UTC' - interval '1 second' where id = $1",
      [old],
    );
    const later = await request(app.url, "GET", "/api/account", { key: account.key });
    expect(later.body).toMatchObject({ credits_remaining: 17, usage: { this_month: 2 } });
    expect(await balance(account.userId)).toBe(17);
  });

  it("answers the session cookie too, before the email is verified", async () => {
    const account = await signUp(app.url, { name: "Cookie Person" });
    const response = await request(app.url, "GET", "/api/account", { cookie: account.cookie });
    expect(response.status, response.text).toBe(200);
    expect(response.body).toMatchObject({
      email: account.email,
      name: "Cookie Person",
      email_verified: false,
      credits_remaining: 10,
    });
  });

  it("is 401 without credentials, with a revoked key, or with a bad bearer beside a good cookie", async () => {
    const account = await keyedAccount(app);
    expect((await request(app.url, "GET", "/api/account")).body.code).toBe("unauthorized");
    const wrong = await request(app.url, "GET", "/api/account", {
      cookie: account.cookie,
      headers: { authorization: `Bearer pk_${"x".repeat(43)}` },
    });
    expect(wrong.status).toBe(401);
    const keys = await request(app.url, "GET", "/api/keys", { key: account.key });
    await request(app.url, "DELETE", `/api/keys/${keys.body.keys[0].id}`, { key: account.key });
    const revoked = await request(app.url, "GET", "/api/account", { key: account.key });
    expect(revoked.status).toBe(401);
    expect(revoked.body.code).toBe("unauthorized");
  });
});

describe("GET /api/jobs", () => {
  let account: KeyedAccount;
  let expectedOrder: string[];
  let batchId: string;
  const submitted: Record<string, string> = {};

  beforeAll(async () => {
    account = await keyedAccount(app, { plan: "pro", credits: 100 });
    submitted.first = (await submit(account, { image: photo, prompt: "make it black and white" })).job_id;
    submitted.failed = (await submit(account, { image: photo, prompt: "crop to 5000x5000 pixels" })).job_id;
    const batch = await submit(account, {
      images: [
        { image: photo, prompt: "make it sepia" },
        { image: "@@@", prompt: "make it sepia" },
        { image: photo, prompt: "make it black and white" },
        { image: photo, prompt: "make it sepia" },
      ],
    });
    batchId = batch.batch_id;
    submitted.notStarted = batch.jobs[1].job_id;
    submitted.last = (await submit(account, { image: photo, prompt: "make it black and white" })).job_id;
    for (const job of [submitted.first, submitted.failed, submitted.last, batch.jobs[0].job_id, batch.jobs[2].job_id])
      await waitForJob(app.url, account.key, job as string);
    await waitForJob(app.url, account.key, batch.jobs[3].job_id);
    expectedOrder = await jobIdsNewestFirst(account.userId);
    expect(expectedOrder).toHaveLength(7);
  });

  it("lists every job newest first; a batch's jobs one by one with their batch_id", async () => {
    const response = await request(app.url, "GET", "/api/jobs", { key: account.key });
    expect(response.status, response.text).toBe(200);
    expect(response.body.next_cursor).toBeNull();
    const jobs = response.body.jobs as Listing[];
    expect(jobs.map((job) => job.id)).toEqual(expectedOrder);
    expect(jobs[0]?.id).toBe(submitted.last);
    expect(jobs.at(-1)?.id).toBe(submitted.first);
    // The four jobs of the batch share one creation time: the id orders them, and they stay together.
    const batchRows = jobs.filter((job) => job.batch_id === batchId);
    expect(batchRows).toHaveLength(4);
    expect(new Set(batchRows.map((job) => job.created_at)).size).toBe(1);
    expect(jobs.slice(1, 5).map((job) => job.batch_id)).toEqual([batchId, batchId, batchId, batchId]);
    expect(batchRows.map((job) => job.id)).toEqual([...batchRows.map((job) => job.id)].sort().reverse());
    expect(jobs.find((job) => job.id === submitted.first)?.batch_id).toBeNull();
    for (const job of jobs) {
      expect(Object.keys(job).sort()).toEqual(
        ["batch_id", "created_at", "error_code", "error_message", "id", "metadata", "prompt", "result_url", "status"].sort(),
      );
    }
  });

  it("says what the status endpoint says: metadata, failure, and a signed result link that downloads", async () => {
    const jobs = (await request(app.url, "GET", "/api/jobs", { key: account.key })).body.jobs as Listing[];
    const byId = new Map(jobs.map((job) => [job.id, job]));

    const done = byId.get(submitted.first as string) as Listing;
    const doneStatus = (await request(app.url, "GET", `/api/process/status?job_id=${done.id}`, { key: account.key })).body;
    const { status: _status, ...doneMetadata } = doneStatus;
    expect(done).toMatchObject({ status: "done", prompt: "make it black and white", error_code: null, error_message: null });
    expect(done.metadata).toEqual(doneMetadata);
    expect(done.result_url).toMatch(
      new RegExp(`^${app.config.publicBaseUrl}/files/results/${done.id}\\.jpeg\\?expires=\\d+&signature=[0-9a-f]{64}$`),
    );
    const image = await fetch(done.result_url as string);
    expect(image.status).toBe(200);
    expect(image.headers.get("content-type")).toBe("image/jpeg");

    const failed = byId.get(submitted.failed as string) as Listing;
    const failedStatus = (await request(app.url, "GET", `/api/process/status?job_id=${failed.id}`, { key: account.key })).body;
    expect(failed).toMatchObject({
      status: "error",
      result_url: null,
      error_code: failedStatus.error_code,
      error_message: failedStatus.error_message,
    });
    expect(failed.metadata).toMatchObject({ credits_used: 0 });

    const notStarted = byId.get(submitted.notStarted as string) as Listing;
    expect(notStarted).toMatchObject({ status: "error", error_code: "not_started", result_url: null, batch_id: batchId });
    expect(notStarted.error_message).toMatch(/base64/);

    const pending = await insertPendingJob(app.services, account.userId, { prompt: "still waiting" });
    const withPending = (await request(app.url, "GET", "/api/jobs?limit=1", { key: account.key })).body;
    expect(withPending.jobs[0]).toMatchObject({
      id: pending,
      status: "pending",
      prompt: "still waiting",
      metadata: null,
      result_url: null,
    });
    await db.query("delete from jobs where id = $1", [pending]);
  });

  it("pages with a cursor: no duplicates, no gaps, and a job created between pages shifts nothing", async () => {
    let inserted: string | undefined;
    const pages = await allPages({ key: account.key }, 3, async () => {
      inserted ??= (await submit(account, { image: photo, prompt: "make it sepia" })).job_id;
    });
    expect(pages.map((page) => page.length)).toEqual([3, 3, 1]);
    const seen = pages.flat().map((job) => job.id);
    expect(seen).toEqual(expectedOrder);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).not.toContain(inserted);

    const fresh = (await request(app.url, "GET", "/api/jobs?limit=1", { key: account.key })).body;
    expect(fresh.jobs[0].id).toBe(inserted);
    await waitForJob(app.url, account.key, inserted as string);
    expectedOrder = await jobIdsNewestFirst(account.userId);
  });

  it("pages the same way for the session cookie", async () => {
    const pages = await allPages({ cookie: account.cookie }, 2);
    expect(pages.flat().map((job) => job.id)).toEqual(expectedOrder);
  });

  it("gives 20 by default and up to 100 per page", async () => {
    const many = await keyedAccount(app);
    for (let i = 0; i < 25; i++) await insertPendingJob(app.services, many.userId, { prompt: `job ${i}` });
    const first = (await request(app.url, "GET", "/api/jobs", { key: many.key })).body;
    expect(first.jobs).toHaveLength(20);
    expect(first.next_cursor).toEqual(expect.any(String));
    const rest = (await request(app.url, "GET", `/api/jobs?cursor=${first.next_cursor}`, { key: many.key })).body;
    expect(rest.jobs).toHaveLength(5);
    expect(rest.next_cursor).toBeNull();
    const whole = (await request(app.url, "GET", "/api/jobs?limit=100", { key: many.key })).body;
    expect(whole.jobs.map((job: Listing) => job.id)).toEqual([...first.jobs, ...rest.jobs].map((job: Listing) => job.id));
    expect(whole.jobs.map((job: Listing) => job.prompt)).toEqual(Array.from({ length: 25 }, (_, i) => `job ${24 - i}`));
  });

  it("answers an account without jobs with an empty page", async () => {
    const empty = await keyedAccount(app);
    expect((await request(app.url, "GET", "/api/jobs", { key: empty.key })).body).toEqual({ jobs: [], next_cursor: null });
  });

  it("is offered over tRPC with the same pages", async () => {
    const input = encodeURIComponent(JSON.stringify({ limit: 4 }));
    const response = await request(app.url, "GET", `/trpc/jobs.list?input=${input}`, { key: account.key });
    expect(response.status, response.text).toBe(200);
    expect(response.body.result.data.jobs.map((job: Listing) => job.id)).toEqual(expectedOrder.slice(0, 4));
  });
});

describe("GET /api/jobs refuses bad input with 400 and changes nothing", () => {
  let account: KeyedAccount;
  let cursor: string;

  beforeAll(async () => {
    account = await keyedAccount(app, { plan: "pro" });
    for (let i = 0; i < 3; i++) await insertPendingJob(app.services, account.userId, { charge: true });
    cursor = (await request(app.url, "GET", "/api/jobs?limit=1", { key: account.key })).body.next_cursor;
    expect(cursor).toEqual(expect.any(String));
  });

  const flip = (text: string, at: number) => `${text.slice(0, at)}${text[at] === "A" ? "B" : "A"}${text.slice(at + 1)}`;

  it.each([
    ["limit=0", /limit: must be a whole number from 1 to 100/],
    ["limit=101", /limit: must be a whole number from 1 to 100/],
    ["limit=-5", /limit: must be a whole number from 1 to 100/],
    ["limit=2.5", /limit: must be a whole number from 1 to 100/],
    ["limit=ten", /limit/],
    ["cursor=", /cursor/],
    ["cursor=not-a-cursor", /cursor: is not a cursor this API gave your account/],
    ["cursor=%00%01", /cursor/],
    ["cursor=bm90IGpzb24.AAAAAAAAAAAAAAAAAAAAAA", /cursor: is not a cursor this API gave your account/],
  ])("%s", async (query, message) => {
    const before = {
      credits: await balance(account.userId),
      jobs: await jobCount(app.config.databaseUrl as string, account.userId),
    };
    const response = await request(app.url, "GET", `/api/jobs?${query}`, { key: account.key });
    expect(response.status, response.text).toBe(400);
    expect(response.body.code).toBe("invalid_request");
    expect(response.body.message).toMatch(message);
    expect(await balance(account.userId)).toBe(before.credits);
    expect(await jobCount(app.config.databaseUrl as string, account.userId)).toBe(before.jobs);
  });

  it("refuses a cursor changed anywhere: in its position, in its tag, cut short or lengthened", async () => {
    const [payload = "", tag = ""] = cursor.split(".");
    const changed = [
      `${flip(payload, 3)}.${tag}`,
      `${payload}.${flip(tag, 5)}`,
      cursor.slice(0, -1),
      `${cursor}A`,
      `${Buffer.from(JSON.stringify(["2000-01-01T00:00:00.000000Z", "job_00000000000000000000000000"])).toString("base64url")}.${tag}`,
    ];
    for (const bad of changed) {
      const response = await request(app.url, "GET", `/api/jobs?cursor=${encodeURIComponent(bad)}`, { key: account.key });
      expect(response.status, bad).toBe(400);
      expect(response.body).toMatchObject({ code: "invalid_request", issues: [{ path: "cursor" }] });
    }
    // The untouched cursor still works.
    expect((await request(app.url, "GET", `/api/jobs?cursor=${cursor}`, { key: account.key })).body.jobs).toHaveLength(2);
  });

  it("answers tRPC's bad input with the same code", async () => {
    const input = encodeURIComponent(JSON.stringify({ cursor: "nope" }));
    const response = await request(app.url, "GET", `/trpc/jobs.list?input=${input}`, { key: account.key });
    expect(response.status).toBe(400);
    expect(response.body.error.data).toMatchObject({ code: "invalid_request", httpStatus: 400 });
  });

  it("is 401 without credentials", async () => {
    const response = await request(app.url, "GET", "/api/jobs");
    expect(response.status).toBe(401);
    expect(response.body.code).toBe("unauthorized");
  });
});

describe("tenant isolation", () => {
  it("never shows one account's jobs to another, not even through a cursor made from them", async () => {
    const alice = await keyedAccount(app, { plan: "pro" });
    const bob = await keyedAccount(app, { plan: "pro" });
    const aliceJobs = [];
    for (let i = 0; i < 4; i++) aliceJobs.push(await insertPendingJob(app.services, alice.userId, { prompt: `alice ${i}` }));
    const bobJob = (await submit(bob, { image: photo, prompt: "make it sepia" })).job_id;
    await waitForJob(app.url, bob.key, bobJob);

    const bobPages = await allPages({ key: bob.key }, 1);
    expect(bobPages.flat().map((job) => job.id)).toEqual([bobJob]);
    const bobByCookie = await allPages({ cookie: bob.cookie }, 100);
    expect(bobByCookie.flat().map((job) => job.id)).toEqual([bobJob]);

    const alicePage = (await request(app.url, "GET", "/api/jobs?limit=1", { key: alice.key })).body;
    expect(alicePage.jobs[0].id).toBe(aliceJobs[3]);
    // Alice's cursor, positioned just after her newest job, is refused to Bob, by key or by cookie.
    for (const credential of [{ key: bob.key }, { cookie: bob.cookie }]) {
      const borrowed = await request(app.url, "GET", `/api/jobs?cursor=${alicePage.next_cursor}`, credential);
      expect(borrowed.status).toBe(400);
      expect(borrowed.body.code).toBe("invalid_request");
      expect(borrowed.text).not.toContain("alice");
    }
    // Bob's own cursor, whatever it points at, lists only Bob's jobs.
    const bobCursor = (await request(app.url, "GET", "/api/jobs?limit=1", { key: bob.key })).body.next_cursor;
    expect(bobCursor).toBeNull();

    // And nothing of Bob's shows in Alice's listing.
    const aliceAll = (await allPages({ key: alice.key }, 100)).flat();
    expect(aliceAll.map((job) => job.id)).toEqual([...aliceJobs].reverse());
  });
});

describe("OpenAPI", () => {
  it("documents the account, job-listing and session operations with their credentials, errors and cookies", async () => {
    const document = (await request(app.url, "GET", "/openapi.json")).body;
    const both = [{ bearerAuth: [] }, { sessionCookie: [] }];
    const account = document.paths["/api/account"].get;
    expect(account.security).toEqual(both);
    expect(
      account.responses["200"].content["application/json"].schema.properties.usage.properties.this_month.description,
    ).toMatch(/calendar month \(UTC\).*failed job is refunded and not counted/);
    const jobs = document.paths["/api/jobs"].get;
    expect(jobs.security).toEqual(both);
    // The listing is paged and filtered by status, workflow and day (the dashboard's jobs page, the CLI's filters).
    expect(jobs.parameters.map((parameter: { name: string }) => parameter.name).sort()).toEqual([
      "cursor",
      "from",
      "limit",
      "status",
      "to",
      "workflow",
    ]);
    expect(jobs.responses["400"].content["application/json"].examples).toHaveProperty("invalid_request");
    expect(jobs.responses["401"]).toBeDefined();

    for (const [method, route] of [
      ["get", "/auth/get-session"],
      ["post", "/auth/sign-out"],
      ["post", "/auth/request-password-reset"],
      ["post", "/auth/reset-password"],
    ] as const) {
      expect(document.paths[route][method].security, route).toEqual([]);
      expect(document.paths[route][method].responses["401"], route).toBeUndefined();
    }
    expect(document.paths["/auth/sign-out"].post.responses["200"].headers["Set-Cookie"]).toBeDefined();
    expect(document.paths["/auth/get-session"].get.responses["200"].headers["Set-Cookie"]).toBeDefined();
    expect(
      Object.keys(document.paths["/auth/reset-password"].post.responses["400"].content["application/json"].examples),
    ).toEqual(expect.arrayContaining(["invalid_request", "reset_token_invalid"]));
    expect(document.paths["/auth/request-password-reset"].post.responses["429"].headers["Retry-After"]).toBeDefined();
    expect(document.components.schemas.Error.properties.code.enum).toContain("reset_token_invalid");
  });
});
