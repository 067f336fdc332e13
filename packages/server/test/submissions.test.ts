import { JOB_FAILURE_CODES, jobFailure } from "@retouch/core";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type KeyedAccount, keyedAccount } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { base64, productPhoto, rectangleMask } from "../../../test/support/images";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

/**
 * Submission rules over real HTTP. The app runs the API role only, so jobs
 * stay pending: the in-flight and credit arithmetic is exact.
 */
let app: TestApp;
let photo: string;
beforeAll(async () => {
  app = await startTestApp(
    { RETOUCH_MAX_REQUEST_BYTES: String(3 * 1024 * 1024), RETOUCH_MAX_IMAGE_PIXELS: "1000000" },
    { role: "api" },
  );
  photo = base64(await productPhoto());
});
afterAll(() => app.close());

async function balanceOf(account: KeyedAccount) {
  return (await app.services.profiles.get(account.userId)).credits;
}

async function ledgerSum(account: KeyedAccount) {
  return (await app.services.stores.profiles.ledger(account.userId)).reduce((sum, row) => sum + row.delta, 0);
}

const submit = (account: KeyedAccount, body: unknown, headers: Record<string, string> = {}) =>
  request(app.url, "POST", "/api/process", { key: account.key, body, headers });

describe("POST /api/process, one image", () => {
  it("accepts the job, debits one credit in the ledger, and answers job_id + credits_remaining", async () => {
    const account = await keyedAccount(app);
    const response = await submit(account, { image: photo, prompt: "remove the background" });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ job_id: expect.stringMatching(/^job_[0-9a-z]{26}$/), credits_remaining: 9 });
    expect(await balanceOf(account)).toBe(9);
    const ledger = await app.services.stores.profiles.ledger(account.userId);
    expect(ledger.at(-1)).toEqual({ delta: -1, balanceAfter: 9, reason: "job_debit", jobId: response.body.job_id });
    const status = await request(app.url, "GET", `/api/process/status?job_id=${response.body.job_id}`, { key: account.key });
    expect(status.body).toEqual({ status: "pending" });
  });

  it("accepts a data: URL prefix and every input format", async () => {
    const account = await keyedAccount(app);
    for (const format of ["jpeg", "png", "webp"] as const) {
      const image = `data:image/${format};base64,${base64(await productPhoto({ format }))}`;
      const response = await submit(account, { image, prompt: "make it black and white", format: "webp", quality: 80 });
      expect(response.status, response.text).toBe(200);
      await app.services.stores.jobs.settleFailed(response.body.job_id, jobFailure("internal_error", "test: free the slot"));
    }
  });

  const gif = Buffer.from("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7", "base64");
  const bomb = () =>
    sharp({ create: { width: 5000, height: 5000, channels: 3, background: "#fff" } })
      .png()
      .toBuffer();
  const cases: Array<[string, () => Promise<Record<string, unknown>>, RegExp]> = [
    ["no image", async () => ({ prompt: "remove the background" }), /image: is required/],
    ["no prompt", async () => ({ image: photo }), /prompt: is required/],
    ["an empty prompt", async () => ({ image: photo, prompt: "   " }), /prompt: must not be empty/],
    ["a prompt over 2000 characters", async () => ({ image: photo, prompt: "x".repeat(2001) }), /at most 2000/],
    ["image not base64", async () => ({ image: "not base64 at all!", prompt: "make it sepia" }), /image: is not valid base64/],
    [
      "image bytes that are not an image",
      async () => ({ image: base64(Buffer.from("hello world")), prompt: "make it sepia" }),
      /JPEG, PNG or WebP/,
    ],
    ["a GIF", async () => ({ image: base64(gif), prompt: "make it sepia" }), /gif.*send JPEG, PNG or WebP/i],
    [
      "a decompression bomb over the pixel limit",
      async () => ({ image: base64(await bomb()), prompt: "make it sepia" }),
      /limit is 1\.0 MP/,
    ],
    ["format gif", async () => ({ image: photo, prompt: "make it sepia", format: "gif" }), /format/],
    [
      "quality 0",
      async () => ({ image: photo, prompt: "make it sepia", quality: 0 }),
      /quality: must be an integer from 1 to 100/,
    ],
    [
      "quality 101",
      async () => ({ image: photo, prompt: "make it sepia", quality: 101 }),
      /quality: must be an integer from 1 to 100/,
    ],
    [
      "quality 50.5",
      async () => ({ image: photo, prompt: "make it sepia", quality: 50.5 }),
      /quality: must be an integer from 1 to 100/,
    ],
    ["quality as a string", async () => ({ image: photo, prompt: "make it sepia", quality: "80" }), /quality/],
    [
      "a JPEG mask",
      async () => ({ image: photo, prompt: "make it sepia", mask: base64(await productPhoto({ format: "jpeg" })) }),
      /mask: must be a PNG/,
    ],
    [
      "detect without spaced periods",
      async () => ({ image: photo, prompt: "make it sepia", detect: "person.car" }),
      /detect: must be terms separated by " \. "/,
    ],
    ["detect with commas", async () => ({ image: photo, prompt: "make it sepia", detect: "person, car" }), /detect/],
    [
      "an http: webhook",
      async () => ({ image: photo, prompt: "make it sepia", webhook_url: "http://example.com/hook" }),
      /webhook_url: must use https:/,
    ],
    [
      "a loopback webhook",
      async () => ({ image: photo, prompt: "make it sepia", webhook_url: "https://127.0.0.1/hook" }),
      /public address/,
    ],
    [
      "a private-network webhook",
      async () => ({ image: photo, prompt: "make it sepia", webhook_url: "https://10.1.2.3/hook" }),
      /public address/,
    ],
    [
      "the cloud metadata address",
      async () => ({ image: photo, prompt: "make it sepia", webhook_url: "https://169.254.169.254/latest" }),
      /public address/,
    ],
    [
      "a webhook host that resolves to loopback",
      async () => ({ image: photo, prompt: "make it sepia", webhook_url: "https://localhost:8443/hook" }),
      /public address/,
    ],
    [
      "a webhook that is not a URL",
      async () => ({ image: photo, prompt: "make it sepia", webhook_url: "not a url" }),
      /webhook_url: is not a valid URL/,
    ],
    [
      "both image and images",
      async () => ({ image: photo, prompt: "make it sepia", images: [{ image: photo, prompt: "make it sepia" }] }),
      /either one image or "images"/,
    ],
    ["an empty batch", async () => ({ images: [] }), /at least 1 image/],
    [
      "51 images",
      async () => ({ images: Array.from({ length: 51 }, () => ({ image: "x", prompt: "make it sepia" })) }),
      /at most 50 images/,
    ],
  ];
  it.each(cases)("answers 400 for %s, with a message naming the problem, and charges nothing", async (_label, body, message) => {
    const account = await keyedAccount(app, { plan: "pro" });
    const response = await submit(account, await body());
    expect(response.status, response.text).toBe(400);
    expect(response.body.code).toMatch(/^(invalid_request|batch_exceeds_plan_limit)$/);
    expect(response.body.message).toMatch(message);
    expect(await balanceOf(account)).toBe(10);
    expect(await app.services.stores.jobs.countPending(account.userId)).toBe(0);
  });

  it("answers 413 for a body over RETOUCH_MAX_REQUEST_BYTES, before reading it", async () => {
    const account = await keyedAccount(app);
    const response = await submit(account, { image: "A".repeat(4 * 1024 * 1024), prompt: "make it sepia" });
    expect(response.status).toBe(413);
    expect(response.body.code).toBe("payload_too_large");
    expect(await balanceOf(account)).toBe(10);
  });

  it("answers 403 email_unverified when the account's email is not verified", async () => {
    const account = await keyedAccount(app);
    const client = (await import("pg")).default;
    const db = new client.Client({ connectionString: app.config.databaseUrl });
    await db.connect();
    await db.query(`update "user" set "emailVerified" = false where id = $1`, [account.userId]);
    await db.end();
    const response = await submit(account, { image: photo, prompt: "remove the background" });
    expect(response.status).toBe(403);
    expect(response.body.code).toBe("email_unverified");
    expect(await balanceOf(account)).toBe(10);
  });

  it("answers 402 when the balance cannot cover the image; nothing is created", async () => {
    const account = await keyedAccount(app, { credits: 0 });
    const response = await submit(account, { image: photo, prompt: "remove the background" });
    expect(response.status).toBe(402);
    expect(response.body.code).toBe("insufficient_credits");
    expect(await balanceOf(account)).toBe(0);
    expect(await app.services.stores.jobs.countPending(account.userId)).toBe(0);
  });
});

