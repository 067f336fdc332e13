/**
 * `pnpm bench` (jobs part): how fast submissions are accepted, next to the raw
 * cost of the same insert-and-debit transaction, and how fast a worker picks
 * a job up. Figures are printed; nothing here asserts on time.
 *
 * Uses DATABASE_URL when set, otherwise an embedded PostgreSQL in a temporary directory.
 */
import { readdirSync, readFileSync } from "node:fs";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createLogger, newId, PROCESS_IMAGE, parseConfig, QUEUE_CHANNEL, type Services } from "@retouch/core";
import pg from "pg";
import sharp from "sharp";
import { startRetouch } from "../src/app";
import { startEmbeddedPostgres } from "../src/postgres/embedded-postgres";

const SUBMISSIONS = Number(process.env.BENCH_SUBMISSIONS ?? 2000);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 16);
const PICKUPS = Number(process.env.BENCH_PICKUPS ?? 100);
const PER_ACCOUNT = 40; // under the pro plan's 120/min and 50 in flight

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

function summary(label: string, samples: number[], wallMs: number): { rate: number; p50: number; p99: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  const result = { rate: (samples.length / wallMs) * 1000, p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
  console.log(
    `${label.padEnd(44)} ${result.rate.toFixed(0).padStart(6)} /s   p50 ${result.p50.toFixed(2).padStart(7)} ms   p99 ${result.p99.toFixed(2).padStart(7)} ms`,
  );
  return result;
}

/** CPU time so far of this process and of every PostgreSQL process on the machine (Linux /proc), in ms. */
function sampleCpu(): { node: number; postgres: number } {
  const usage = process.cpuUsage();
  let postgresTicks = 0;
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      if (!stat.includes("(postgres)")) continue;
      // Fields after the command: state is field 3; utime and stime are fields 14 and 15.
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      postgresTicks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // The process ended between the listing and the read.
    }
  }
  // Linux counts in clock ticks of 10 ms (USER_HZ 100).
  return { node: (usage.user + usage.system) / 1000, postgres: postgresTicks * 10 };
}

function cpuPerOperation(before: { node: number; postgres: number }, operations: number): { node: number; postgres: number } {
  const after = sampleCpu();
  return { node: (after.node - before.node) / operations, postgres: (after.postgres - before.postgres) / operations };
}

async function runConcurrently(
  count: number,
  clients: number,
  task: (index: number) => Promise<void>,
): Promise<{ samples: number[]; wallMs: number }> {
  const samples: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      for (let index = next++; index < count; index = next++) {
        const t0 = performance.now();
        await task(index);
        samples.push(performance.now() - t0);
      }
    }),
  );
  return { samples, wallMs: performance.now() - started };
}

async function makeAccounts(services: Services, count: number): Promise<Array<{ userId: string; key: string }>> {
  const accounts: Array<{ userId: string; key: string }> = [];
  for (let i = 0; i < count; i++) {
    const session = await services.accounts.signUp(
      { email: `bench-${i}-${newId("usr")}@example.com`, password: "bench password", name: "Bench" },
      { headers: new Headers(), ip: `10.9.${Math.floor(i / 250)}.${i % 250}` },
    );
    await services.stores.users.markEmailVerified(session.user.id);
    await services.profiles.setPlan(session.user.id, "pro");
    await services.profiles.grantCredits(session.user.id, 1000);
    const principal = {
      userId: session.user.id,
      email: session.user.email,
      name: "Bench",
      emailVerified: true,
      via: "session" as const,
    };
    accounts.push({ userId: session.user.id, key: (await services.apiKeys.create(principal, "bench")).key });
  }
  return accounts;
}

