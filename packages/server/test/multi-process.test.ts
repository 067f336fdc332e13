import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey, signUp, verifyEmail, waitForJob } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { base64, productPhoto } from "../../../test/support/images";
import { type S3Gateway, startS3Gateway } from "../../../test/support/s3-gateway";
import { filesUnder, imageFilesUnder, type Machine, SeparateMachines } from "../../../test/support/separate-machines";
import { createTestDatabase } from "../../../test/support/test-database";
import { WebhookReceiver } from "../../../test/support/webhook-receiver";

/**
 * Retouch on separate machines: one api process and two worker processes,
 * each the built server with its own data directory, sharing only one
 * PostgreSQL and the S3 store (s3rver behind the SigV4-verifying gateway, on
 * loopback). A batch goes through them; the worker holding the batch's large
 * job is killed with SIGKILL mid-job and the other worker finishes it, freed
 * by the heartbeat rather than by the job's 30 s lock; every job settles once
 * (one webhook each, on a loopback receiver), the ledger adds up to the
 * balance, and no data directory holds an image byte.
 */
const HEARTBEAT_MS = 300;
/** RETOUCH_JOB_LOCK_LIFETIME (its default): what the survivor would wait out without the heartbeat. */
const JOB_LOCK_LIFETIME_MS = 30_000;
const SMALL_JOBS = 5;

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let gateway: S3Gateway;
let receiver: WebhookReceiver;
let machines: SeparateMachines;
let api: Machine;
let workers: Machine[];
let db: pg.Client;

beforeAll(async () => {
  [database, gateway, receiver] = await Promise.all([createTestDatabase(), startS3Gateway(), new WebhookReceiver().start()]);
  db = new pg.Client({ connectionString: database.url });
  await db.connect();
  machines = new SeparateMachines({
    databaseUrl: database.url,
    gateway,
    env: {
      RETOUCH_WORKER_HEARTBEAT: `${HEARTBEAT_MS}ms`,
      RETOUCH_JOB_LOCK_LIFETIME: `${JOB_LOCK_LIFETIME_MS}ms`,
      RETOUCH_WORKER_CONCURRENCY: "1",
      RETOUCH_QUEUE_POLL_INTERVAL: "500ms",
      RETOUCH_WEBHOOK_ALLOW_INSECURE: "1",
      RETOUCH_DEFAULT_PLAN: "pro",
      RETOUCH_SIGNUP_CREDITS: "40",
    },
  });
  [api, ...workers] = await Promise.all([
    machines.startApi(),
    machines.startWorker("worker-a"),
    machines.startWorker("worker-b"),
  ]);
}, 90_000);

afterAll(async () => {
  await machines?.stop();
  await db?.end();
  await receiver?.stop();
  await gateway?.close();
  await database?.drop();
});

