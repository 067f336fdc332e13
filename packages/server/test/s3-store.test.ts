import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseConfig } from "@retouch/core";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type KeyedAccount, keyedAccount, waitForJob } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { base64, productPhoto, rectangleMask } from "../../../test/support/images";
import { sweep } from "../../../test/support/maintenance";
import { connectMcp } from "../../../test/support/mcp-client";
import { type S3Gateway, startS3Gateway } from "../../../test/support/s3-gateway";
import { spawnRetouch } from "../../../test/support/spawn-retouch";
import { startTestApp, type TestApp } from "../../../test/support/test-app";
import { createTestDatabase } from "../../../test/support/test-database";
import { WebhookReceiver } from "../../../test/support/webhook-receiver";

/**
 * The service with RETOUCH_BLOB_STORE=s3, against s3rver behind the gateway
 * that verifies every SigV4 signature (test/support/s3-gateway.ts): inputs
 * and results live in the bucket and nowhere under RETOUCH_DATA_DIR, result
 * URLs are the store's presigned GETs (or, with RETOUCH_RESULT_URLS=proxy,
 * the service's own), a store that fails mid-job refunds the job with its
 * code, and retention deletes from the bucket.
 */
let gateway: S3Gateway;
let app: TestApp;
let proxied: TestApp;
let account: KeyedAccount;
let proxiedAccount: KeyedAccount;

function s3Env(prefix: string): Record<string, string> {
  return {
    RETOUCH_BLOB_STORE: "s3",
    RETOUCH_S3_BUCKET: gateway.bucket,
    RETOUCH_S3_ENDPOINT: gateway.endpoint,
    RETOUCH_S3_REGION: gateway.region,
    RETOUCH_S3_FORCE_PATH_STYLE: "1",
    RETOUCH_S3_PREFIX: prefix,
    RETOUCH_QUEUE_POLL_INTERVAL: "200ms",
    RETOUCH_WEBHOOK_ALLOW_INSECURE: "1",
  };
}

beforeAll(async () => {
  gateway = await startS3Gateway();
  // The AWS SDK's default credential chain, as an operator gives it.
  vi.stubEnv("AWS_ACCESS_KEY_ID", gateway.accessKeyId);
  vi.stubEnv("AWS_SECRET_ACCESS_KEY", gateway.secretAccessKey);
  app = await startTestApp(s3Env("main/"));
  proxied = await startTestApp({ ...s3Env("proxied"), RETOUCH_RESULT_URLS: "proxy" });
  account = await keyedAccount(app, { plan: "pro", credits: 20 });
  proxiedAccount = await keyedAccount(proxied, { plan: "pro", credits: 20 });
});
afterAll(async () => {
  await app?.close();
  await proxied?.close();
  await gateway?.close();
  vi.unstubAllEnvs();
});

async function submit(target: TestApp, key: string, body: Record<string, unknown>) {
  const submitted = await request(target.url, "POST", "/api/process", { key, body });
  expect(submitted.status, submitted.text).toBe(200);
  const jobId = submitted.body.job_id as string;
  return { jobId, status: await waitForJob(target.url, key, jobId) };
}

async function credits(target: TestApp, userId: string): Promise<number> {
  return (await target.services.profiles.get(userId)).credits;
}

