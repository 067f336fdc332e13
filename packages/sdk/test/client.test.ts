import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyedAccount, uniqueEmail, verifyEmail } from "../../../test/support/accounts";
import { productPhoto, rectangleMask } from "../../../test/support/images";
import { startTestApp, type TestApp } from "../../../test/support/test-app";
import { AbortedError, ApiError, JobFailedError, NetworkError, Retouch, TimeoutError } from "../src/index";

/** The SDK from its sources against a real Retouch over HTTP. */
let app: TestApp;
let retouch: Retouch;
let userId: string;
let scratch: string;
let photo: Buffer;

beforeAll(async () => {
  // The development flag lets the service fetch image_urls from the loopback image server below.
  app = await startTestApp({ RETOUCH_QUEUE_POLL_INTERVAL: "200ms", RETOUCH_WEBHOOK_ALLOW_INSECURE: "1" });
  const account = await keyedAccount(app, { plan: "pro", credits: 100 });
  userId = account.userId;
  retouch = new Retouch({ baseUrl: app.url, apiKey: account.key });
  scratch = await mkdtemp(path.join(os.tmpdir(), "retouch-sdk-"));
  photo = await productPhoto();
});
afterAll(async () => {
  await app.close();
  await rm(scratch, { recursive: true, force: true });
});

describe("accounts and keys", () => {
  it("signs up, keeps the session cookie, and manages keys with it", async () => {
    const anonymous = new Retouch({ baseUrl: app.url });
    const email = uniqueEmail("sdk");
    const session = await anonymous.signUp({ email, password: "sdk password 1", name: "SDK" });
    expect(session.user.email).toBe(email);
    expect(session.cookie).toMatch(/^retouch\.session_token=/);
    const signedIn = await anonymous.signIn({ email, password: "sdk password 1" });
    expect(signedIn.token).not.toBe(session.token);

    const withSession = new Retouch({ baseUrl: app.url, ...(signedIn.cookie ? { sessionCookie: signedIn.cookie } : {}) });
    await expect(withSession.createKey("too early")).rejects.toMatchObject({
      name: "ApiError",
      code: "email_unverified",
      status: 403,
    });
    await verifyEmail(app.url, app.outboxDir, email);
    const created = await withSession.createKey("laptop");
    expect(created.key).toMatch(/^pk_/);
    const withKey = new Retouch({ baseUrl: app.url, apiKey: created.key });
    expect((await withKey.listKeys()).map((key) => key.id)).toContain(created.id);
    expect((await withKey.webhookSecret()).secret).toMatch(/^[0-9a-f]{64}$/);
    await withKey.revokeKey(created.id);
    await expect(withKey.listKeys()).rejects.toMatchObject({ code: "unauthorized", status: 401 });
  });

  it("answers wrong credentials and duplicates with typed ApiErrors", async () => {
    const anonymous = new Retouch({ baseUrl: app.url });
    const error = await anonymous.signIn({ email: uniqueEmail(), password: "nope nope" }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ code: "invalid_credentials", status: 401 });
  });
});

