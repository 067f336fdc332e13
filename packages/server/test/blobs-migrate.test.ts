import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { createLogger, FileBlobStore, parseConfig } from "@retouch/core";
import { startRetouch } from "@retouch/server";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { keyedAccount, waitForJob } from "../../../test/support/accounts";
import { freePort } from "../../../test/support/free-port";
import { request } from "../../../test/support/http-client";
import { base64, productPhoto } from "../../../test/support/images";
import { type S3Gateway, startS3Gateway } from "../../../test/support/s3-gateway";
import { type RetouchProcess, spawnServerEntry } from "../../../test/support/spawn-retouch";
import { createTestDatabase } from "../../../test/support/test-database";
import { S3BlobStore } from "../../core/src/blobs/s3-blob-store";

/**
 * `pnpm retouch admin blobs migrate --to s3`, the built command in a child
 * process, against s3rver behind the SigV4-verifying gateway. Between the
 * command and the gateway sits a tap (below) that can hold every request
 * after the n-th upload, so the command is killed at a known point, and can
 * change a downloaded object's bytes, so a verification that does not
 * compare bytes would be seen.
 */
let gateway: S3Gateway;
let tap: Tap;

beforeAll(async () => {
  gateway = await startS3Gateway();
  tap = await startTap(gateway.endpoint);
  // The AWS SDK's default credential chain, for the service started in this process (the command gets them in its env).
  vi.stubEnv("AWS_ACCESS_KEY_ID", gateway.accessKeyId);
  vi.stubEnv("AWS_SECRET_ACCESS_KEY", gateway.secretAccessKey);
});
afterAll(async () => {
  await tap?.close();
  await gateway?.close();
  vi.unstubAllEnvs();
});

function s3Env(prefix: string, endpoint = tap.endpoint): Record<string, string> {
  return {
    RETOUCH_BLOB_STORE: "s3",
    RETOUCH_S3_BUCKET: gateway.bucket,
    RETOUCH_S3_ENDPOINT: endpoint,
    RETOUCH_S3_REGION: gateway.region,
    RETOUCH_S3_FORCE_PATH_STYLE: "1",
    RETOUCH_S3_PREFIX: prefix,
    AWS_ACCESS_KEY_ID: gateway.accessKeyId,
    AWS_SECRET_ACCESS_KEY: gateway.secretAccessKey,
  };
}

function startMigration(dataDir: string, env: Record<string, string>, args: string[] = []): RetouchProcess {
  return spawnServerEntry("dist/admin.js", ["admin", "blobs", "migrate", "--to", "s3", ...args], {
    RETOUCH_DATA_DIR: dataDir,
    ...env,
  });
}

async function migrate(dataDir: string, env: Record<string, string>, args: string[] = []) {
  const proc = startMigration(dataDir, env, args);
  const code = await proc.exited;
  return { code, output: proc.output() };
}

/** The count on a summary line (`  copied   12 (1.2 MB)...`). */
function counted(output: string, label: string): number {
  const match = new RegExp(`^ {2}${label} +(\\d+)`, "m").exec(output);
  if (!match) throw new Error(`no "${label}" line in:\n${output}`);
  return Number(match[1]);
}

/** A file store with `count` blobs of every kind the service writes, and two files that are not blobs. */
async function fileStore(count: number): Promise<{ dataDir: string; blobs: Map<string, Buffer> }> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "retouch-migrate-"));
  const store = new FileBlobStore(path.join(dataDir, "blobs"));
  const blobs = new Map<string, Buffer>();
  const formats = ["png", "jpeg", "webp"];
  for (let index = 0; index < count; index++) {
    const job = `job_${String(index).padStart(26, "0")}`;
    const key =
      index % 3 === 0 ? `inputs/${job}` : index % 3 === 1 ? `masks/${job}` : `results/${job}.${formats[index % formats.length]}`;
    const bytes = randomBytes(20_000 + index * 3_000);
    await store.put(key, bytes);
    blobs.set(key, bytes);
  }
  // A replaced result's write-beside-then-rename, cut off by a crash; and something an operator left there.
  await mkdir(path.join(dataDir, "blobs", "results"), { recursive: true });
  await writeFile(path.join(dataDir, "blobs", "results", "job_00000000000000000000000002.webp.4242.1764250000000.tmp"), "x");
  await writeFile(path.join(dataDir, "blobs", "NOTES.txt"), "not a blob");
  return { dataDir, blobs };
}

