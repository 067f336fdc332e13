import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { JOB_FAILURE_CODES, type JobFailureCode } from "@retouch/core";
import { JobFailedError, Retouch } from "@retouch/sdk";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type KeyedAccount, keyedAccount, waitForJob } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { base64, productPhoto } from "../../../test/support/images";
import { insertPendingJob } from "../../../test/support/jobs";
import { sweep } from "../../../test/support/maintenance";
import { startTestApp, type TestApp } from "../../../test/support/test-app";
import { WebhookReceiver } from "../../../test/support/webhook-receiver";

/**
 * Failed jobs say why, the same way everywhere: real failing jobs through the
 * queue and the engine, read back over HTTP (status, result), by a webhook
 * receiver on loopback, through the SDK and through the built CLI.
 */
const execFileAsync = promisify(execFile);
const cliBinary = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../cli/dist/cli.js");
const fixture = (name: string) => readFile(new URL(`../../engine/test/fixtures/${name}`, import.meta.url));

interface Site {
  app: TestApp;
  account: KeyedAccount;
  sdk: Retouch;
}

let receiver: WebhookReceiver;
let main: Site;
let scratch: string;

async function site(env: Record<string, string> = {}): Promise<Site> {
  const app = await startTestApp({ RETOUCH_WEBHOOK_ALLOW_INSECURE: "1", RETOUCH_QUEUE_POLL_INTERVAL: "200ms", ...env });
  const account = await keyedAccount(app, { plan: "pro", credits: 50 });
  return { app, account, sdk: new Retouch({ baseUrl: app.url, apiKey: account.key }) };
}

beforeAll(async () => {
  receiver = await new WebhookReceiver().start();
  main = await site();
  scratch = await mkdtemp(path.join(os.tmpdir(), "retouch-failures-"));
});
afterAll(async () => {
  await main.app.close();
  await receiver.stop();
  await rm(scratch, { recursive: true, force: true });
});

/** The built `retouch` binary, as a user runs it, with the account's key. */
async function cli(at: Site, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = {
    PATH: process.env.PATH ?? "",
    HOME: scratch,
    RETOUCH_CONFIG: path.join(scratch, "cli.json"),
    RETOUCH_BASE_URL: at.app.url,
    RETOUCH_API_KEY: at.account.key,
  };
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, [cliBinary, ...args], { env });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

let hooks = 0;

/**
 * Edits through the SDK (with a webhook), expecting the job to fail, and
 * gathers what every surface then says about it.
 */
async function failingEdit(at: Site, image: Buffer, prompt: string) {
  const { app, account, sdk } = at;
  const before = (await app.services.profiles.get(account.userId)).credits;
  const hook = `/failed-${++hooks}`;
  const error = await sdk.edit(image, prompt, { webhookUrl: `${receiver.url}${hook}`, intervalMs: 250 }).catch((e) => e);
  if (!(error instanceof JobFailedError)) throw new Error(`expected the edit to fail, got ${error}`);
  const jobId = error.jobId;
  const status = (await request(app.url, "GET", `/api/process/status?job_id=${jobId}`, { key: account.key })).body;
  const result = await request(app.url, "GET", `/api/process/result?job_id=${jobId}`, { key: account.key });
  const [call] = await receiver.waitFor(hook, 1);
  const callback = JSON.parse(call?.rawBody ?? "{}");
  const ledger = (await app.services.stores.profiles.ledger(account.userId))
    .filter((row) => row.jobId === jobId)
    .map((row) => [row.reason, row.delta]);
  const after = (await app.services.profiles.get(account.userId)).credits;
  return { jobId, error, status, result, callback, ledger, before, after };
}

/** Status, result's 500, webhook body, SDK error and CLI all carry one code and one sentence; the credit came back. */
async function expectSaidEverywhere(at: Site, seen: Awaited<ReturnType<typeof failingEdit>>, code: JobFailureCode) {
  const why = { error: "Processing failed", error_code: code, error_message: seen.status.error_message as string };
  expect(seen.status).toMatchObject({ status: "error", credits_used: 0, credits_remaining: seen.before, ...why });
  expect(why.error_message.length).toBeGreaterThan(10);
  expect(seen.result.status).toBe(500);
  expect(seen.result.body).toMatchObject({ code: "job_failed", ...why });
  expect(seen.result.body.message).toContain(why.error_message);
  expect(seen.callback).toMatchObject({ job_id: seen.jobId, status: "error", credits_used: 0, ...why });
  expect(seen.error).toMatchObject({ code: "job_failed", status: 500, errorCode: code, errorMessage: why.error_message });
  expect(seen.error.message).toContain(why.error_message);
  expect(seen.ledger).toEqual([
    ["job_debit", -1],
    ["job_refund", 1],
  ]);
  expect(seen.after).toBe(seen.before);

  const status = await cli(at, ["status", seen.jobId]);
  expect(status.code, status.stderr).toBe(0);
  expect(status.stdout).toContain(`(${code}): ${why.error_message}`);
  const result = await cli(at, ["result", seen.jobId, "--json"]);
  expect(result.code).toBe(6);
  expect(result.stderr).toContain(`(${code}): ${why.error_message}`);
  expect(JSON.parse(result.stdout).error).toMatchObject({
    code: "job_failed",
    error_code: code,
    error_message: why.error_message,
  });
  return why;
}