describe("edit", () => {
  it("submits, waits and downloads, from a Buffer, a file path, a URL and a Blob", async () => {
    const file = path.join(scratch, "photo.png");
    await writeFile(file, photo);
    const fetchedBy: string[] = [];
    const imageServer: Server = createServer((req, res) => {
      fetchedBy.push(req.headers["user-agent"] ?? "");
      res.writeHead(200, { "content-type": "image/png" }).end(photo);
    });
    await new Promise<void>((resolve) => imageServer.listen(0, "127.0.0.1", resolve));
    const imageUrl = `http://127.0.0.1:${(imageServer.address() as AddressInfo).port}/photo.png`;
    try {
      for (const input of [photo, file, imageUrl, new URL(imageUrl), new Blob([photo])]) {
        const result = await retouch.edit(input, "remove the background", { intervalMs: 250 });
        expect(result).toMatchObject({ format: "png", width: 320, height: 240, credits_used: 1 });
        const bytes = await result.download();
        const meta = await sharp(bytes).metadata();
        expect(meta).toMatchObject({ format: "png", width: 320, height: 240, hasAlpha: true });
      }
      // URLs travel as image_url: the service fetched them, the SDK did not.
      expect(fetchedBy).toEqual(["Retouch-ImageFetch/1.0", "Retouch-ImageFetch/1.0"]);
    } finally {
      await new Promise<void>((resolve) => imageServer.close(() => resolve()));
    }
  });

  it("passes every option through (format, quality, mask, detect) and reports a failed job as job_failed, refunded", async () => {
    // detect names things absent from the picture: the job fails rather than return it unchanged.
    const webp = await retouch.edit(photo, "make it black and white", { format: "webp", quality: 60, intervalMs: 250 });
    expect(webp.format).toBe("webp");
    const mask = await rectangleMask(320, 240, { left: 80, top: 40, width: 160, height: 160 });
    const masked = await retouch.edit(photo, "remove the object", { mask, format: "png", intervalMs: 250 });
    expect(masked).toMatchObject({ format: "png", width: 320 });
    const detected = await retouch.submit(photo, "remove them", { detect: "person . dog" });
    const status = await retouch.waitForJob(detected.job_id, { intervalMs: 250 });
    expect(status).toMatchObject({
      status: "error",
      error_code: "nothing_detected",
      error_message: "No person was found in the image.",
    });
    const before = (await app.services.profiles.get(userId)).credits;
    const failure = await retouch.edit(photo, "remove the giraffe", { intervalMs: 250 }).catch((caught: unknown) => caught);
    expect(failure).toBeInstanceOf(JobFailedError);
    expect(failure).toBeInstanceOf(ApiError);
    expect(failure).toMatchObject({
      code: "job_failed",
      errorCode: "nothing_detected",
      errorMessage: "No giraffe was found in the image.",
      message: expect.stringContaining("No giraffe was found in the image."),
    });
    // result() of the failed job throws the same.
    const again = await retouch.result((failure as JobFailedError).jobId).catch((caught: unknown) => caught);
    expect(again).toBeInstanceOf(JobFailedError);
    expect(again).toMatchObject({ status: 500, errorCode: "nothing_detected", jobId: (failure as JobFailedError).jobId });
    expect((await app.services.profiles.get(userId)).credits).toBe(before);
  });

  it("refuses bad input with the server's code and message, before waiting", async () => {
    const error = await retouch.submit(photo, "x", { quality: 0 }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ name: "ApiError", code: "invalid_request", status: 400 });
    expect((error as ApiError).issues?.[0]?.path).toBe("quality");
    await expect(retouch.submit(path.join(scratch, "missing.png"), "x")).rejects.toThrow(/No file at/);
  });

  it("submits a batch and follows it", async () => {
    const batch = await retouch.submitBatch([
      { image: photo, prompt: "make it sepia" },
      { image: photo, prompt: "rotate 90 degrees", format: "png" },
    ]);
    expect(batch.jobs.map((job) => job.status)).toEqual(["pending", "pending"]);
    for (const job of batch.jobs) expect((await retouch.waitForJob(job.job_id, { intervalMs: 250 })).status).toBe("done");
    expect((await retouch.batchStatus(batch.batch_id)).jobs.map((job) => job.status)).toEqual(["done", "done"]);
  });
});

describe("waiting", () => {
  it("stops on its AbortSignal (AbortedError) and on its timeout (TimeoutError)", async () => {
    // A pending job no worker will take: the API-only app never processes.
    const idle = await startTestApp({}, { role: "api" });
    try {
      const owner = await keyedAccount(idle);
      const client = new Retouch({ baseUrl: idle.url, apiKey: owner.key });
      const { job_id: jobId } = await client.submit(photo, "make it sepia");
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 300);
      await expect(client.waitForJob(jobId, { intervalMs: 250, signal: controller.signal })).rejects.toBeInstanceOf(AbortedError);
      await expect(client.waitForJob(jobId, { intervalMs: 250, timeoutMs: 600 })).rejects.toBeInstanceOf(TimeoutError);
      expect(await client.result(jobId)).toBeUndefined();
    } finally {
      await idle.close();
    }
  });
});