describe("POST /api/process, a batch", () => {
  it("starts the good items, lists the bad ones with their reason, and charges only what started", async () => {
    const account = await keyedAccount(app, { plan: "starter" });
    const mask = base64(await rectangleMask(320, 240, { left: 100, top: 80, width: 60, height: 50 }));
    const response = await submit(account, {
      images: [
        { image: photo, prompt: "remove the background" },
        { image: "@@@", prompt: "make it sepia" },
        { image: photo, prompt: "erase this", mask },
        { image: photo },
        { image: photo, prompt: "make it sepia", webhook_url: "http://insecure.example/hook" },
      ],
    });
    expect(response.status, response.text).toBe(200);
    expect(response.body.batch_id).toMatch(/^bat_[0-9a-z]{26}$/);
    expect(response.body.credits_remaining).toBe(8);
    const jobs = response.body.jobs as Array<{ job_id: string; status: string; error?: string }>;
    expect(jobs.map((job) => job.status)).toEqual(["pending", "error", "pending", "error", "error"]);
    expect(jobs[1]?.error).toMatch(/image: is not valid base64/);
    expect(jobs[3]?.error).toMatch(/prompt/);
    expect(jobs[4]?.error).toMatch(/https/);
    expect(jobs[0]).not.toHaveProperty("error");
    expect(await balanceOf(account)).toBe(8);

    const batch = await request(app.url, "GET", `/api/process/status?batch_id=${response.body.batch_id}`, { key: account.key });
    // An item that never started is `not_started`, and says why in both places.
    expect(batch.body).toEqual({
      batch_id: response.body.batch_id,
      jobs: jobs.map((job) =>
        job.status === "error"
          ? { job_id: job.job_id, status: "error", error: job.error, error_code: "not_started", error_message: job.error }
          : { job_id: job.job_id, status: job.status },
      ),
    });
    const rejected = await request(app.url, "GET", `/api/process/status?job_id=${jobs[1]?.job_id}`, { key: account.key });
    expect(rejected.body).toMatchObject({
      status: "error",
      credits_used: 0,
      credits_remaining: 8,
      error: expect.stringMatching(/base64/),
      error_code: "not_started",
      error_message: expect.stringMatching(/base64/),
    });
  });

  it("answers 400 batch_exceeds_plan_limit for a batch larger than the plan's concurrency", async () => {
    const account = await keyedAccount(app);
    const response = await submit(account, {
      images: Array.from({ length: 4 }, () => ({ image: photo, prompt: "make it sepia" })),
    });
    expect(response.status).toBe(400);
    expect(response.body.code).toBe("batch_exceeds_plan_limit");
    expect(response.body.message).toMatch(/free plan runs at most 3/);
    expect(await balanceOf(account)).toBe(10);
  });

  it("answers 402 when the balance covers only part of the batch; nothing is created", async () => {
    const account = await keyedAccount(app, { credits: 2 });
    const response = await submit(account, {
      images: Array.from({ length: 3 }, () => ({ image: photo, prompt: "make it sepia" })),
    });
    expect(response.status).toBe(402);
    expect(await balanceOf(account)).toBe(2);
  });
});

