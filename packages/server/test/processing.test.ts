import { readFile } from "node:fs/promises";
import { UrlSigner } from "@retouch/core";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type KeyedAccount, keyedAccount, waitForJob } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { base64, productPhoto, rectangleMask } from "../../../test/support/images";
import { sweep } from "../../../test/support/maintenance";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

/** Submission to downloaded pixels, through the real queue, worker threads and engine. */
const AUTH_SECRET = "processing-test-secret-0123456789abcdef";
let app: TestApp;
let account: KeyedAccount;

beforeAll(async () => {
  app = await startTestApp({ RETOUCH_AUTH_SECRET: AUTH_SECRET, RETOUCH_WORKER_CONCURRENCY: "2" });
  account = await keyedAccount(app, { plan: "pro", credits: 100 });
});
afterAll(() => app.close());

async function submitAndWait(body: Record<string, unknown>) {
  const submitted = await request(app.url, "POST", "/api/process", { key: account.key, body });
  expect(submitted.status, submitted.text).toBe(200);
  const status = await waitForJob(app.url, account.key, submitted.body.job_id);
  return { jobId: submitted.body.job_id as string, status };
}

async function download(jobId: string) {
  const result = await request(app.url, "GET", `/api/process/result?job_id=${jobId}`, { key: account.key });
  expect(result.status, result.text).toBe(200);
  const file = await fetch(result.body.url.replace(app.config.publicBaseUrl, app.url));
  expect(file.status).toBe(200);
  return { result: result.body, file, bytes: Buffer.from(await file.arrayBuffer()) };
}

describe("each workflow, end to end", () => {
  it("background removal: a PNG with a transparent background and an opaque subject", async () => {
    const { jobId, status } = await submitAndWait({
      image: base64(await productPhoto({ format: "jpeg" })),
      prompt: "Remove the background",
      format: "jpeg",
    });
    expect(status).toMatchObject({ status: "done", width: 320, height: 240, format: "png", credits_used: 1 });
    expect(status.processing_time_ms).toEqual(expect.any(Number));
    const { result, file, bytes } = await download(jobId);
    expect(result).toMatchObject({ job_id: jobId, format: "png", width: 320, height: 240, credits_used: 1 });
    expect(file.headers.get("content-type")).toBe("image/png");
    expect(Number(file.headers.get("content-length"))).toBe(bytes.length);
    const { data, info } = await sharp(bytes).raw().toBuffer({ resolveWithObject: true });
    expect(info.channels).toBe(4);
    const alpha = (x: number, y: number) => data[(y * info.width + x) * 4 + 3];
    expect(alpha(2, 2)).toBe(0);
    expect(alpha(info.width - 3, info.height - 3)).toBe(0);
    expect(alpha(info.width / 2, info.height / 2)).toBe(255);
  });

  it("object removal with a mask: the JPEG keeps its size and the masked disc is gone", async () => {
    const photo = await productPhoto({ format: "png" });
    const mask = await rectangleMask(320, 240, { left: 80, top: 40, width: 160, height: 160 });
    const { jobId, status } = await submitAndWait({ image: base64(photo), prompt: "remove the object", mask: base64(mask) });
    expect(status).toMatchObject({ status: "done", format: "jpeg", width: 320, height: 240 });
    const { file, bytes } = await download(jobId);
    expect(file.headers.get("content-type")).toBe("image/jpeg");
    const { data, info } = await sharp(bytes).raw().toBuffer({ resolveWithObject: true });
    const centre = ((info.height / 2) * info.width + info.width / 2) * info.channels;
    // The red disc was replaced by the light background around it.
    expect(data[centre]).toBeGreaterThan(200);
    expect(data[centre + 1]).toBeGreaterThan(200);
  });

  it("object removal with a mask and a detect term no detector knows: accepted, the mask says what to fill", async () => {
    // The spec: a mask skips detection, so `detect` does not have to name something the detector knows.
    const photo = await productPhoto({ format: "png" });
    const mask = await rectangleMask(320, 240, { left: 80, top: 40, width: 160, height: 160 });
    const { jobId, status } = await submitAndWait({
      image: base64(photo),
      prompt: "remove it",
      detect: "flux capacitor",
      mask: base64(mask),
    });
    expect(status).toMatchObject({ status: "done", format: "jpeg", width: 320, height: 240 });
    const { data, info } = await sharp((await download(jobId)).bytes)
      .raw()
      .toBuffer({ resolveWithObject: true });
    const centre = ((info.height / 2) * info.width + info.width / 2) * info.channels;
    expect(data[centre]).toBeGreaterThan(200);
    expect(data[centre + 1]).toBeGreaterThan(200);
  });

  it("generative editing: black and white, as WebP at the requested quality", async () => {
    const { jobId, status } = await submitAndWait({
      image: base64(await productPhoto()),
      prompt: "make it black and white",
      format: "webp",
      quality: 70,
    });
    expect(status).toMatchObject({ status: "done", format: "webp" });
    const { file, bytes } = await download(jobId);
    expect(file.headers.get("content-type")).toBe("image/webp");
    const stats = await sharp(bytes).stats();
    const [r, g, b] = stats.channels;
    expect(Math.abs((r?.mean ?? 0) - (g?.mean ?? 0))).toBeLessThan(2);
    expect(Math.abs((g?.mean ?? 0) - (b?.mean ?? 0))).toBeLessThan(2);
  });
});