describe("one api and two workers on separate machines (own data directories, one PostgreSQL, one S3 store)", () => {
  let key: string;
  let userId: string;
  let bigJob: string;
  let killed: Machine;
  let survivor: Machine;
  let claimedUntil: number;
  const jobIds: string[] = [];

  beforeAll(async () => {
    const account = await signUp(api.url);
    await verifyEmail(api.url, path.join(api.dataDir, "outbox"), account.email);
    key = (await createKey(api.url, account)).key;
    userId = account.userId;
  });

  it("a worker killed with SIGKILL mid-job has its job finished by the other worker, freed by the heartbeat", {
    timeout: 90_000,
  }, async () => {
    const webhookUrl = `${receiver.url}/hook`;
    // Large enough that the edit is still running when its worker is killed.
    const big = await productPhoto({ width: 4000, height: 3000, format: "jpeg" });
    const submitted = await request(api.url, "POST", "/api/process", {
      key,
      body: { image: base64(big), prompt: "remove the background", webhook_url: webhookUrl },
    });
    expect(submitted.status, submitted.text).toBe(200);
    bigJob = submitted.body.job_id as string;
    jobIds.push(bigJob);
    const small = base64(await productPhoto({ width: 160, height: 120 }));
    for (let i = 0; i < SMALL_JOBS; i++) {
      const response = await request(api.url, "POST", "/api/process", {
        key,
        body: { image: small, prompt: `make it sepia and rotate ${i + 1} degrees`, webhook_url: webhookUrl },
      });
      expect(response.status, response.text).toBe(200);
      jobIds.push(response.body.job_id as string);
    }

    // The large job's holder, read from the claim a worker writes when it starts the job.
    let claim: { claimed_by: string; claimed_until: Date } | undefined;
    for (let tries = 0; !claim && tries < 400; tries++) {
      claim = (
        await db.query(
          "select claimed_by, claimed_until from jobs where id = $1 and status = 'pending' and claimed_until > now()",
          [bigJob],
        )
      ).rows[0];
      if (!claim) await new Promise((resolve) => setTimeout(resolve, 25));
    }
    expect(claim, "the large job was never claimed").toBeDefined();
    const holder = machines.holder(claim?.claimed_by);
    expect(holder && workers.includes(holder), `held by ${claim?.claimed_by}`).toBe(true);
    killed = holder as Machine;
    survivor = workers.find((worker) => worker !== killed) as Machine;
    claimedUntil = claim?.claimed_until.getTime() ?? 0;
    await killed.proc.waitForLog(new RegExp(`"jobId":"${bigJob}".*"processing job"`));
    killed.proc.child.kill("SIGKILL");
    expect(await killed.proc.exited).toBe("SIGKILL");
    expect(killed.proc.output()).not.toMatch(new RegExp(`"jobId":"${bigJob}".*"job (done|failed)"`));

    // Waited for only until shortly before the dead worker's claim would have lapsed by itself.
    const status = await waitForJob(api.url, key, bigJob, claimedUntil - Date.now() - 3_000);
    expect(status.status).toBe("done");
    expect(survivor.proc.output()).toMatch(/freed the queue locks of stopped workers/);
    expect(survivor.proc.output()).toMatch(new RegExp(`"jobId":"${bigJob}".*"attempt":2.*"processing job"`));
  });

  it("every job of the batch settles exactly once: one webhook each, charged once, refunded only if failed", async () => {
    const settled = [];
    for (const jobId of jobIds) settled.push(await waitForJob(api.url, key, jobId, 60_000));
    for (const status of settled)
      expect(status.status === "done" || status.status === "error", JSON.stringify(status)).toBe(true);
    await receiver.waitFor("/hook", jobIds.length);
    // A second settlement would send a second callback right after the first: give one the time to arrive.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const perJob = new Map<string, number>();
    for (const call of receiver.callsTo("/hook")) {
      const body = JSON.parse(call.rawBody) as { job_id: string };
      perJob.set(body.job_id, (perJob.get(body.job_id) ?? 0) + 1);
    }
    expect(Object.fromEntries(perJob)).toEqual(Object.fromEntries(jobIds.map((jobId) => [jobId, 1])));

    const { rows: ledger } = await db.query<{ job_id: string; reason: string; delta: number }>(
      "select job_id, reason, delta from credit_ledger where job_id = any($1) order by id",
      [jobIds],
    );
    const { rows: jobs } = await db.query<{ id: string; status: string; attempts: number }>(
      "select id, status, attempts from jobs where id = any($1)",
      [jobIds],
    );
    for (const job of jobs) {
      const entries = ledger.filter((entry) => entry.job_id === job.id).map((entry) => entry.reason);
      expect(entries, job.id).toEqual(job.status === "done" ? ["job_debit"] : ["job_debit", "job_refund"]);
    }
    // Each job ran once where it could: the large one twice (its first worker died), the others once.
    expect(jobs.find((job) => job.id === bigJob)?.attempts).toBe(2);
    // And no job is "done" in two workers' logs.
    for (const jobId of jobIds) {
      const doneLines = workers.flatMap((worker) =>
        worker.proc
          .output()
          .split("\n")
          .filter((line) => line.includes(jobId) && line.includes('"job done"')),
      );
      expect(doneLines.length, jobId).toBeLessThanOrEqual(1);
    }
  });

  it("the ledger adds up to the account's balance", async () => {
    const { rows } = await db.query<{ ledger: string; credits: number }>(
      `select (select coalesce(sum(delta), 0) from credit_ledger where user_id = $1) as ledger, credits
       from profiles where user_id = $1`,
      [userId],
    );
    expect(Number(rows[0]?.ledger)).toBe(rows[0]?.credits);
    const { rows: done } = await db.query<{ count: string }>("select count(*) from jobs where user_id = $1 and status = 'done'", [
      userId,
    ]);
    expect(rows[0]?.credits).toBe(40 - Number(done[0]?.count));
  });

  it("the images are in the bucket and no data directory holds an input, mask or result, nor a database", async () => {
    const keys = await gateway.keys();
    for (const jobId of jobIds) {
      const status = await waitForJob(api.url, key, jobId);
      if (status.status === "done")
        expect(
          keys.some((name) => name.startsWith(`results/${jobId}.`)),
          jobId,
        ).toBe(true);
    }
    for (const machine of machines.machines) {
      const files = await filesUnder(machine.dataDir);
      // The api's mail outbox (no SMTP here) is all a process keeps: no blobs, no PostgreSQL, no auth secret.
      const expected = machine === api ? files.filter((file) => /^outbox\/[^/]+\.eml$/.test(file)) : [];
      expect(files, machine.name).toEqual(expected);
      expect(files.some((file) => /^(blobs|postgres)(\/|$)/.test(file))).toBe(false);
      expect(await imageFilesUnder(machine.dataDir), machine.name).toEqual([]);
    }
  });
});

