import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createKey, signUpVerified, waitForJob } from "../../../test/support/accounts";
import { freePort } from "../../../test/support/free-port";
import { request } from "../../../test/support/http-client";
import { base64, productPhoto } from "../../../test/support/images";
import { type RetouchProcess, spawnRetouch } from "../../../test/support/spawn-retouch";
import { createTestDatabase } from "../../../test/support/test-database";
import { WebhookReceiver } from "../../../test/support/webhook-receiver";

/**
 * A worker killed with SIGKILL leaves its queue locks behind; the next
 * process frees them once the dead one's heartbeat is stale, rather than
 * when they expire (a webhook attempt's lock lives 60 s). Real processes on
 * one database, a real receiver on loopback.
 */

/** A webhook attempt's queue lock lifetime (job-queue.ts): what a dead worker's lock would otherwise be waited out for. */
const WEBHOOK_LOCK_LIFETIME_MS = 60_000;

let database: { url: string; drop(): Promise<void> };
let dataDir: string;
let receiver: WebhookReceiver;
let env: Record<string, string>;
let client: pg.Client;
const running = new Set<RetouchProcess>();

function start(args: string[] = []): RetouchProcess {
  // A worker given PORT listens on it (/healthz, /readyz, /metrics): here it shares the API's environment, so it gets none.
  const worker: Record<string, string> = args.includes("worker") ? { PORT: "" } : {};
  const proc = spawnRetouch({ ...env, ...worker }, args);
  running.add(proc);
  void proc.exited.then(() => running.delete(proc));
  return proc;
}

/** A new verified account on the service at `base`, and a key of it. */
async function customerKey(base: string): Promise<string> {
  const account = await signUpVerified({ url: base, outboxDir: path.join(dataDir, "outbox") });
  return (await createKey(base, account)).key;
}

/** Starts the service, and submits an edit whose webhook goes to the receiver's `hookPath`. */
async function submitWithWebhook(hookPath: string): Promise<{ first: RetouchProcess; base: string; key: string }> {
  const first = start();
  await first.waitForLog(/Retouch is listening/);
  const base = `http://127.0.0.1:${env.PORT}`;
  const key = await customerKey(base);
  const submitted = await request(base, "POST", "/api/process", {
    key,
    body: { image: base64(await productPhoto()), prompt: "make it sepia", webhook_url: `${receiver.url}${hookPath}` },
  });
  expect(submitted.status, submitted.text).toBe(200);
  return { first, base, key };
}

beforeAll(async () => {
  database = await createTestDatabase();
  dataDir = await mkdtemp(path.join(os.tmpdir(), "retouch-queue-"));
  receiver = await new WebhookReceiver().start();
  env = {
    PORT: String(await freePort()),
    HOST: "127.0.0.1",
    DATABASE_URL: database.url,
    RETOUCH_DATA_DIR: dataDir,
    LOG_LEVEL: "info",
    RETOUCH_WEBHOOK_ALLOW_INSECURE: "1",
    RETOUCH_WEBHOOK_RETRY_DELAYS: "3s",
    // A long scan period: the retry, due within it, is locked as soon as it is scheduled (Agenda locks ahead).
    RETOUCH_QUEUE_POLL_INTERVAL: "30s",
  };
  client = new pg.Client({ connectionString: database.url });
  await client.connect();
});

// A failed test must not leave its process holding the port for the next one.
afterEach(async () => {
  const left = [...running];
  for (const proc of left) proc.child.kill("SIGKILL");
  await Promise.all(left.map((proc) => proc.exited));
});

