import { readFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type KeyedAccount, keyedAccount } from "../../../test/support/accounts";
import { type ApiResponse, request } from "../../../test/support/http-client";
import { base64 } from "../../../test/support/images";
import { insertPendingJob, jobCount } from "../../../test/support/jobs";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

/**
 * The cheap checks come before the expensive work: a submission the plan's
 * limits or the balance would refuse fetches no `image_url`, and the fetches
 * that do run are capped per account and per process. A real service (API
 * role: jobs stay pending) fetches over real HTTP from a real image host on
 * loopback that counts every request and how many are open at once.
 */
const PER_ACCOUNT = 2;
const IN_FLIGHT = 3;
let app: TestApp;
let photo: Buffer;

/** The image host: `/photo.jpg?a=<account>&…` serves a real JPEG, after `delayMs` or once released when `holding`. */
const host = {
  url: "",
  server: undefined as Server | undefined,
  delayMs: 0,
  holding: false,
  held: [] as Array<() => void>,
  requests: [] as string[],
  open: 0,
  maxOpen: 0,
  openByAccount: new Map<string, number>(),
  maxOpenByAccount: new Map<string, number>(),
  /** Requests seen whose query names this account. */
  hits(account: string): number {
    return this.requests.filter((path) => new URL(path, "http://x").searchParams.get("a") === account).length;
  },
  resetPeaks() {
    this.maxOpen = 0;
    this.maxOpenByAccount.clear();
  },
  release() {
    this.holding = false;
    for (const answer of this.held.splice(0)) answer();
  },
};

function serve(req: IncomingMessage, res: ServerResponse) {
  const path = req.url ?? "/";
  host.requests.push(path);
  const account = new URL(path, "http://x").searchParams.get("a") ?? "";
  host.open++;
  host.maxOpen = Math.max(host.maxOpen, host.open);
  const open = (host.openByAccount.get(account) ?? 0) + 1;
  host.openByAccount.set(account, open);
  host.maxOpenByAccount.set(account, Math.max(host.maxOpenByAccount.get(account) ?? 0, open));
  const answer = () => {
    host.open--;
    host.openByAccount.set(account, (host.openByAccount.get(account) ?? 1) - 1);
    if (path.startsWith("/photo.jpg")) res.writeHead(200, { "Content-Type": "image/jpeg" }).end(photo);
    else res.writeHead(404, { "Content-Type": "text/plain" }).end("not found");
  };
  if (host.holding) host.held.push(answer);
  else if (host.delayMs > 0) setTimeout(answer, host.delayMs);
  else answer();
}

beforeAll(async () => {
  photo = await readFile(new URL("../../engine/test/fixtures/coffee.jpg", import.meta.url));
  host.server = createServer(serve);
  await new Promise<void>((resolve) => host.server?.listen(0, "127.0.0.1", resolve));
  host.url = `http://127.0.0.1:${(host.server.address() as AddressInfo).port}`;
  app = await startTestApp(
    {
      RETOUCH_WEBHOOK_ALLOW_INSECURE: "1",
      RETOUCH_IMAGE_FETCHES_IN_FLIGHT: String(IN_FLIGHT),
      RETOUCH_IMAGE_FETCHES_PER_ACCOUNT: String(PER_ACCOUNT),
      RETOUCH_IMAGE_FETCH_QUEUE_WAIT: "20s",
    },
    { role: "api" },
  );
}, 120_000);
afterAll(async () => {
  host.release();
  host.server?.closeAllConnections();
  await new Promise<void>((resolve) => host.server?.close(() => resolve()));
  await app?.close();
});

const submit = (account: KeyedAccount, body: unknown, headers: Record<string, string> = {}) =>
  request(app.url, "POST", "/api/process", { key: account.key, body, headers });