describe("failures", () => {
  it("an edit the engine cannot do ends in error with exactly one refund, the generic text, and why", async () => {
    const before = (await app.services.profiles.get(account.userId)).credits;
    const { jobId, status } = await submitAndWait({ image: base64(await productPhoto()), prompt: "remove the giraffe" });
    expect(status).toMatchObject({
      status: "error",
      error: "Processing failed",
      error_code: "nothing_detected",
      error_message: "No giraffe was found in the image.",
      credits_used: 0,
      credits_remaining: before,
    });
    expect((await app.services.profiles.get(account.userId)).credits).toBe(before);
    const entries = (await app.services.stores.profiles.ledger(account.userId)).filter((row) => row.jobId === jobId);
    expect(entries.map((row) => [row.reason, row.delta])).toEqual([
      ["job_debit", -1],
      ["job_refund", 1],
    ]);
    const result = await request(app.url, "GET", `/api/process/result?job_id=${jobId}`, { key: account.key });
    expect(result.status).toBe(500);
    expect(result.body).toMatchObject({
      code: "job_failed",
      error: "Processing failed",
      error_code: "nothing_detected",
      error_message: "No giraffe was found in the image.",
    });
    // The whole reason is in the logs, with the job id.
    expect(app.logs.some((line) => line.includes(jobId) && line.includes("job failed"))).toBe(true);
  });

  it("a cut-out refused without a model (a cat's face filling the frame) ends in error with one refund", async () => {
    const before = (await app.services.profiles.get(account.userId)).credits;
    const cat = await readFile(new URL("../../engine/test/fixtures/cat.jpg", import.meta.url));
    const { jobId, status } = await submitAndWait({ image: base64(cat), prompt: "Remove the background" });
    expect(status).toMatchObject({
      status: "error",
      error: "Processing failed",
      error_code: "model_unavailable",
      error_message: expect.stringMatching(/needs a learned background model/),
      credits_used: 0,
      credits_remaining: before,
    });
    const entries = (await app.services.stores.profiles.ledger(account.userId)).filter((row) => row.jobId === jobId);
    expect(entries.map((row) => [row.reason, row.delta])).toEqual([
      ["job_debit", -1],
      ["job_refund", 1],
    ]);
    // The operator reads why, and what to do, in the log.
    const failure = app.logs.find((line) => line.includes(jobId) && line.includes("job failed")) ?? "";
    expect(failure).toMatch(/model_unavailable: This picture needs a learned background model/);
    expect(failure).toMatch(/pnpm retouch models pull isnet-general-use/);
  });
});

describe("signed result links", () => {
  it("refuse a tampered signature, another path, or an expired link (403)", async () => {
    const { jobId } = await submitAndWait({ image: base64(await productPhoto()), prompt: "make it sepia" });
    const { result } = await download(jobId);
    const url = new URL(result.url);
    const local = (target: URL) => `${app.url}${target.pathname}${target.search}`;

    const tampered = new URL(url);
    const signature = url.searchParams.get("signature") ?? "";
    // Change the last character to one it is not, so the signature really differs.
    tampered.searchParams.set("signature", `${signature.slice(0, -1)}${signature.endsWith("0") ? "1" : "0"}`);
    const otherPath = new URL(url);
    otherPath.pathname = otherPath.pathname.replace(".jpeg", ".png");
    const signer = new UrlSigner(AUTH_SECRET);
    const expired = new URL(`${url.origin}${url.pathname}?${signer.sign(url.pathname, new Date(Date.now() - 1000))}`);
    for (const target of [tampered, otherPath, expired]) {
      const response = await fetch(local(target));
      expect(response.status, target.href).toBe(403);
      expect(((await response.json()) as { code: string }).code).toBe("signed_url_invalid");
    }
    const head = await fetch(local(url), { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-type")).toBe("image/jpeg");
    expect(new Date(result.expires_at).getTime() - Date.now()).toBeGreaterThan(59 * 60_000);
  });
});

describe("retention", () => {
  it("the clean-up deletes expired results: the result and its link then answer 404", async () => {
    const { jobId } = await submitAndWait({ image: base64(await productPhoto()), prompt: "make it sepia" });
    const { result } = await download(jobId);
    const job = await app.services.stores.jobs.find(jobId);
    expect(job?.input_blob).toBeNull();
    await sweep(app, Date.now() + app.config.retentionMs + 1000);
    expect(await app.services.blobs.open(job?.result_blob as string)).toBeUndefined();
    const again = await request(app.url, "GET", `/api/process/result?job_id=${jobId}`, { key: account.key });
    expect(again.status).toBe(404);
    expect(again.body.message).toMatch(/expired/);
    const link = new URL(result.url);
    expect((await fetch(`${app.url}${link.pathname}${link.search}`)).status).toBe(404);
  });
});

describe("a backlog", () => {
  it("is worked job after job without waiting for the queue's polling", async () => {
    // Polling once an hour: only LISTEN/NOTIFY and the refill after each job can move the queue.
    const slow = await startTestApp({ RETOUCH_QUEUE_POLL_INTERVAL: "1h", RETOUCH_WORKER_CONCURRENCY: "1" });
    try {
      const owner = await keyedAccount(slow, { plan: "pro" });
      const image = base64(await productPhoto());
      const submitted = await request(slow.url, "POST", "/api/process", {
        key: owner.key,
        body: { images: Array.from({ length: 6 }, (_, i) => ({ image, prompt: `rotate ${i + 1} degrees` })) },
      });
      expect(submitted.status, submitted.text).toBe(200);
      for (const job of submitted.body.jobs as Array<{ job_id: string }>) {
        expect((await waitForJob(slow.url, owner.key, job.job_id, 30_000)).status).toBe("done");
      }
    } finally {
      await slow.close();
    }
  });
});