afterAll(async () => {
  await client?.end();
  await receiver?.stop();
  await database?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

describe("a worker killed with SIGKILL", { timeout: 120_000 }, () => {
  it("has its locked webhook retry delivered by the restarted service within seconds, not when the lock expires", async () => {
    receiver.script("/hook", [500, 200]);
    const { first, base, key } = await submitWithWebhook("/hook");
    await receiver.waitFor("/hook", 1);

    // The retry's queue entry (a next run time: not the first attempt's, which has none while it runs),
    // locked ahead of its time by the process about to die, once the first attempt is recorded.
    let lock: { locked_at: Date; last_modified_by: string } | undefined;
    for (let tries = 0; !lock && tries < 100; tries++) {
      const rows = await client.query(
        `select locked_at, last_modified_by from agenda_jobs
         where name = 'deliver-webhook' and locked_at is not null and next_run_at is not null
           and exists (select 1 from webhook_deliveries where attempts = 1)`,
      );
      lock = rows.rows[0];
      if (!lock) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(lock?.last_modified_by).toMatch(/^worker:/);
    first.child.kill("SIGKILL");
    await first.exited;
    expect(receiver.callsTo("/hook")).toHaveLength(1);

    const second = start();
    await second.waitForLog(/Retouch is listening/);
    // Waited for only until shortly before the dead lock would have expired by itself.
    const expiresIn = (lock?.locked_at.getTime() ?? 0) + WEBHOOK_LOCK_LIFETIME_MS - Date.now();
    const calls = await receiver.waitFor("/hook", 2, expiresIn - 10_000);
    expect(calls).toHaveLength(2);
    expect(second.output()).toMatch(/freed the queue locks of stopped workers/);

    // The receiver has answered; the service records the attempt just after.
    let delivery: Record<string, unknown> | undefined;
    for (let tries = 0; delivery?.status !== "delivered" && tries < 100; tries++) {
      if (tries > 0) await new Promise((resolve) => setTimeout(resolve, 50));
      delivery = (await request(base, "GET", "/api/webhooks/deliveries?limit=10", { key })).body.deliveries[0];
    }
    expect(delivery).toMatchObject({ status: "delivered", attempts: 2 });
    second.child.kill("SIGTERM");
    await second.exited;
    // A clean stop leaves no heartbeat behind.
    expect((await client.query("select id from queue_workers")).rows).toEqual([]);
  });

  it("has the webhook attempt it was making retried by the restarted service, not after the delivery's lease", async () => {
    // The first attempt never gets its answer: the sender dies while waiting for it.
    receiver.script("/inflight", [{ status: 200, afterMs: 20_000 }, 200]);
    const { first } = await submitWithWebhook("/inflight");
    await receiver.waitFor("/inflight", 1);
    const [lease] = (
      await client.query<{ locked_until: Date }>("select locked_until from webhook_deliveries where url like '%/inflight'")
    ).rows;
    first.child.kill("SIGKILL");
    await first.exited;

    const second = start();
    await second.waitForLog(/Retouch is listening/);
    // Waited for only until shortly before the attempt's lease (three webhook timeouts, 30 s) would have lapsed.
    await receiver.waitFor("/inflight", 2, (lease?.locked_until.getTime() ?? 0) - Date.now() - 3_000);
    second.child.kill("SIGTERM");
    await second.exited;
  });

  it("has its image job finished by another worker before its queue lock and claim would expire", async () => {
    const api = start(["--role", "api"]);
    await api.waitForLog(/Retouch is listening/);
    const base = `http://127.0.0.1:${env.PORT}`;
    const key = await customerKey(base);
    const first = start(["--role", "worker"]);
    await first.waitForLog(/Retouch worker is running/);
    // Large enough that the edit is still running when the worker is killed.
    const big = await productPhoto({ width: 4000, height: 3000, format: "jpeg" });
    const submitted = await request(base, "POST", "/api/process", {
      key,
      body: { image: base64(big), prompt: "remove the background" },
    });
    expect(submitted.status, submitted.text).toBe(200);
    const jobId = submitted.body.job_id as string;
    await first.waitForLog(new RegExp(`"jobId":"${jobId}".*"processing job"`));
    const [claim] = (
      await client.query<{ claimed_until: Date; claimed_by: string }>(
        "select claimed_until, claimed_by from jobs where id = $1",
        [jobId],
      )
    ).rows;
    expect(claim?.claimed_by).toMatch(/^worker:/);
    first.child.kill("SIGKILL");
    await first.exited;

    const second = start(["--role", "worker"]);
    // Waited for only until shortly before the dead worker's claim (RETOUCH_JOB_LOCK_LIFETIME, 30 s) would have lapsed.
    const status = await waitForJob(base, key, jobId, (claim?.claimed_until.getTime() ?? 0) - Date.now() - 3_000);
    expect(status.status).toBe("done");
    expect(second.output()).toMatch(new RegExp(`"jobId":"${jobId}".*"attempt":2.*"processing job"`));
    second.child.kill("SIGTERM");
    api.child.kill("SIGTERM");
    expect(await second.exited).toBe(0);
    await api.exited;
  });
});