/** Every file under a directory, recursively. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => path.join(entry.parentPath, entry.name));
}

describe("RETOUCH_BLOB_STORE=s3: happy path", () => {
  let jobId: string;
  let photo: Buffer;
  let mask: Buffer;

  beforeAll(async () => {
    photo = await productPhoto({ format: "png" });
    mask = await rectangleMask(320, 240, { left: 80, top: 40, width: 160, height: 160 });
    ({ jobId } = await submit(app, account.key, {
      image: base64(photo),
      mask: base64(mask),
      prompt: "Remove the object",
      format: "png",
    }));
  });

  it("the input and mask went into the bucket (signed PUTs), the result is there, the inputs are gone once settled", async () => {
    expect((await waitForJob(app.url, account.key, jobId)).status).toBe("done");
    const puts = gateway.requests.filter((entry) => entry.method === "PUT" && entry.url.includes(jobId));
    expect(puts.map((entry) => new URL(entry.url, "http://x").pathname).sort()).toEqual(
      [
        `/${gateway.bucket}/main/inputs/${jobId}`,
        `/${gateway.bucket}/main/masks/${jobId}`,
        `/${gateway.bucket}/main/results/${jobId}.png`,
      ].sort(),
    );
    expect(puts.every((entry) => entry.auth === "header" && entry.status === 200)).toBe(true);
    const keys = (await gateway.keys()).filter((key) => key.includes(jobId));
    expect(keys).toEqual([`main/results/${jobId}.png`]);
  });

  it("the result URL is the store's presigned GET, valid 1 hour, and downloads the stored bytes", async () => {
    const before = Date.now();
    const result = await request(app.url, "GET", `/api/process/result?job_id=${jobId}`, { key: account.key });
    expect(result.status, result.text).toBe(200);
    const url = new URL(result.body.url as string);
    expect(`${url.origin}${url.pathname}`).toBe(`${gateway.endpoint}/${gateway.bucket}/main/results/${jobId}.png`);
    expect(url.searchParams.get("X-Amz-Expires")).toBe("3600");
    expect(url.searchParams.get("X-Amz-Credential")).toMatch(
      new RegExp(`^${gateway.accessKeyId}/\\d{8}/${gateway.region}/s3/aws4_request$`),
    );
    // The spec: signed, valid for 1 hour; expires_at says until when.
    const expiresAt = Date.parse(result.body.expires_at as string);
    expect(expiresAt).toBeGreaterThanOrEqual(before + 3_600_000 - 1000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 3_600_000 + 1000);

    const file = await fetch(url);
    expect(file.status).toBe(200);
    expect(file.headers.get("content-type")).toBe("image/png");
    const bytes = Buffer.from(await file.arrayBuffer());
    expect(bytes.equals((await gateway.object(`main/results/${jobId}.png`)) as Buffer)).toBe(true);
    expect(bytes.subarray(1, 4).toString("latin1")).toBe("PNG");
    expect(gateway.requests.at(-1)).toMatchObject({ auth: "query", status: 200 });

    // The listing and the status' neighbours hand out the same kind of link.
    const listing = await request(app.url, "GET", "/api/jobs", { key: account.key });
    const listed = (listing.body.jobs as Array<{ id: string; result_url: string | null }>).find((job) => job.id === jobId);
    expect(listed?.result_url).toMatch(new RegExp(`^${gateway.endpoint}/${gateway.bucket}/main/results/${jobId}\\.png\\?`));
    expect((await fetch(listed?.result_url as string)).status).toBe(200);
  });

  it("a tampered presigned URL is refused (another job's key, a longer lifetime, an anonymous GET)", async () => {
    const result = await request(app.url, "GET", `/api/process/result?job_id=${jobId}`, { key: account.key });
    const url = new URL(result.body.url as string);
    const otherJob = new URL(url);
    otherJob.pathname = otherJob.pathname.replace(jobId, `${jobId.slice(0, -1)}x`);
    const longer = new URL(url);
    longer.searchParams.set("X-Amz-Expires", "604800");
    for (const tampered of [otherJob, longer]) {
      const answer = await fetch(tampered);
      expect(answer.status).toBe(403);
      expect(await answer.text()).toContain("SignatureDoesNotMatch");
    }
    expect((await fetch(`${url.origin}${url.pathname}`)).status).toBe(403);
  });

  it("an expired presigned URL is refused", async () => {
    // The link is made as if two hours ago (the process's clock alone is moved), so it expired an hour ago.
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() - 2 * 3_600_000 });
    let url: string;
    try {
      url = (await app.services.jobs.resultUrl({ id: jobId, result_format: "png", result_blob: `results/${jobId}.png` })).url;
    } finally {
      vi.useRealTimers();
    }
    const answer = await fetch(url);
    expect(answer.status).toBe(403);
    expect(await answer.text()).toContain("Request has expired");
  });

  it("no input, mask or result bytes were ever written under RETOUCH_DATA_DIR", async () => {
    const result = (await gateway.object(`main/results/${jobId}.png`)) as Buffer;
    const files = await filesUnder(app.config.dataDir);
    expect(files.some((file) => file.includes(`${path.sep}blobs`))).toBe(false);
    for (const file of files) {
      const content = await readFile(file);
      for (const image of [photo, mask, result]) expect(content.includes(image.subarray(0, 256)), file).toBe(false);
    }
  });
});

describe("MCP with presigned result URLs", () => {
  it("get_job_result links the store's presigned URL and inlines the same picture, read from the bucket", async () => {
    const { jobId } = await submit(app, account.key, {
      image: base64(await productPhoto({ format: "jpeg" })),
      prompt: "make it black and white",
      format: "jpeg",
    });
    const client = await connectMcp(app.url, account.key, "s3-store-test");
    try {
      const result = (await client.callTool({ name: "get_job_result", arguments: { job_id: jobId } })) as {
        content: Array<{ type: string; uri?: string; data?: string; size?: number }>;
      };
      expect(result.content.map((block) => block.type)).toEqual(["text", "resource_link", "image"]);
      const link = result.content[1];
      expect(link?.uri).toMatch(new RegExp(`^${gateway.endpoint}/${gateway.bucket}/main/results/${jobId}\\.jpeg\\?`));
      const served = Buffer.from(await (await fetch(link?.uri as string)).arrayBuffer());
      expect(link?.size).toBe(served.length);
      expect(Buffer.from(result.content[2]?.data as string, "base64").equals(served)).toBe(true);
    } finally {
      await client.close();
    }
  });
});

describe("RETOUCH_RESULT_URLS=proxy", () => {
  it("hands out the service's signed /files/ URL, streamed from the bucket", async () => {
    const { jobId, status } = await submit(proxied, proxiedAccount.key, {
      image: base64(await productPhoto({ format: "jpeg" })),
      prompt: "make it black and white",
      format: "jpeg",
    });
    expect(status.status).toBe("done");
    const result = await request(proxied.url, "GET", `/api/process/result?job_id=${jobId}`, { key: proxiedAccount.key });
    expect(result.body.url).toMatch(
      new RegExp(`^${proxied.config.publicBaseUrl}/files/results/${jobId}\\.jpeg\\?expires=\\d+&signature=[0-9a-f]{64}$`),
    );
    const file = await fetch((result.body.url as string).replace(proxied.config.publicBaseUrl, proxied.url));
    expect(file.status).toBe(200);
    expect(file.headers.get("content-type")).toBe("image/jpeg");
    const bytes = Buffer.from(await file.arrayBuffer());
    expect(bytes.equals((await gateway.object(`proxied/results/${jobId}.jpeg`)) as Buffer)).toBe(true);
    // The service read it from the store with its own (header-signed) request.
    expect(
      gateway.requests.some(
        (entry) => entry.method === "GET" && entry.auth === "header" && entry.url.includes(`proxied/results/${jobId}`),
      ),
    ).toBe(true);
    const tampered = (result.body.url as string)
      .replace(proxied.config.publicBaseUrl, proxied.url)
      // Another first digit, whatever it was (a fixed "0" left one signature in sixteen unchanged).
      .replace(/signature=(.)/, (_match, digit: string) => `signature=${digit === "0" ? "1" : "0"}`);
    expect((await fetch(tampered)).status).toBe(403);
  });
});

describe("a store that fails", () => {
  it("refusing the result's PUT mid-job: the job fails with result_storage_failed and its credit is refunded", async () => {
    const before = await credits(app, account.userId);
    gateway.failWhen({ method: "PUT", keyPrefix: "main/results/", status: 403, code: "AccessDenied" });
    try {
      const { jobId, status } = await submit(app, account.key, {
        image: base64(await productPhoto({ format: "jpeg" })),
        prompt: "make it black and white",
        format: "jpeg",
      });
      expect(status).toMatchObject({
        status: "error",
        error: "Processing failed",
        error_code: "result_storage_failed",
        credits_used: 0,
      });
      expect(status.error_message).toMatch(/could not be stored/);
      expect(await credits(app, account.userId)).toBe(before);
      const ledger = (await app.services.stores.profiles.ledger(account.userId)).filter((row) => row.jobId === jobId);
      expect(ledger.map((row) => row.reason)).toEqual(["job_debit", "job_refund"]);
      const result = await request(app.url, "GET", `/api/process/result?job_id=${jobId}`, { key: account.key });
      expect(result.body).toMatchObject({ code: "job_failed", error_code: "result_storage_failed" });
    } finally {
      gateway.failWhen(undefined);
    }
  });

  it("failing to give the input back: the job fails with storage_unavailable, refunded", async () => {
    const before = await credits(app, account.userId);
    gateway.failWhen({ method: "GET", keyPrefix: "main/inputs/", status: 503, code: "ServiceUnavailable" });
    try {
      const { status } = await submit(app, account.key, {
        image: base64(await productPhoto({ format: "jpeg" })),
        prompt: "make it black and white",
        format: "jpeg",
      });
      expect(status).toMatchObject({ status: "error", error_code: "storage_unavailable", credits_used: 0 });
      expect(await credits(app, account.userId)).toBe(before);
    } finally {
      gateway.failWhen(undefined);
    }
  });

  it("refusing to delete the inputs once the job is done: the job stays done, its webhook goes out, the sweep deletes them later", async () => {
    const receiver = await new WebhookReceiver().start();
    gateway.failWhen({ method: "POST", status: 503, code: "ServiceUnavailable" });
    let jobId: string;
    try {
      ({ jobId } = await submit(app, account.key, {
        image: base64(await productPhoto({ format: "jpeg" })),
        prompt: "make it black and white",
        format: "jpeg",
        webhook_url: `${receiver.url}/done`,
      }));
      const [call] = await receiver.waitFor("/done", 1);
      const body = JSON.parse(call?.rawBody ?? "{}");
      expect(body).toMatchObject({ job_id: jobId, status: "done" });
      // The callback's result_url is a presigned GET of the store too, and downloads the result.
      expect(body.result_url).toMatch(
        new RegExp(`^${gateway.endpoint}/${gateway.bucket}/main/results/${jobId}\\.jpeg\\?.*X-Amz-Expires=3600`),
      );
      expect((await fetch(body.result_url)).status).toBe(200);
      expect(await gateway.object(`main/inputs/${jobId}`)).toBeDefined();
      expect(app.logs.some((line) => line.includes("could not delete a settled job's inputs"))).toBe(true);
    } finally {
      gateway.failWhen(undefined);
      await receiver.stop();
    }
    expect((await waitForJob(app.url, account.key, jobId)).status).toBe("done");
    await sweep(app, Date.now() + 120_000);
    expect(await gateway.object(`main/inputs/${jobId}`)).toBeUndefined();
    expect((await app.services.stores.jobs.find(jobId))?.input_blob).toBeNull();
  });

  it("refusing the input's PUT at submission: 503 with Retry-After, nothing charged, no job", async () => {
    const before = await credits(app, account.userId);
    const jobsBefore = (await request(app.url, "GET", "/api/jobs", { key: account.key })).body.jobs.length;
    gateway.failWhen({ method: "PUT", keyPrefix: "main/inputs/", status: 403, code: "AccessDenied" });
    try {
      const refused = await request(app.url, "POST", "/api/process", {
        key: account.key,
        body: { image: base64(await productPhoto({ format: "jpeg" })), prompt: "make it black and white" },
      });
      expect(refused.status, refused.text).toBe(503);
      expect(refused.body.code).toBe("service_unavailable");
      expect(refused.headers.get("retry-after")).toBe("5");
    } finally {
      gateway.failWhen(undefined);
    }
    expect(await credits(app, account.userId)).toBe(before);
    expect((await request(app.url, "GET", "/api/jobs", { key: account.key })).body.jobs.length).toBe(jobsBefore);
  });

  it("the proxied download while the store refuses: 503 with Retry-After, not a 500", async () => {
    const { jobId } = await submit(proxied, proxiedAccount.key, {
      image: base64(await productPhoto({ format: "jpeg" })),
      prompt: "make it black and white",
      format: "jpeg",
    });
    const result = await request(proxied.url, "GET", `/api/process/result?job_id=${jobId}`, { key: proxiedAccount.key });
    gateway.failWhen({ method: "GET", keyPrefix: "proxied/results/", status: 403, code: "AccessDenied" });
    try {
      const file = await fetch((result.body.url as string).replace(proxied.config.publicBaseUrl, proxied.url));
      expect(file.status).toBe(503);
      expect(file.headers.get("retry-after")).toBe("5");
    } finally {
      gateway.failWhen(undefined);
    }
  });
});

describe("retention", () => {
  it("deletes expired results and leftover inputs from the bucket in one batched request; the job rows keep their metadata", async () => {
    const { jobId } = await submit(app, account.key, {
      image: base64(await productPhoto({ format: "jpeg" })),
      prompt: "make it black and white",
      format: "jpeg",
    });
    // Once the worker has deleted the inputs it settled with, an input is left behind (as by a worker that died then).
    await expect.poll(async () => (await app.services.stores.jobs.find(jobId))?.input_blob, { timeout: 10_000 }).toBeNull();
    const client = new pg.Client({ connectionString: app.config.databaseUrl });
    await client.connect();
    await app.services.blobs.put(`inputs/${jobId}`, Buffer.from("left behind"));
    await client.query("update jobs set input_blob = $2 where id = $1", [jobId, `inputs/${jobId}`]);
    await client.end();
    expect((await gateway.keys()).filter((key) => key.includes(jobId)).sort()).toEqual(
      [`main/inputs/${jobId}`, `main/results/${jobId}.jpeg`].sort(),
    );
    const deletesBefore = gateway.requests.length;

    await sweep(app, Date.now() + app.config.retentionMs + 3_600_000);

    expect((await gateway.keys()).filter((key) => key.startsWith("main/"))).toEqual([]);
    // One DeleteObjects for the expired results, one for the leftover inputs (the other app's deletes aside).
    // Answered ones only: s3rver sometimes answers 500 to a many-key delete (its clean-up of emptied
    // directories races itself, stores/filesystem.js deleteObject), and the SDK retries it.
    const deletes = gateway.requests
      .slice(deletesBefore)
      .filter((entry) => entry.status === 200 && entry.deleteKeys?.some((key) => key.startsWith("main/")));
    expect(deletes).toHaveLength(2);
    expect(deletes.flatMap((entry) => entry.deleteKeys)).toEqual(
      expect.arrayContaining([`main/results/${jobId}.jpeg`, `main/inputs/${jobId}`]),
    );
    expect(deletes.every((entry) => entry.auth === "header")).toBe(true);
    const status = await request(app.url, "GET", `/api/process/status?job_id=${jobId}`, { key: account.key });
    expect(status.body).toMatchObject({ status: "done", width: 320, height: 240, format: "jpeg" });
    const result = await request(app.url, "GET", `/api/process/result?job_id=${jobId}`, { key: account.key });
    expect(result.status).toBe(404);
  });
});

describe("start-up", () => {
  it("a missing bucket, wrong credentials or a store that is down stop the start with the store's answer", async () => {
    await expect(startTestApp({ ...s3Env("x"), RETOUCH_S3_BUCKET: "no-such-bucket" })).rejects.toThrow(
      /no-such-bucket.*the bucket does not exist \(RETOUCH_S3_BUCKET/,
    );
    vi.stubEnv("AWS_SECRET_ACCESS_KEY", "not-the-secret-at-all-0123456789");
    try {
      await expect(startTestApp(s3Env("x"))).rejects.toThrow(/HTTP 403\): check the credentials/);
    } finally {
      vi.stubEnv("AWS_SECRET_ACCESS_KEY", gateway.secretAccessKey);
    }
    await expect(startTestApp({ ...s3Env("x"), RETOUCH_S3_ENDPOINT: "http://127.0.0.1:9" })).rejects.toThrow(
      /S3 check in bucket "retouch-test" at http:\/\/127\.0\.0\.1:9/,
    );
  });

  it("`pnpm start` with a bucket that does not exist exits 1 with the store's answer, not a stack trace", async () => {
    const database = await createTestDatabase();
    const dataDir = await mkdtemp(path.join(os.tmpdir(), "retouch-s3-start-"));
    try {
      const server = spawnRetouch({
        ...s3Env("x"),
        RETOUCH_S3_BUCKET: "no-such-bucket",
        AWS_ACCESS_KEY_ID: gateway.accessKeyId,
        AWS_SECRET_ACCESS_KEY: gateway.secretAccessKey,
        PORT: "0",
        DATABASE_URL: database.url,
        RETOUCH_DATA_DIR: dataDir,
      });
      expect(await server.exited).toBe(1);
      expect(server.output()).toContain(
        `Retouch failed to start: the blob store is not usable: S3 check in bucket "no-such-bucket" at ${gateway.endpoint} (region ${gateway.region}) failed: NotFound (HTTP 404): the bucket does not exist`,
      );
      expect(server.output()).not.toMatch(/^\s+at /m);
      expect(server.output()).not.toContain(gateway.secretAccessKey);
    } finally {
      await database.drop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it("the settings: s3 needs a bucket, presigned URLs need s3, the prefix is normalised, proxy is the file store's only kind", () => {
    expect(() => parseConfig({ RETOUCH_BLOB_STORE: "s3" })).toThrow(/RETOUCH_S3_BUCKET: required with RETOUCH_BLOB_STORE=s3/);
    expect(() => parseConfig({ RETOUCH_RESULT_URLS: "presigned" })).toThrow(/presigned URLs need RETOUCH_BLOB_STORE=s3/);
    expect(parseConfig({}).blobStore).toEqual({ kind: "file" });
    expect(parseConfig({}).resultUrls).toBe("proxy");
    const s3 = parseConfig({ RETOUCH_BLOB_STORE: "s3", RETOUCH_S3_BUCKET: "images", RETOUCH_S3_PREFIX: "/retouch/prod/" });
    expect(s3.blobStore).toEqual({
      kind: "s3",
      bucket: "images",
      endpoint: undefined,
      region: "us-east-1",
      forcePathStyle: false,
      prefix: "retouch/prod/",
    });
    expect(s3.resultUrls).toBe("presigned");
  });
});