describe("separate machines without RETOUCH_AUTH_SECRET: the secret is the database's, not each data directory's", () => {
  let second: SeparateMachines;
  let secondDatabase: Awaited<ReturnType<typeof createTestDatabase>>;
  let secondApi: Machine;
  let secondWorker: Machine;

  beforeAll(async () => {
    // The first service's processes are gone: they would share this one's queue otherwise.
    await machines.stop();
    secondDatabase = await createTestDatabase();
    second = new SeparateMachines({
      databaseUrl: secondDatabase.url,
      gateway,
      authSecret: null,
      env: {
        RETOUCH_RESULT_URLS: "proxy",
        RETOUCH_QUEUE_POLL_INTERVAL: "500ms",
        RETOUCH_WEBHOOK_ALLOW_INSECURE: "1",
        RETOUCH_DEFAULT_PLAN: "pro",
      },
    });
    [secondApi, secondWorker] = await Promise.all([second.startApi(), second.startWorker("worker")]);
  }, 90_000);

  afterAll(async () => {
    await second?.stop();
    await secondDatabase?.drop();
  });

  it("the proxied result URL a worker signs for the webhook downloads from the api", async () => {
    const account = await signUp(secondApi.url);
    await verifyEmail(secondApi.url, path.join(secondApi.dataDir, "outbox"), account.email);
    const { key: secondKey } = await createKey(secondApi.url, account);
    const photo = await productPhoto({ width: 160, height: 120 });
    const submitted = await request(secondApi.url, "POST", "/api/process", {
      key: secondKey,
      body: { image: base64(photo), prompt: "make it sepia", format: "png", webhook_url: `${receiver.url}/proxied` },
    });
    expect(submitted.status, submitted.text).toBe(200);
    const [call] = await receiver.waitFor("/proxied", 1);
    const body = JSON.parse(call?.rawBody ?? "{}") as { status: string; result_url: string };
    expect(body.status).toBe("done");
    expect(body.result_url.startsWith(`${secondApi.url}/files/results/`), body.result_url).toBe(true);
    expect(secondWorker.proc.output()).toMatch(new RegExp(`"jobId":"${submitted.body.job_id}".*"job done"`));
    const download = await fetch(body.result_url);
    expect(download.status, await download.clone().text()).toBe(200);
    expect(
      Buffer.from(await download.arrayBuffer())
        .subarray(1, 4)
        .toString("latin1"),
    ).toBe("PNG");
    // And neither process wrote a secret (nor anything else but the api's outbox) to its data directory.
    expect(await filesUnder(secondWorker.dataDir)).toEqual([]);
    expect((await filesUnder(secondApi.dataDir)).every((file) => file.startsWith("outbox/"))).toBe(true);
  });
});