describe("plan limits", () => {
  it("refuses a job over the plan's concurrent limit with 429 too_many_in_flight", async () => {
    const account = await keyedAccount(app);
    for (let i = 0; i < 3; i++) expect((await submit(account, { image: photo, prompt: "make it sepia" })).status).toBe(200);
    const response = await submit(account, { image: photo, prompt: "make it sepia" });
    expect(response.status).toBe(429);
    expect(response.body.code).toBe("too_many_in_flight");
    expect(await balanceOf(account)).toBe(7);
  });

  it("refuses the sixth image in a minute on the free plan with 429 rate_limited and Retry-After", async () => {
    const started = Date.now();
    const account = await keyedAccount(app);
    for (let i = 0; i < 5; i++) {
      const accepted = await submit(account, { image: photo, prompt: "make it sepia" });
      expect(accepted.status, accepted.text).toBe(200);
      // Settle it, so the in-flight limit (3) does not speak first.
      await app.services.stores.jobs.settleFailed(accepted.body.job_id, jobFailure("internal_error", "test: free the slot"));
    }
    const response = await submit(account, { image: photo, prompt: "make it sepia" });
    expect(response.status).toBe(429);
    expect(response.body.code).toBe("rate_limited");
    // A sliding window: the next image fits when the first of the five is a minute old.
    const retryAfter = Number(response.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(60 - Math.ceil((Date.now() - started) / 1000));
    expect(retryAfter).toBeLessThanOrEqual(60);
  });

  it("holds under parallel requests: never more in flight than the plan allows", async () => {
    const account = await keyedAccount(app);
    const responses = await Promise.all(
      Array.from({ length: 12 }, () => submit(account, { image: photo, prompt: "make it sepia" })),
    );
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(3);
    expect(statuses.filter((status) => status === 429)).toHaveLength(9);
    expect(await balanceOf(account)).toBe(7);
  });
});

describe("credits under concurrency", () => {
  it("never lets the balance go negative, and the ledger always sums to it", async () => {
    const account = await keyedAccount(app, { plan: "pro", credits: 5 });
    const responses = await Promise.all(
      Array.from({ length: 30 }, () => submit(account, { image: photo, prompt: "make it sepia" })),
    );
    const accepted = responses.filter((response) => response.status === 200);
    expect(accepted).toHaveLength(5);
    expect(responses.filter((response) => response.status === 402)).toHaveLength(25);
    expect(new Set(accepted.map((response) => response.body.credits_remaining))).toEqual(new Set([0, 1, 2, 3, 4]));
    expect(await balanceOf(account)).toBe(0);
    expect(await ledgerSum(account)).toBe(0);
  });
});

describe("Idempotency-Key", () => {
  it("returns the original job for a retry with the same body and charges once", async () => {
    const account = await keyedAccount(app, { plan: "pro" });
    const headers = { "Idempotency-Key": "0b8f4c1e-7f7a-4d5e-9a43-1a1b2c3d4e5f" };
    const first = await submit(account, { image: photo, prompt: "remove the background" }, headers);
    const again = await submit(account, { prompt: "remove the background", image: photo }, headers);
    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(await balanceOf(account)).toBe(9);
  });

  it("holds for parallel retries: one job, one debit", async () => {
    const account = await keyedAccount(app, { plan: "pro" });
    const headers = { "Idempotency-Key": "parallel-retry-1" };
    const responses = await Promise.all(
      Array.from({ length: 10 }, () => submit(account, { image: photo, prompt: "make it sepia" }, headers)),
    );
    expect(responses.map((response) => response.status)).toEqual(Array(10).fill(200));
    expect(new Set(responses.map((response) => response.body.job_id)).size).toBe(1);
    expect(await balanceOf(account)).toBe(9);
    expect(await ledgerSum(account)).toBe(9);
  });

  it("refuses the same key with a different body (422 idempotency_key_reused) and charges nothing", async () => {
    const account = await keyedAccount(app, { plan: "pro" });
    const headers = { "Idempotency-Key": "reused-key" };
    expect((await submit(account, { image: photo, prompt: "make it sepia" }, headers)).status).toBe(200);
    const other = await submit(account, { image: photo, prompt: "make it black and white" }, headers);
    expect(other.status).toBe(422);
    expect(other.body.code).toBe("idempotency_key_reused");
    expect(await balanceOf(account)).toBe(9);
  });

  it("keeps keys per account", async () => {
    const [first, second] = await Promise.all([keyedAccount(app), keyedAccount(app)]);
    const headers = { "Idempotency-Key": "shared-key" };
    const a = await submit(first, { image: photo, prompt: "make it sepia" }, headers);
    const b = await submit(second, { image: photo, prompt: "make it sepia" }, headers);
    expect(b.body.job_id).not.toBe(a.body.job_id);
  });

  it("does not record a key for a refused request", async () => {
    const account = await keyedAccount(app, { credits: 0 });
    const headers = { "Idempotency-Key": "refused-first" };
    expect((await submit(account, { image: photo, prompt: "make it sepia" }, headers)).status).toBe(402);
    await app.services.profiles.grantCredits(account.userId, 1);
    expect((await submit(account, { image: photo, prompt: "make it sepia" }, headers)).status).toBe(200);
  });
});

describe("GET /api/process/status and /result", () => {
  it("answers 400 without exactly one valid id", async () => {
    const account = await keyedAccount(app);
    for (const query of ["", "?job_id=job_x&batch_id=bat_y", "?job_id=nope", "?batch_id=12"]) {
      const response = await request(app.url, "GET", `/api/process/status${query}`, { key: account.key });
      expect(response.status, query).toBe(400);
      expect(response.body.code).toBe("invalid_request");
    }
  });

  it("answers 404 for an unknown job or batch, and for another account's", async () => {
    const [owner, other] = await Promise.all([keyedAccount(app), keyedAccount(app)]);
    const job = await submit(owner, { image: photo, prompt: "make it sepia" });
    const batch = await submit(owner, { images: [{ image: photo, prompt: "make it sepia" }] });
    for (const path of [
      `/api/process/status?job_id=job_${"0".repeat(26)}`,
      `/api/process/status?batch_id=bat_${"0".repeat(26)}`,
      `/api/process/result?job_id=job_${"0".repeat(26)}`,
    ]) {
      expect((await request(app.url, "GET", path, { key: owner.key })).status, path).toBe(404);
    }
    for (const path of [
      `/api/process/status?job_id=${job.body.job_id}`,
      `/api/process/status?batch_id=${batch.body.batch_id}`,
      `/api/process/result?job_id=${job.body.job_id}`,
    ]) {
      const response = await request(app.url, "GET", path, { key: other.key });
      expect(response.status, path).toBe(404);
      expect(response.body.code).toBe("not_found");
    }
  });

  it("answers the result with 202 while pending and 500 once failed (refunded)", async () => {
    const account = await keyedAccount(app);
    const job = await submit(account, { image: photo, prompt: "make it sepia" });
    const pending = await request(app.url, "GET", `/api/process/result?job_id=${job.body.job_id}`, { key: account.key });
    expect(pending.status).toBe(202);
    expect(pending.body).toEqual({ job_id: job.body.job_id, status: "pending" });

    await app.services.stores.jobs.settleFailed(
      job.body.job_id,
      jobFailure("internal_error", "internal: engine exploded with secret details"),
    );
    const failed = await request(app.url, "GET", `/api/process/result?job_id=${job.body.job_id}`, { key: account.key });
    expect(failed.status).toBe(500);
    expect(failed.body).toMatchObject({ code: "job_failed", error: "Processing failed", error_code: "internal_error" });
    expect(failed.text).not.toContain("secret details");
    const status = await request(app.url, "GET", `/api/process/status?job_id=${job.body.job_id}`, { key: account.key });
    expect(status.body).toEqual({
      status: "error",
      error: "Processing failed",
      error_code: "internal_error",
      error_message: JOB_FAILURE_CODES.internal_error.message,
      width: 320,
      height: 240,
      format: "jpeg",
      credits_used: 0,
      credits_remaining: 10,
      processing_time_ms: null,
    });
    expect(await balanceOf(account)).toBe(10);
    expect(await ledgerSum(account)).toBe(10);
  });
});
