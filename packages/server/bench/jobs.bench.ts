/**
 * `pnpm bench` (jobs part): how fast submissions are accepted, next to the raw
 * cost of the same insert-and-debit transaction, and how fast a worker picks
 * a job up. Figures are printed; nothing here asserts on time.
 *
 * Uses DATABASE_URL when set, otherwise an embedded PostgreSQL in a temporary directory.
 */
import { chmod, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createLogger, newId, parseConfig, type Services } from "@retouch/core";
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
  await api.close();

  // 2. The same transaction, straight to PostgreSQL: lock the profile, count in-flight jobs,
  //    count the last minute's submissions, debit with a ledger row, insert the job.
  const pool = new pg.Pool({ connectionString: databaseUrl, max: CLIENTS });
  const raw = await runConcurrently(SUBMISSIONS, CLIENTS, async (index) => {
    const account = accounts[Math.floor(index / PER_ACCOUNT)] as { userId: string };
    const client = await pool.connect();
    try {
      await client.query("begin");
      await client.query("select plan, credits from profiles where user_id = $1 for update", [account.userId]);
      await client.query("select count(*) from jobs where user_id = $1 and status = 'pending'", [account.userId]);
      // The sliding-log statement of RateLimitsStore.hit, with the plan's limit never reached.
      const now = Date.now();
      await client.query(
        `insert into rate_limit_events as r (key, hits) values ($1, array_fill($2::bigint, array[1]))
         on conflict (key) do update set hits = array(select h from unnest(r.hits) h where h > $3) || excluded.hits
         where (select count(*) from unnest(r.hits) h where h > $3) + 1 <= $4
         returning key`,
        [`raw:${account.userId}`, now, now - 60_000, 1_000_000],
      );
      const jobId = newId("job");
      const { rows } = await client.query<{ credits: number }>(
        "update profiles set credits = credits - 1 where user_id = $1 and credits >= 1 returning credits",
        [account.userId],
      );
      await client.query(
        "insert into credit_ledger (user_id, delta, balance_after, reason, job_id) values ($1, -1, $2, 'job_debit', $3)",
        [account.userId, rows[0]?.credits, jobId],
      );
      await client.query(
        "insert into jobs (id, user_id, status, workflow, prompt, output_format, input_blob, credits_used) values ($1, $2, 'pending', 'generative_edit', 'x', 'jpeg', $3, 1)",
        [jobId, account.userId, `inputs/${jobId}`],
      );
      await client.query("commit");
    } catch (error) {
      await client.query("rollback");
      throw error;
    } finally {
      client.release();
    }
  });
  const direct = summary("same transaction, direct to PostgreSQL", raw.samples, raw.wallMs);
  console.log(
    `${"ratio (HTTP / direct)".padEnd(44)} ${(direct.rate / viaHttp.rate).toFixed(2).padStart(6)}x slower, p50 x${(viaHttp.p50 / direct.p50).toFixed(2)}\n`,
  );
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
