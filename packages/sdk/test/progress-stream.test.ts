import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyedAccount } from "../../../test/support/accounts";
import { productPhoto } from "../../../test/support/images";
import { insertPendingJob } from "../../../test/support/jobs";
import { type RecordingProxy, startRecordingProxy } from "../../../test/support/recording-proxy";
import { startTestApp, type TestApp } from "../../../test/support/test-app";
import { type BatchStatus, type JobStatus, Retouch } from "../src/index";

/**
 * The SDK's waiting over the progress stream, through a loopback proxy that
 * records every request (so a test sees whether the SDK polled) and, when
 * told to, drops the stream's connection right after its first event.
 */
let app: TestApp;
let proxy: RecordingProxy;
let proxyUrl: string;

beforeAll(async () => {
  app = await startTestApp({ RETOUCH_QUEUE_POLL_INTERVAL: "200ms" });
  proxy = await startRecordingProxy(app.url);
  proxyUrl = proxy.url;
});

afterAll(async () => {
  await proxy?.close();
  await app?.close();
});

const streams = () => proxy.streams();
const polls = () => proxy.polls();

describe("edit() and waitForJob() on the progress stream", { timeout: 60_000 }, () => {
  it("edit() follows the stream to the result, reporting each status, and never polls", async () => {
    const account = await keyedAccount(app, { plan: "core", credits: 20 });
    const retouch = new Retouch({ baseUrl: proxyUrl, apiKey: account.key });
    proxy.seen.length = 0;
    const progress: JobStatus[] = [];
    const result = await retouch.edit(await productPhoto(), "make it sepia", {
      intervalMs: 250,
      onProgress: (status) => progress.push(status),
    });
    expect(result.url).toContain("/files/results/");
    expect(streams()).toHaveLength(1);
    expect(polls()).toEqual([]);
    expect(progress.at(-1)).toMatchObject({ status: "done", credits_used: 1 });
    expect(progress.slice(0, -1).every((status) => status.status === "pending")).toBe(true);
  });

  it("falls back to polling when the stream is cut mid-way, and still reports each status once", async () => {
    const account = await keyedAccount(app, { plan: "core", credits: 20 });
    const retouch = new Retouch({ baseUrl: proxyUrl, apiKey: account.key });
    // Pending until the test enqueues it; its input is gone, so the worker then fails it.
    const jobId = await insertPendingJob(app.services, account.userId, { charge: true, inputBlob: "inputs/job_gone" });
    proxy.seen.length = 0;
    proxy.cut = true;
    try {
      const progress: JobStatus[] = [];
      const waiting = retouch.waitForJob(jobId, { intervalMs: 250, onProgress: (status) => progress.push(status) });
      // Settled only once the SDK polls: the stream was cut and polling took over.
      const deadline = Date.now() + 20_000;
      while (polls().length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(polls().length).toBeGreaterThan(0);
      await app.services.queue.enqueueOnce(jobId);
      const final = await waiting;
      expect(final).toMatchObject({ status: "error", error_code: expect.any(String) });
      expect(streams()).toHaveLength(1);
      expect(progress.map((status) => status.status)).toEqual(["pending", "error"]);
    } finally {
      proxy.cut = false;
    }
  });

  it("polls only when asked not to stream", async () => {
    const account = await keyedAccount(app, { plan: "core", credits: 20 });
    const retouch = new Retouch({ baseUrl: proxyUrl, apiKey: account.key });
    const { job_id: jobId } = await retouch.submit(await productPhoto(), "make it sepia");
    proxy.seen.length = 0;
    expect((await retouch.waitForJob(jobId, { intervalMs: 250, stream: false })).status).toBe("done");
    expect(streams()).toEqual([]);
    expect(polls().length).toBeGreaterThan(0);
  });
});

describe("waitForBatch()", { timeout: 60_000 }, () => {
  it("follows a batch's stream until every job is terminal, reporting the batch at each change", async () => {
    const account = await keyedAccount(app, { plan: "core", credits: 20 });
    const retouch = new Retouch({ baseUrl: proxyUrl, apiKey: account.key });
    const photo = await productPhoto();
    const batch = await retouch.submitBatch([
      { image: photo, prompt: "make it sepia" },
      { image: photo, prompt: "make it black and white" },
    ]);
    proxy.seen.length = 0;
    const progress: BatchStatus[] = [];
    const final = await retouch.waitForBatch(batch.batch_id, { intervalMs: 250, onProgress: (status) => progress.push(status) });
    expect(final.jobs.map((job) => job.status)).toEqual(["done", "done"]);
    expect(progress.at(-1)).toEqual(final);
    expect(streams()).toHaveLength(1);
    expect(polls()).toEqual([]);
  });
});