describe("a failed job says why, the same everywhere", () => {
  // A target the detector does not know ("remove the unicorn") is refused at submission now
  // (capabilities.test.ts); what fails at run time is what only the pixels tell.
  it("unsupported_instruction: an edit the picture does not allow (a crop larger than it)", async () => {
    const seen = await failingEdit(main, await productPhoto(), "crop to 5000x5000 pixels");
    const why = await expectSaidEverywhere(main, seen, "unsupported_instruction");
    // The engine's own sentence: it says what was asked and why it cannot be done.
    expect(why.error_message).toBe("Cannot crop a 320x240 picture to 5000x5000: the crop is larger than the picture.");
  });

  it("nothing_detected: a removal target the detector knows but does not find (a real photograph of gravel)", async () => {
    const gravel = await sharp(await fixture("gravel.jpg"))
      .resize(640)
      .jpeg()
      .toBuffer();
    const seen = await failingEdit(main, gravel, "remove the dog");
    const why = await expectSaidEverywhere(main, seen, "nothing_detected");
    expect(why.error_message).toBe("No dog was found in the image.");
  });

  it("model_unavailable: the classical segmenter refuses a frame-filling animal, and says which model to install", async () => {
    const seen = await failingEdit(main, await fixture("cat.jpg"), "Remove the background");
    const why = await expectSaidEverywhere(main, seen, "model_unavailable");
    expect(why.error_message).toMatch(/needs a learned background model/);
    expect(why.error_message).toMatch(/pnpm retouch models pull isnet-general-use/);
  });

  it("the CLI's edit prints the code and the sentence, and exits 6", async () => {
    const file = path.join(scratch, "product.png");
    await writeFile(file, await productPhoto());
    const edited = await cli(main, ["edit", file, "crop to 5000x5000 pixels"]);
    expect(edited.code).toBe(6);
    expect(edited.stderr).toMatch(/failed \(unsupported_instruction\): Cannot crop a 320x240 picture to 5000x5000/);
    expect(edited.stderr).toMatch(/refunded/);
  });

  it("a batch status lists each failed item's code and sentence", async () => {
    const photo = base64(await productPhoto());
    const submitted = await request(main.app.url, "POST", "/api/process", {
      key: main.account.key,
      body: {
        images: [
          { image: photo, prompt: "make it black and white" },
          { image: photo, prompt: "crop to 5000x5000 pixels" },
        ],
      },
    });
    expect(submitted.status, submitted.text).toBe(200);
    const [done, failed] = submitted.body.jobs as Array<{ job_id: string }>;
    for (const job of [done, failed]) await waitForJob(main.app.url, main.account.key, job?.job_id as string);
    const batch = await request(main.app.url, "GET", `/api/process/status?batch_id=${submitted.body.batch_id}`, {
      key: main.account.key,
    });
    expect(batch.body.jobs).toEqual([
      { job_id: done?.job_id, status: "done" },
      {
        job_id: failed?.job_id,
        status: "error",
        error: "Processing failed",
        error_code: "unsupported_instruction",
        error_message: expect.stringMatching(/^Cannot crop a 320x240 picture/),
      },
    ]);
  });
});