const photoUrl = (account: KeyedAccount, n: number) => `${host.url}/photo.jpg?a=${account.userId}&n=${n}`;
const urlBatch = (account: KeyedAccount, size: number) => ({
  images: Array.from({ length: size }, (_, n) => ({ image_url: photoUrl(account, n), prompt: "make it sepia" })),
});
const base64Batch = (size: number) => ({
  images: Array.from({ length: size }, () => ({ image: base64(photo), prompt: "make it sepia" })),
});
/** What a client sees of a refusal. */
const refusal = (response: ApiResponse) => ({
  status: response.status,
  body: response.body,
  retryAfter: response.headers.get("retry-after"),
});

async function expectNothingCharged(account: KeyedAccount, credits: number, jobs = 0) {
  expect((await app.services.profiles.get(account.userId)).credits).toBe(credits);
  expect(await jobCount(app.config.databaseUrl as string, account.userId)).toBe(jobs);
}

describe("refused before any image_url is fetched, with retouch_submit's own refusal", () => {
  it("no credits: 402 insufficient_credits for a batch and for one image, and no fetch", async () => {
    const account = await keyedAccount(app, { plan: "starter", credits: 0 });
    const batch = await submit(account, urlBatch(account, 3));
    expect(batch.status, batch.text).toBe(402);
    expect(batch.body).toEqual({
      code: "insufficient_credits",
      message: "This request needs 3 credits and your balance is 0; top up before retrying.",
    });
    const single = await submit(account, { image_url: photoUrl(account, 9), prompt: "make it sepia" });
    expect(single.status, single.text).toBe(402);
    expect(host.hits(account.userId)).toBe(0);
    // The same refusal as retouch_submit gives a batch of base64 images (which needs no download).
    expect(refusal(batch)).toEqual(refusal(await submit(account, base64Batch(3))));
    await expectNothingCharged(account, 0);
  });

  it("a batch over the plan: 400 batch_exceeds_plan_limit, and no fetch", async () => {
    const account = await keyedAccount(app, { plan: "free" });
    const response = await submit(account, urlBatch(account, 4));
    expect(response.status, response.text).toBe(400);
    expect(response.body).toEqual({
      code: "batch_exceeds_plan_limit",
      message: "This batch has 4 images; your free plan runs at most 3 at once. Submit fewer images per call.",
    });
    expect(host.hits(account.userId)).toBe(0);
    expect(refusal(response)).toEqual(refusal(await submit(account, base64Batch(4))));
    await expectNothingCharged(account, 10);
  });

  it("over the submissions rate: 429 rate_limited with Retry-After, and no fetch", async () => {
    const account = await keyedAccount(app, { plan: "free" });
    // The free plan's 5 a minute, spent just now (the log retouch_submit keeps).
    await app.services.stores.rateLimits.hit(`submissions:${account.userId}`, { limit: 5, windowMs: 60_000, amount: 5 });
    const response = await submit(account, { image_url: photoUrl(account, 0), prompt: "make it sepia" });
    expect(response.status, response.text).toBe(429);
    expect(response.body).toMatchObject({
      code: "rate_limited",
      message: expect.stringMatching(/^Your free plan accepts 5 images per minute; retry after \d+ s\.$/),
    });
    const retryAfter = Number(response.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(59);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(host.hits(account.userId)).toBe(0);
    const base64Refusal = await submit(account, { image: base64(photo), prompt: "make it sepia" });
    expect(base64Refusal.body.code).toBe("rate_limited");
    expect(Math.abs(Number(base64Refusal.headers.get("retry-after")) - retryAfter)).toBeLessThanOrEqual(1);
    await expectNothingCharged(account, 10);
  });

  it("too many in flight: 429 too_many_in_flight, and no fetch", async () => {
    const account = await keyedAccount(app, { plan: "free" });
    for (let i = 0; i < 3; i++) await insertPendingJob(app.services, account.userId);
    const response = await submit(account, { image_url: photoUrl(account, 0), prompt: "make it sepia" });
    expect(response.status, response.text).toBe(429);
    expect(response.body).toEqual({
      code: "too_many_in_flight",
      message: "3 of your jobs are still processing and your free plan runs at most 3 at once; retry after some finish.",
    });
    expect(host.hits(account.userId)).toBe(0);
    expect(refusal(response)).toEqual(refusal(await submit(account, { image: base64(photo), prompt: "make it sepia" })));
    await expectNothingCharged(account, 10, 3);
  });
});

describe("JobsStore.precheck", () => {
  it("refuses over the rate exactly as retouch_submit does, to the millisecond, counting nothing", async () => {
    const account = await keyedAccount(app, { plan: "free" });
    const jobs = app.services.stores.jobs;
    const now = Date.now();
    await app.services.stores.rateLimits.hit(`submissions:${account.userId}`, {
      limit: 5,
      windowMs: 60_000,
      amount: 4,
      now: now - 20_000,
    });
    const limits = { userId: account.userId, now, windowMs: 60_000, plans: { free: { perMinute: 5, concurrent: 3 } } };
    const prechecked = await jobs.precheck({ ...limits, count: 2 });
    expect(prechecked).toEqual({
      state: "refused",
      refusal: { code: "rate_limited", plan: "free", limit: 5, retryAfterMs: 40_000 },
    });
    const submitted = await jobs.submit({
      ...limits,
      queue: { jobName: "unused", channel: "unused" },
      response: {},
      jobs: ["a", "b"].map((n) => ({
        id: `job_precheck_${n}_${account.userId}`,
        batchId: null,
        batchIndex: null,
        status: "pending" as const,
        workflow: "generative_edit" as const,
        prompt: "make it sepia",
        negativePrompt: null,
        detect: null,
        outputFormat: "jpeg" as const,
        quality: null,
        webhookUrl: null,
        inputBlob: null,
        maskBlob: null,
        inputWidth: 10,
        inputHeight: 10,
        rejection: null,
      })),
    });
    expect(submitted).toEqual(prechecked);
    // One more fits: the pre-check counted nothing.
    expect(await jobs.precheck({ ...limits, count: 1 })).toEqual({ state: "clear" });
  });
});

describe("submissions that pass the checks", () => {
  it("a batch fetches each image once, and a replay with its key is answered from the saved response, fetching nothing", async () => {
    const account = await keyedAccount(app, { plan: "starter" });
    const headers = { "Idempotency-Key": `prechecks-${account.userId}` };
    const response = await submit(account, urlBatch(account, 3), headers);
    expect(response.status, response.text).toBe(200);
    expect(response.body.credits_remaining).toBe(7);
    expect(host.hits(account.userId)).toBe(3);
    // Even with no credits left, the replay comes before any check.
    await app.services.profiles.grantCredits(account.userId, -7, "test");
    const replay = await submit(account, urlBatch(account, 3), headers);
    expect(replay.status, replay.text).toBe(200);
    expect(replay.body).toEqual(response.body);
    expect(host.hits(account.userId)).toBe(3);
  });
});

describe("image fetches capped across requests", () => {
  it(`one account's parallel batches never have more than ${PER_ACCOUNT} fetches open at once`, async () => {
    const account = await keyedAccount(app, { plan: "pro", credits: 100 });
    host.delayMs = 150;
    host.resetPeaks();
    try {
      const responses = await Promise.all(Array.from({ length: 3 }, () => submit(account, urlBatch(account, 3))));
      for (const response of responses) expect(response.status, response.text).toBe(200);
    } finally {
      host.delayMs = 0;
    }
    expect(host.hits(account.userId)).toBe(9);
    expect(host.maxOpenByAccount.get(account.userId)).toBe(PER_ACCOUNT);
  });

  it(`all accounts together never have more than ${IN_FLIGHT} fetches open at once`, async () => {
    const accounts = await Promise.all(Array.from({ length: 3 }, () => keyedAccount(app, { plan: "pro", credits: 100 })));
    host.delayMs = 150;
    host.resetPeaks();
    try {
      const responses = await Promise.all(accounts.map((account) => submit(account, urlBatch(account, 2))));
      for (const response of responses) expect(response.status, response.text).toBe(200);
    } finally {
      host.delayMs = 0;
    }
    expect(host.maxOpen).toBe(IN_FLIGHT);
  });

  it("past the bounded wait queue: 503 service_unavailable with Retry-After at once, logged as a warning; the rest proceed", async () => {
    const account = await keyedAccount(app, { plan: "pro", credits: 100 });
    const single = (n: number) => submit(account, { image_url: photoUrl(account, n), prompt: "make it sepia" });
    const logMark = app.logs.length;
    host.holding = true;
    const admitted: Array<Promise<ApiResponse>> = [];
    try {
      // Two fetches open (the account's cap), then 4 waiting per slot: 8 in the queue.
      for (let n = 0; n < 2; n++) admitted.push(single(n));
      await expect.poll(() => host.openByAccount.get(account.userId), { timeout: 10_000 }).toBe(2);
      for (let n = 2; n < 10; n++) admitted.push(single(n));
      // The waiters have not reached the host yet: the service counts them.
      await expect.poll(() => app.services.submissions.downloadsWaiting(account.userId), { timeout: 10_000 }).toBe(8);
      const refused = await single(10);
      expect(refused.status, refused.text).toBe(503);
      expect(refused.body).toEqual({
        code: "service_unavailable",
        message:
          "Too many image_url downloads are running for your account; nothing was charged. Retry after 20 s (with the same Idempotency-Key).",
      });
      expect(refused.headers.get("retry-after")).toBe("20");
      expect(host.hits(account.userId)).toBe(2);
    } finally {
      host.release();
    }
    for (const response of await Promise.all(admitted)) expect(response.status, response.text).toBe(200);
    expect(host.hits(account.userId)).toBe(10);
    expect((await app.services.profiles.get(account.userId)).credits).toBe(90);
    const lines = app.logs.slice(logMark).map((line) => JSON.parse(line) as { level: number; msg: string; err?: unknown });
    expect(lines.filter((line) => line.level >= 50)).toEqual([]);
    expect(lines.filter((line) => line.msg === "image fetch refused: too many at once")).toMatchObject([{ level: 40 }]);
  });
});

describe("a client's failed image fetch is a warning without a stack, never an error line", () => {
  it.each([
    ["a 404 (400 invalid_request)", () => `${host.url}/missing.jpg`, 400, "invalid_request"],
    [
      "a host that cannot be reached (502 image_fetch_failed)",
      () => "http://127.0.0.1:9/photo.jpg?token=s3cr3t",
      502,
      "image_fetch_failed",
    ],
  ])("%s", async (_label, url, status, code) => {
    const account = await keyedAccount(app);
    const logMark = app.logs.length;
    const response = await submit(account, { image_url: url(), prompt: "make it sepia" });
    expect(response.status, response.text).toBe(status);
    expect(response.body.code).toBe(code);
    const lines = app.logs.slice(logMark);
    const parsed = lines.map((line) => JSON.parse(line) as { level: number; msg: string; err?: unknown; code?: string });
    expect(parsed.filter((line) => line.level >= 50)).toEqual([]);
    const warnings = parsed.filter((line) => line.msg === "image fetch failed");
    expect(warnings).toMatchObject([
      { level: 40, code, account: account.userId, host: expect.stringMatching(/^127\.0\.0\.1:\d+$/) },
    ]);
    expect(warnings[0]?.err).toBeUndefined();
    // The URL may carry a token: only its host is logged.
    expect(lines.join("\n")).not.toContain("s3cr3t");
    expect(lines.join("\n")).not.toMatch(/"stack"/);
  });
});
