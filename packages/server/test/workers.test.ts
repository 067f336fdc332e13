import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey, signUp, verifyEmail, waitForJob } from "../../../test/support/accounts";
import { freePort } from "../../../test/support/free-port";
import { request } from "../../../test/support/http-client";
import { base64, productPhoto } from "../../../test/support/images";
import { type RetouchProcess, spawnRetouch } from "../../../test/support/spawn-retouch";
import { createTestDatabase } from "../../../test/support/test-database";

/**
 * Several processes on one database, as an operator scales out: one API
 * process and worker processes that share the queue, one of them killed mid-job.
 */
let dataDir: string;
let database: Awaited<ReturnType<typeof createTestDatabase>>;
let baseUrl: string;
let env: Record<string, string>;
let key: string;
let userId: string;
const running = new Set<RetouchProcess>();

function start(args: string[], extra: Record<string, string> = {}): RetouchProcess {
  // A worker given PORT listens on it (/healthz, /readyz, /metrics): here it shares the API's environment, so it gets none.
  const worker: Record<string, string> = args.includes("worker") ? { PORT: "" } : {};
  const proc = spawnRetouch({ ...env, ...worker, ...extra }, args);
  running.add(proc);
  void proc.exited.then(() => running.delete(proc));
  return proc;
}

async function sql<T extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), "retouch-workers-"));
  database = await createTestDatabase();
  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}`;
  env = {
    PORT: String(port),
    HOST: "127.0.0.1",
    RETOUCH_DATA_DIR: dataDir,
    DATABASE_URL: database.url,
    LOG_LEVEL: "info",
    RETOUCH_JOB_LOCK_LIFETIME: "3s",
    RETOUCH_QUEUE_POLL_INTERVAL: "500ms",
    RETOUCH_WORKER_CONCURRENCY: "1",
  };
  const api = start(["--role", "api"]);
  await api.waitForLog(/Retouch is listening/);
  const account = await signUp(baseUrl);
  await verifyEmail(baseUrl, path.join(dataDir, "outbox"), account.email);
  key = (await createKey(baseUrl, account)).key;
  userId = account.userId;
  await sql("update profiles set plan = 'pro' where user_id = $1", [userId]);
  await sql("update profiles set credits = 100 where user_id = $1", [userId]);
}, 90_000);

afterAll(async () => {
  for (const proc of running) proc.child.kill("SIGKILL");
  await database.drop();
  await rm(dataDir, { recursive: true, force: true });
});

describe("worker processes", { timeout: 120_000 }, () => {
  it("share the queue without running a job twice", async () => {
    const workers = [start(["--role", "worker"]), start(["--role", "worker"])];
    await Promise.all(workers.map((worker) => worker.waitForLog(/Retouch worker is running/)));
    const image = base64(await productPhoto());
    const submitted = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        request(baseUrl, "POST", "/api/process", { key, body: { image, prompt: `make it sepia and rotate ${i + 1} degrees` } }),
      ),
    );
    const jobIds = submitted.map((response) => response.body.job_id as string);
    for (const jobId of jobIds) expect((await waitForJob(baseUrl, key, jobId)).status).toBe("done");
    for (const jobId of jobIds) {
      const runs = workers.map(
        (worker) =>
          worker
            .output()
            .split("\n")
            .filter((line) => line.includes(jobId) && line.includes('"job done"')).length,
      );
      expect(
        runs.reduce((sum, count) => sum + count, 0),
        jobId,
      ).toBe(1);
    }
    const perWorker = workers.map((worker) => jobIds.filter((jobId) => worker.output().includes(jobId)).length);
    expect(
      perWorker.every((count) => count > 0),
      `jobs per worker: ${perWorker}`,
    ).toBe(true);
    for (const worker of workers) {
      worker.child.kill("SIGTERM");
      expect(await worker.exited).toBe(0);
    }
  });

  it("a job whose worker is killed mid-job is finished by another worker, charged once, never refunded", async () => {
    const first = start(["--role", "worker"]);
    await first.waitForLog(/Retouch worker is running/);
    // Large enough that the edit is still running when the worker is killed.
    const big = await productPhoto({ width: 4000, height: 3000, format: "jpeg" });
    const submitted = await request(baseUrl, "POST", "/api/process", {
      key,
      body: { image: base64(big), prompt: "remove the background" },
    });
    expect(submitted.status, submitted.text).toBe(200);
    const jobId = submitted.body.job_id as string;
    await first.waitForLog(new RegExp(`"jobId":"${jobId}".*"processing job"`));
    first.child.kill("SIGKILL");
    await first.exited;

    const second = start(["--role", "worker"]);
    const status = await waitForJob(baseUrl, key, jobId, 90_000);
    expect(status.status).toBe("done");
    expect(second.output()).toMatch(new RegExp(`"jobId":"${jobId}".*"attempt":2.*"processing job"`));
    const ledger = await sql<{ reason: string; delta: number }>(
      "select reason, delta from credit_ledger where job_id = $1 order by id",
      [jobId],
    );
    expect(ledger).toEqual([{ reason: "job_debit", delta: -1 }]);
    second.child.kill("SIGTERM");
    expect(await second.exited).toBe(0);
  });

  it("a job that keeps killing its worker fails after the last attempt, with its refund", async () => {
    const submitted = await request(baseUrl, "POST", "/api/process", {
      key,
      body: { image: base64(await productPhoto()), prompt: "make it sepia" },
    });
    const jobId = submitted.body.job_id as string;
    // As if three workers had died on it already.
    await sql("update jobs set attempts = 3 where id = $1", [jobId]);
    const worker = start(["--role", "worker"]);
    const status = await waitForJob(baseUrl, key, jobId, 60_000);
    expect(status).toMatchObject({
      status: "error",
      error: "Processing failed",
      error_code: "worker_crashed",
      error_message: expect.stringMatching(/stopped on every attempt/),
      credits_used: 0,
    });
    const ledger = await sql<{ reason: string }>("select reason from credit_ledger where job_id = $1 order by id", [jobId]);
    expect(ledger.map((row) => row.reason)).toEqual(["job_debit", "job_refund"]);
    worker.child.kill("SIGTERM");
    await worker.exited;
  });
});