async function main(): Promise<void> {
  const logger = createLogger("warn");
  const scratch = await mkdtemp(path.join(os.tmpdir(), "retouch-bench-"));
  await chmod(scratch, 0o711); // the embedded database may run as the postgres user
  const embedded = process.env.DATABASE_URL
    ? undefined
    : await startEmbeddedPostgres({ dataDir: path.join(scratch, "pg"), logger });
  const databaseUrl = process.env.DATABASE_URL ?? (embedded?.url as string);
  const image = (
    await sharp({ create: { width: 64, height: 64, channels: 3, background: "#c0392b" } })
      .png()
      .toBuffer()
  ).toString("base64");
  console.log(
    `Retouch jobs benchmark: ${os.cpus().length} cores, Node ${process.version}, ${SUBMISSIONS} submissions of a 64x64 PNG, ${CLIENTS} clients\n`,
  );

  // 1. Accepted submissions over HTTP (API role: nothing competes for the CPU).
  const config = parseConfig({
    PORT: "0",
    RETOUCH_DATA_DIR: path.join(scratch, "api"),
    DATABASE_URL: databaseUrl,
    RETOUCH_SIGNUP_RATE_LIMIT: "100000/1h",
  });
  const api = await startRetouch({ config, logger, role: "api" });
  const accounts = await makeAccounts(api.services, Math.ceil(SUBMISSIONS / PER_ACCOUNT));
  const url = `${api.http?.url}/api/process`;
  const body = JSON.stringify({ image, prompt: "make it black and white" });
  const cpuBefore = sampleCpu();
  const http = await runConcurrently(SUBMISSIONS, CLIENTS, async (index) => {
    const account = accounts[Math.floor(index / PER_ACCOUNT)] as { key: string };
    const response = await fetch(url, {
      method: "POST",
      headers: { authorization: `Bearer ${account.key}`, "content-type": "application/json" },
      body,
    });
    if (response.status !== 200) throw new Error(`submission answered ${response.status}: ${await response.text()}`);
  });
  const viaHttp = summary("POST /api/process (HTTP, validation, blobs)", http.samples, http.wallMs);
  const httpCpu = cpuPerOperation(cpuBefore, SUBMISSIONS);

  // 2. The floor: the same submission transaction (with its queue entry and NOTIFY), sent
  //    straight to PostgreSQL by the same store call the service makes (one `retouch_submit`
  //    round trip), with no HTTP, authentication, validation or blob around it.
  const jobs = api.services.stores.jobs;
  const floorBefore = sampleCpu();
  const raw = await runConcurrently(SUBMISSIONS, CLIENTS, async (index) => {
    const account = accounts[Math.floor(index / PER_ACCOUNT)] as { userId: string };
    const jobId = newId("job");
    const outcome = await jobs.submit({
      userId: account.userId,
      now: Date.now(),
      windowMs: 60_000,
      // The floor's own limits, never reached: it measures the transaction, not a refusal.
      plans: { pro: { perMinute: 1_000_000, concurrent: 1_000_000 } },
      queue: { jobName: PROCESS_IMAGE, channel: QUEUE_CHANNEL },
      jobs: [
        {
          id: jobId,
          batchId: null,
          batchIndex: null,
          status: "pending",
          workflow: "generative_edit",
          prompt: "make it black and white",
          negativePrompt: null,
          detect: null,
          outputFormat: "jpeg",
          quality: null,
          webhookUrl: null,
          inputBlob: `inputs/${jobId}`,
          maskBlob: null,
          inputWidth: 64,
          inputHeight: 64,
          rejection: null,
        },
      ],
      response: { job_id: jobId },
    });
    if (outcome.state !== "accepted") throw new Error(`direct submission ${outcome.state}`);
  });
  const direct = summary("same transaction, direct to PostgreSQL", raw.samples, raw.wallMs);
  const floorCpu = cpuPerOperation(floorBefore, SUBMISSIONS);
  await api.close();
  console.log(
    `${"ratio (HTTP / direct)".padEnd(44)} ${(direct.rate / viaHttp.rate).toFixed(2).padStart(6)}x slower, p50 x${(viaHttp.p50 / direct.p50).toFixed(2)}`,
  );
  console.log(
    `${"CPU per submission, HTTP path".padEnd(44)} Node ${httpCpu.node.toFixed(2)} ms (server and client in this process), PostgreSQL ${httpCpu.postgres.toFixed(2)} ms`,
  );
  console.log(
    `${"CPU per submission, direct".padEnd(44)} Node ${floorCpu.node.toFixed(2)} ms, PostgreSQL ${floorCpu.postgres.toFixed(2)} ms`,
  );
  console.log(`${"load average (1 min) after".padEnd(44)} ${os.loadavg()[0]?.toFixed(2)}\n`);
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  // Clear the benchmark's backlog so the pickup figures measure an idle worker.
  await pool.query("update jobs set status = 'error' where status = 'pending'");
  await pool.query("delete from agenda_jobs where name = 'process-image'");
  await pool.end();

  // 3. Pickup latency: submit one job at a time to an idle worker (all role) and read
  //    started_at - created_at, both stamped by the database clock.
  const workerConfig = parseConfig({
    PORT: "0",
    RETOUCH_DATA_DIR: path.join(scratch, "all"),
    DATABASE_URL: databaseUrl,
    RETOUCH_WORKER_CONCURRENCY: "1",
    // A model download at start would compete with the jobs measured here.
    RETOUCH_MODEL_DOWNLOAD: "off",
  });
  const all = await startRetouch({ config: workerConfig, logger, role: "all" });
  const [account] = await makeAccounts(all.services, 1);
  if (!account) throw new Error("no account");
  const pickups: number[] = [];
  for (let i = 0; i < PICKUPS; i++) {
    const response = await fetch(`${all.http?.url}/api/process`, {
      method: "POST",
      headers: { authorization: `Bearer ${account.key}`, "content-type": "application/json" },
      body,
    });
    if (response.status !== 200) throw new Error(`submission answered ${response.status}: ${await response.text()}`);
    const { job_id: jobId } = (await response.json()) as { job_id: string };
    for (;;) {
      const job = await all.services.stores.jobs.find(jobId);
      if (job?.status !== "pending" && job?.started_at && job.created_at) {
        pickups.push(job.started_at.getTime() - job.created_at.getTime());
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }
  const sorted = pickups.sort((a, b) => a - b);
  console.log(
    `${"pickup latency (submit -> processing start)".padEnd(44)}          p50 ${percentile(sorted, 50).toFixed(0).padStart(7)} ms   p99 ${percentile(sorted, 99).toFixed(0).padStart(7)} ms   (${PICKUPS} jobs, LISTEN/NOTIFY)`,
  );
  await all.close();
  await embedded?.stop();
  await rm(scratch, { recursive: true, force: true });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