async function expectBucketHolds(prefix: string, blobs: Map<string, Buffer>): Promise<void> {
  const keys = (await gateway.keys()).filter((key) => key.startsWith(prefix));
  expect(keys).toEqual([...blobs.keys()].map((key) => `${prefix}${key}`).sort());
  for (const [key, bytes] of blobs) expect((await gateway.object(`${prefix}${key}`))?.equals(bytes), key).toBe(true);
}

describe("blobs migrate: happy path", () => {
  it("results handed out before the switch download the same bytes from the bucket after it", { timeout: 120_000 }, async () => {
    const database = await createTestDatabase();
    const dataDir = await mkdtemp(path.join(os.tmpdir(), "retouch-migrate-app-"));
    const port = await freePort();
    const base = {
      PORT: String(port),
      HOST: "127.0.0.1",
      RETOUCH_DATA_DIR: dataDir,
      DATABASE_URL: database.url,
      RETOUCH_SIGNUP_RATE_LIMIT: "1000/1h",
      RETOUCH_MODEL_DOWNLOAD: "off",
      RETOUCH_QUEUE_POLL_INTERVAL: "200ms",
    };
    const logger = createLogger("warn", { write: () => undefined });
    const prefix = "switched/";
    try {
      // Before: the file store.
      const fileConfig = parseConfig(base);
      let app = await startRetouch({ config: fileConfig, logger });
      const url = app.http?.url as string;
      const handle = { url, outboxDir: path.join(dataDir, "outbox"), services: app.services };
      const account = await keyedAccount(handle, { plan: "pro", credits: 10 });
      const submitted = await request(url, "POST", "/api/process", {
        key: account.key,
        body: { image: base64(await productPhoto({ format: "jpeg" })), prompt: "make it black and white", format: "jpeg" },
      });
      expect(submitted.status, submitted.text).toBe(200);
      const jobId = submitted.body.job_id as string;
      expect((await waitForJob(url, account.key, jobId)).status).toBe("done");
      const result = await request(url, "GET", `/api/process/result?job_id=${jobId}`, { key: account.key });
      const handedOut = (result.body.url as string).replace(fileConfig.publicBaseUrl, url);
      expect(handedOut).toContain(`/files/results/${jobId}.jpeg?`);
      const before = Buffer.from(await (await fetch(handedOut)).arrayBuffer());
      const file = path.join(dataDir, "blobs", "results", `${jobId}.jpeg`);
      expect((await readFile(file)).equals(before)).toBe(true);
      await app.close();

      const migrated = await migrate(dataDir, s3Env(prefix));
      expect(migrated.code, migrated.output).toBe(0);
      expect(counted(migrated.output, "copied ")).toBeGreaterThanOrEqual(1);
      expect(counted(migrated.output, "failed")).toBe(0);
      expect(migrated.output).toContain("were not deleted");
      expect((await gateway.object(`${prefix}results/${jobId}.jpeg`))?.equals(before)).toBe(true);

      // After: the same data directory and database, RETOUCH_BLOB_STORE=s3 with the default (presigned) result URLs.
      const s3Config = parseConfig({ ...base, ...s3Env(prefix, gateway.endpoint) });
      app = await startRetouch({ config: s3Config, logger });
      try {
        const reads = gateway.requests.length;
        const after = await fetch(handedOut);
        expect(after.status).toBe(200);
        expect(after.headers.get("content-type")).toBe("image/jpeg");
        expect(Buffer.from(await after.arrayBuffer()).equals(before)).toBe(true);
        // Served from the bucket, not from the file (which is still there: the migration deletes nothing).
        expect(
          gateway.requests
            .slice(reads)
            .some((entry) => entry.method === "GET" && entry.url.includes(`${prefix}results/${jobId}.jpeg`)),
        ).toBe(true);
        expect((await readFile(file)).equals(before)).toBe(true);
        // New links are the bucket's presigned GETs, and download the same bytes.
        const fresh = await request(url, "GET", `/api/process/result?job_id=${jobId}`, { key: account.key });
        expect(fresh.body.url).toMatch(new RegExp(`^${gateway.endpoint}/${gateway.bucket}/${prefix}results/${jobId}\\.jpeg\\?`));
        expect(Buffer.from(await (await fetch(fresh.body.url as string)).arrayBuffer()).equals(before)).toBe(true);
      } finally {
        await app.close();
      }
    } finally {
      await database.drop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it("an interrupted run continues where it stopped: nothing uploaded twice, every object verified", {
    timeout: 90_000,
  }, async () => {
    const { dataDir, blobs } = await fileStore(24);
    const prefix = "resumed/";
    try {
      // Run 1: killed (SIGKILL) once 6 uploads were answered; whatever it sent after that never arrives.
      tap.reset();
      const held = tap.holdAfterPuts(6);
      const first = startMigration(dataDir, s3Env(prefix));
      await Promise.race([held, first.exited.then(() => Promise.reject(new Error(`exited early:\n${first.output()}`)))]);
      first.child.kill("SIGKILL");
      expect(await first.exited).toBe("SIGKILL");
      await tap.release();
      const firstPuts = tap.puts();
      const afterFirst = (await gateway.keys()).filter((key) => key.startsWith(prefix));
      expect(afterFirst.length).toBeGreaterThanOrEqual(6);
      expect(afterFirst.length).toBeLessThan(blobs.size);

      // A stale object of the right size but other bytes (a copy from elsewhere): must be replaced, not skipped.
      const stale = [...blobs.keys()].find((key) => !afterFirst.includes(`${prefix}${key}`)) as string;
      const direct = new S3BlobStore({
        bucket: gateway.bucket,
        endpoint: gateway.endpoint,
        region: gateway.region,
        forcePathStyle: true,
        prefix,
        credentials: { accessKeyId: gateway.accessKeyId, secretAccessKey: gateway.secretAccessKey },
      });
      await direct.put(stale, randomBytes((blobs.get(stale) as Buffer).length));
      direct.close();

      // Run 2: copies the rest, skips what run 1 finished.
      tap.reset();
      const second = await migrate(dataDir, s3Env(prefix));
      expect(second.code, second.output).toBe(0);
      expect(counted(second.output, "skipped")).toBe(afterFirst.length);
      expect(counted(second.output, "copied ")).toBe(blobs.size - afterFirst.length);
      expect(counted(second.output, "failed")).toBe(0);
      expect(counted(second.output, "ignored")).toBe(2);
      const secondPuts = tap.puts();
      // Each blob was uploaded exactly once over both runs (the stale object once more, by run 2).
      expect([...firstPuts, ...secondPuts].sort()).toEqual([...blobs.keys()].map((key) => `${prefix}${key}`).sort());
      expect(secondPuts).toContain(`${prefix}${stale}`);
      await expectBucketHolds(prefix, blobs);
      // The source files are all still there.
      for (const [key, bytes] of blobs) expect((await readFile(path.join(dataDir, "blobs", key))).equals(bytes)).toBe(true);
      expect(second.output).not.toContain(gateway.secretAccessKey);

      // Run 3: nothing left to do; the ETags (the store's MD5s) prove it without downloading anything.
      tap.reset();
      const third = await migrate(dataDir, s3Env(prefix));
      expect(third.code, third.output).toBe(0);
      expect(counted(third.output, "skipped")).toBe(blobs.size);
      expect(counted(third.output, "copied ")).toBe(0);
      expect(tap.requests.filter((entry) => entry.method !== "HEAD")).toEqual([]);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it("Ctrl-C (SIGINT): the uploads in flight finish, the summary says to run it again, exit 130", async () => {
    const { dataDir, blobs } = await fileStore(16);
    const prefix = "interrupted/";
    try {
      tap.reset();
      const held = tap.holdAfterPuts(4);
      const run = startMigration(dataDir, s3Env(prefix));
      await held;
      run.child.kill("SIGINT");
      await run.waitForLog(/Interrupted: finishing the uploads in flight/);
      // The held requests are cut off; the SDK's retries of them now go through, and the run ends there.
      await tap.release();
      expect(await run.exited, run.output()).toBe(130);
      const output = run.output();
      expect(output).toContain("Stopped early (the migration was interrupted): run the command again");
      const copied = counted(output, "copied ");
      expect(copied).toBeGreaterThanOrEqual(4);
      expect(copied).toBeLessThan(blobs.size);
      expect(counted(output, "failed")).toBe(0);

      const again = await migrate(dataDir, s3Env(prefix));
      expect(again.code, again.output).toBe(0);
      expect(counted(again.output, "skipped")).toBe(copied);
      await expectBucketHolds(prefix, blobs);
    } finally {
      await tap.release();
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it("--dry-run lists what would be copied and writes nothing", async () => {
    const { dataDir, blobs } = await fileStore(5);
    const prefix = "dry/";
    try {
      tap.reset();
      const dry = await migrate(dataDir, s3Env(prefix), ["--dry-run"]);
      expect(dry.code, dry.output).toBe(0);
      for (const key of blobs.keys()) expect(dry.output).toContain(`would copy ${key} (`);
      expect(dry.output).not.toMatch(/would copy .*(NOTES|\.tmp)/);
      expect(counted(dry.output, "to copy")).toBe(blobs.size);
      expect(tap.requests.filter((entry) => entry.method !== "HEAD")).toEqual([]);
      expect((await gateway.keys()).filter((key) => key.startsWith(prefix))).toEqual([]);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe("blobs migrate: errors", () => {
  it("an object whose bytes read back differently fails the run (exit 1); the next run checks it again", async () => {
    const { dataDir, blobs } = await fileStore(6);
    const prefix = "mismatch/";
    const victim = "masks/job_00000000000000000000000001";
    try {
      tap.reset();
      tap.corruptGets(`${prefix}${victim}`);
      const run = await migrate(dataDir, s3Env(prefix));
      tap.corruptGets(undefined);
      expect(run.code, run.output).toBe(1);
      expect(counted(run.output, "failed")).toBe(1);
      expect(counted(run.output, "copied ")).toBe(blobs.size - 1);
      expect(run.output).toContain(`FAILED ${victim}: verification failed: the bytes read back differ from the file`);

      const again = await migrate(dataDir, s3Env(prefix));
      expect(again.code, again.output).toBe(0);
      expect(counted(again.output, "skipped")).toBe(blobs.size);
      await expectBucketHolds(prefix, blobs);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it("a store that refuses every upload: the run stops after 10 failures (exit 1) and says to run it again", async () => {
    const { dataDir, blobs } = await fileStore(24);
    const prefix = "refused/";
    try {
      tap.reset();
      gateway.failWhen({ method: "PUT", keyPrefix: prefix, status: 403, code: "AccessDenied" });
      const run = await migrate(dataDir, s3Env(prefix));
      gateway.failWhen(undefined);
      expect(run.code, run.output).toBe(1);
      // The 10th failure stops new uploads; the (at most 3) others in flight still settle.
      const failed = counted(run.output, "failed");
      expect(failed).toBeGreaterThanOrEqual(10);
      expect(failed).toBeLessThan(blobs.size);
      expect(tap.requests.filter((entry) => entry.method === "PUT")).toHaveLength(failed);
      expect(run.output).toMatch(/FAILED inputs\/job_\w+: S3 put of inputs\/job_\w+ in bucket "retouch-test" .*HTTP 403/);
      expect(run.output).toContain(`Stopped early (${failed} objects failed): run the command again`);
      expect(run.output).not.toContain(gateway.secretAccessKey);
    } finally {
      gateway.failWhen(undefined);
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it("refuses with one sentence and exit 2: another target, a file-store setting, no bucket, no store, wrong secret", async () => {
    const { dataDir } = await fileStore(2);
    const closedPort = await freePort();
    try {
      const cases: Array<{ env: Record<string, string>; args?: string[]; says: RegExp }> = [
        { env: s3Env("x/"), args: ["--to", "gcs"], says: /--to gcs: the file store can only be migrated to s3/ },
        { env: { ...s3Env("x/"), RETOUCH_BLOB_STORE: "file" }, says: /RETOUCH_BLOB_STORE is file, so there is no bucket/ },
        {
          env: { ...s3Env("x/"), RETOUCH_S3_BUCKET: "no-such-bucket" },
          says: /The bucket cannot be used: .*bucket "no-such-bucket".*the bucket does not exist/,
        },
        {
          env: s3Env("x/", `http://127.0.0.1:${closedPort}`),
          says: new RegExp(`The bucket cannot be used: .*127\\.0\\.0\\.1:${closedPort}.*ECONNREFUSED`),
        },
        {
          env: { ...s3Env("x/"), AWS_SECRET_ACCESS_KEY: "wrong-secret-0123456789abcdefghijklmnop" },
          says: /The bucket cannot be used: .*HTTP 403.*check the credentials/,
        },
      ];
      for (const { env, args, says } of cases) {
        const run = await migrate(dataDir, env, args);
        expect(run.code, run.output).toBe(2);
        expect(run.output).toMatch(says);
        expect(run.output).not.toMatch(/\n\s+at /);
        expect(run.output).not.toContain(gateway.secretAccessKey);
        expect(run.output).not.toContain("wrong-secret");
      }
      expect((await gateway.keys()).filter((key) => key.startsWith("x/"))).toEqual([]);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

interface Tap {
  endpoint: string;
  /** The command's requests that reached the gateway since the last reset: method and object key (after the bucket). */
  requests: { method: string; key: string }[];
  /** The keys of the answered PUTs since the last reset. */
  puts(): string[];
  reset(): void;
  /** From the moment `count` PUTs have been answered, holds every new request unanswered; resolves at the first held one. */
  holdAfterPuts(count: number): Promise<void>;
  /** Drops the held requests and waits for those already forwarded to be answered. */
  release(): Promise<void>;
  /** Flips the first byte of every downloaded body of this key (its length unchanged). */
  corruptGets(key: string | undefined): void;
  close(): Promise<void>;
}

/**
 * A pass-through in front of the gateway, for the command only. It reads a
 * request whole before forwarding it, as the gateway does, so a request is
 * either delivered whole or not at all when the command is killed. The Host
 * header is kept: the command signed it.
 */
async function startTap(upstream: string): Promise<Tap> {
  const target = new URL(upstream);
  let requests: { method: string; key: string }[] = [];
  let answeredPuts: string[] = [];
  let holdAt: number | undefined;
  let onHeld: (() => void) | undefined;
  const held: ServerResponse[] = [];
  const inFlight = new Set<Promise<void>>();
  let corrupt: string | undefined;
  const bucketPath = `/${gateway.bucket}/`;

  const server: Server = createServer((req, res) => {
    void handle(req, res).catch(() => res.destroy());
  });
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    if (holdAt !== undefined && answeredPuts.length >= holdAt) {
      held.push(res);
      onHeld?.();
      return;
    }
    const pathname = decodeURIComponent(new URL(req.url ?? "/", "http://tap").pathname);
    const key = pathname.startsWith(bucketPath) ? pathname.slice(bucketPath.length) : "";
    const method = req.method ?? "GET";
    requests.push({ method, key });
    const forwarded = new Promise<void>((resolve, reject) => {
      const out = httpRequest(
        { host: target.hostname, port: target.port, method, path: req.url, headers: req.headers },
        (answer) => {
          const parts: Buffer[] = [];
          answer.on("data", (chunk: Buffer) => parts.push(chunk));
          answer.on("error", reject);
          answer.on("end", () => {
            const answerBody = Buffer.concat(parts);
            if (method === "GET" && key === corrupt && answer.statusCode === 200 && answerBody.length > 0) {
              answerBody[0] = (answerBody[0] as number) ^ 0xff;
            }
            if (method === "PUT" && answer.statusCode === 200) answeredPuts.push(key);
            const headers = { ...answer.headers };
            delete headers["transfer-encoding"];
            if (method !== "HEAD") headers["content-length"] = String(answerBody.length);
            res.writeHead(answer.statusCode ?? 502, headers);
            res.end(method === "HEAD" ? undefined : answerBody);
            resolve();
          });
        },
      );
      out.on("error", reject);
      out.end(body);
    });
    inFlight.add(forwarded);
    try {
      await forwarded;
    } finally {
      inFlight.delete(forwarded);
    }
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    get requests() {
      return requests;
    },
    puts: () => [...answeredPuts],
    reset() {
      requests = [];
      answeredPuts = [];
    },
    holdAfterPuts(count) {
      holdAt = count;
      return new Promise<void>((resolve) => {
        onHeld = resolve;
      });
    },
    async release() {
      holdAt = undefined;
      onHeld = undefined;
      for (const res of held.splice(0)) res.destroy();
      await Promise.allSettled([...inFlight]);
    },
    corruptGets(key) {
      corrupt = key;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