describe("the service's own causes", () => {
  it("job_timeout: an edit that outlasts RETOUCH_JOB_TIMEOUT", async () => {
    const slow = await site({ RETOUCH_JOB_TIMEOUT: "1ms" });
    try {
      const seen = await failingEdit(slow, await fixture("cat.jpg"), "Remove the background");
      const why = await expectSaidEverywhere(slow, seen, "job_timeout");
      expect(why.error_message).toBe(JOB_FAILURE_CODES.job_timeout.message);
    } finally {
      await slow.app.close();
    }
  });

  it("job_timeout: a job the sweep finds still pending past the timeout", async () => {
    const { app, account } = main;
    const jobId = await insertPendingJob(app.services, account.userId, { charge: true });
    await sweep(app, Date.now() + app.config.jobTimeoutMs + 60_000);
    const status = (await request(app.url, "GET", `/api/process/status?job_id=${jobId}`, { key: account.key })).body;
    expect(status).toMatchObject({
      status: "error",
      error: "Processing failed",
      error_code: "job_timeout",
      error_message: JOB_FAILURE_CODES.job_timeout.message,
      credits_used: 0,
    });
  });

  it("internal_error: an unexpected failure (the input file is gone) gets the generic sentence, the logs get the rest", async () => {
    const { app, account } = main;
    const before = (await app.services.profiles.get(account.userId)).credits;
    const jobId = await insertPendingJob(app.services, account.userId, { charge: true, inputBlob: "inputs/job_gone" });
    await app.services.queue.enqueueOnce(jobId);
    const status = await waitForJob(app.url, account.key, jobId);
    expect(status).toMatchObject({
      status: "error",
      error: "Processing failed",
      error_code: "internal_error",
      error_message: JOB_FAILURE_CODES.internal_error.message,
      credits_used: 0,
    });
    expect((await app.services.profiles.get(account.userId)).credits).toBe(before);
    const result = await request(app.url, "GET", `/api/process/result?job_id=${jobId}`, { key: account.key });
    expect(result.body).toMatchObject({ code: "job_failed", error_code: "internal_error" });
    for (const text of [JSON.stringify(status), result.text]) {
      expect(text).not.toContain(app.config.dataDir);
      expect(text).not.toMatch(/ENOENT|job_gone|\bat\s/);
    }
    // The operator's log has the real cause.
    const line = app.logs.find((entry) => entry.includes(jobId) && entry.includes("job failed")) ?? "";
    expect(line).toMatch(/"code":"internal_error"/);
    expect(line).toMatch(/ENOENT/);
  });

  it("result_storage_failed: the edit succeeds but its result cannot be written", async () => {
    const { app } = main;
    // A file where the results folder should be: a real failure of the blob store's write (ENOTDIR).
    const results = path.join(app.config.dataDir, "blobs", "results");
    const aside = `${results}.aside`;
    await mkdir(results, { recursive: true });
    await rename(results, aside);
    await writeFile(results, "not a folder");
    try {
      const seen = await failingEdit(main, await productPhoto(), "make it black and white");
      const why = await expectSaidEverywhere(main, seen, "result_storage_failed");
      expect(why.error_message).toBe(JOB_FAILURE_CODES.result_storage_failed.message);
    } finally {
      await rm(results, { force: true });
      await rename(aside, results);
    }
  });
});

describe("the provider record", () => {
  it("shows provider, model and upstream latency in the metadata block of status, result and webhook, only when set", async () => {
    const { app, account } = main;
    const jobs = app.services.stores.jobs;
    const jobId = await insertPendingJob(app.services, account.userId, { charge: true });
    // As a worker settles an edit a hosted provider made.
    const claimed = await jobs.claim(jobId, "test-worker", 60_000);
    expect(claimed?.id).toBe(jobId);
    const resultBlob = `results/${jobId}.jpeg`;
    await app.services.blobs.put(resultBlob, await productPhoto({ format: "jpeg" }));
    const settled = await jobs.settleDone(jobId, "test-worker", {
      resultBlob,
      format: "jpeg",
      width: 320,
      height: 240,
      processingTimeMs: 2400,
      resultExpiresAt: new Date(Date.now() + 60_000),
      provider: { name: "openai-compatible", model: "qwen-image-edit", latencyMs: 2210.6 },
    });
    const record = { provider: "openai-compatible", model: "qwen-image-edit", upstream_latency_ms: 2211 };
    const status = (await request(app.url, "GET", `/api/process/status?job_id=${jobId}`, { key: account.key })).body;
    expect(status).toMatchObject({ status: "done", format: "jpeg", ...record });
    const result = (await request(app.url, "GET", `/api/process/result?job_id=${jobId}`, { key: account.key })).body;
    expect(result).toMatchObject({ job_id: jobId, url: expect.any(String), ...record });
    expect(await app.services.webhooks.callbackBody(settled as NonNullable<typeof settled>)).toMatchObject(record);

    // An edit of the built-in engine has none of the three.
    const done = await main.sdk.edit(await productPhoto(), "make it black and white", { intervalMs: 250 });
    const plain = (await request(app.url, "GET", `/api/process/status?job_id=${done.job_id}`, { key: account.key })).body;
    for (const field of Object.keys(record)) {
      expect(plain).not.toHaveProperty(field);
      expect(done).not.toHaveProperty(field);
    }
  });
});