describe("retries", () => {
  it("retries a 429 after Retry-After, and a 502, with the same Idempotency-Key: one job, one charge", async () => {
    const seen: Array<{ status: number; key: string | undefined }> = [];
    let calls = 0;
    // A gateway in front of the service: the first submission is rate limited, the second meets a broken upstream.
    const gateway = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const key = req.headers["idempotency-key"] as string | undefined;
      if (req.url?.startsWith("/trpc/process.submit") && calls++ < 2) {
        const status = calls === 1 ? 429 : 502;
        seen.push({ status, key });
        if (status === 429) {
          res.writeHead(429, { "content-type": "application/json", "retry-after": "1" }).end(
            JSON.stringify({
              error: {
                message: "Too many",
                code: -32029,
                data: { code: "rate_limited", httpStatus: 429, retryAfterSeconds: 1, path: "process.submit" },
              },
            }),
          );
        } else res.writeHead(502, { "content-type": "text/html" }).end("<h1>Bad gateway</h1>");
        return;
      }
      const upstream = await fetch(`${app.url}${req.url}`, {
        method: req.method ?? "GET",
        headers: req.headers as Record<string, string>,
        ...(chunks.length ? { body: Buffer.concat(chunks) } : {}),
      });
      seen.push({ status: upstream.status, key });
      res
        .writeHead(upstream.status, { "content-type": upstream.headers.get("content-type") ?? "application/json" })
        .end(Buffer.from(await upstream.arrayBuffer()));
    });
    await new Promise<void>((resolve) => gateway.listen(0, "127.0.0.1", resolve));
    try {
      const client = new Retouch({
        baseUrl: `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`,
        apiKey: (await keyedAccount(app)).key,
      });
      const started = Date.now();
      const submission = await client.submit(photo, "make it sepia");
      expect(Date.now() - started).toBeGreaterThanOrEqual(950);
      expect(submission.job_id).toMatch(/^job_/);
      const submits = seen.slice(0, 3);
      expect(submits.map((entry) => entry.status)).toEqual([429, 502, 200]);
      expect(new Set(submits.map((entry) => entry.key)).size).toBe(1);
      expect(submits[0]?.key).toMatch(/^[0-9a-f-]{36}$/);
    } finally {
      await new Promise<void>((resolve) => gateway.close(() => resolve()));
    }
  });

  it("sends URLs as image_url and mask_url; a host failing once is retried with the same key: one job, one charge", async () => {
    const mask = await rectangleMask(320, 240, { left: 80, top: 40, width: 160, height: 160 });
    let photoRequests = 0;
    const imageServer: Server = createServer((req, res) => {
      if (req.url === "/mask.png") res.writeHead(200).end(mask);
      else if (photoRequests++ === 0) res.writeHead(503).end("busy");
      else res.writeHead(200).end(photo);
    });
    await new Promise<void>((resolve) => imageServer.listen(0, "127.0.0.1", resolve));
    const base = `http://127.0.0.1:${(imageServer.address() as AddressInfo).port}`;
    try {
      const owner = await keyedAccount(app, { plan: "pro" });
      const client = new Retouch({ baseUrl: app.url, apiKey: owner.key });
      const result = await client.edit(`${base}/photo.png`, "remove the object", {
        mask: new URL(`${base}/mask.png`),
        format: "png",
        intervalMs: 250,
      });
      expect(result).toMatchObject({ format: "png", width: 320, height: 240, credits_used: 1, credits_remaining: 9 });
      expect(photoRequests).toBe(2);
      expect((await app.services.profiles.get(owner.userId)).credits).toBe(9);
    } finally {
      await new Promise<void>((resolve) => imageServer.close(() => resolve()));
    }
  });

  it("gives up with a NetworkError when nothing answers", async () => {
    const client = new Retouch({ baseUrl: "http://127.0.0.1:9", apiKey: "pk_x", maxRetries: 1 });
    await expect(client.status("job_x")).rejects.toBeInstanceOf(NetworkError);
  });
});
