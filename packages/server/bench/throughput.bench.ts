/**
 * `pnpm bench` (throughput part): Retouch as on separate machines, the built
 * server in separate processes (test/support/separate-machines.ts), one
 * PostgreSQL, and the S3 protocol on loopback (s3rver behind the verifying
 * gateway). It prints, in one run:
 *
 * 1. the store's cost per job, file vs S3: the median time of each store call
 *    a job makes (put input, get input, put result, result URL, delete inputs);
 * 2. the end-to-end latency of one job at a time (submission to settlement,
 *    the database's clock), file store (api and worker on one machine, one
 *    data directory) vs S3 store (separate data directories);
 * 3. jobs per second for a fixed batch of small edits with one and with two
 *    worker processes (S3 store), and what each job costs the database:
 *    statements (pg_stat_statements when it can be loaded), transactions and
 *    database time per job;
 * with the load average around each part. Figures, not assertions: the plan
 * in docs/scaling.md is written from them.
 *
 * Uses DATABASE_URL when set (pg_stat_statements only if already loaded there),
 * otherwise an embedded PostgreSQL in a temporary directory, restarted once
 * with pg_stat_statements preloaded.
 */
import { readdirSync, readFileSync } from "node:fs";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { type BlobStore, createLogger, FileBlobStore, openBlobStore, parseConfig, UrlSigner } from "@retouch/core";
import pg from "pg";
import { request } from "../../../test/support/http-client";
import { productPhoto } from "../../../test/support/images";
import { type S3Gateway, startS3Gateway } from "../../../test/support/s3-gateway";
import { SeparateMachines } from "../../../test/support/separate-machines";
import { ensureServerBuild } from "../scripts/build-if-stale.mjs";
import { type EmbeddedPostgres, startEmbeddedPostgres } from "../src/postgres/embedded-postgres";

const STORE_ROUNDS = Number(process.env.BENCH_STORE_ROUNDS ?? 40);
const LATENCY_JOBS = Number(process.env.BENCH_LATENCY_JOBS ?? 12);
const BATCH = Number(process.env.BENCH_THROUGHPUT_JOBS ?? 40);
const PROMPT = "make it sepia";
/** The bench's own connections, as pg_stat_activity names them. */
const BENCH_APPLICATION = "retouch-throughput-bench";
/** Clients submitting the batch at once, each with its own account. */
const CLIENTS = 8;

const median = (samples: number[]): number => {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};
const p90 = (samples: number[]): number => {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.9))] ?? Number.NaN;
};
const load = (): string =>
  os
    .loadavg()
    .map((value) => value.toFixed(2))
    .join(" ");
const row = (label: string, text: string): void => console.log(`${label.padEnd(46)} ${text}`);

async function timed<T>(samples: number[], work: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const result = await work();
  samples.push(performance.now() - started);
  return result;
}

/** The embedded cluster with pg_stat_statements preloaded (a restart after ALTER SYSTEM), or DATABASE_URL as it is. */
async function openDatabase(scratch: string): Promise<{ url: string; embedded: EmbeddedPostgres | undefined }> {
  if (process.env.DATABASE_URL) return { url: process.env.DATABASE_URL, embedded: undefined };
  const logger = createLogger("warn");
  const dataDir = path.join(scratch, "pg");
  let embedded = await startEmbeddedPostgres({ dataDir, logger });
  const client = new pg.Client({ connectionString: embedded.url });
  await client.connect();
  await client.query("alter system set shared_preload_libraries = 'pg_stat_statements'");
  await client.end();
  await embedded.stop();
  embedded = await startEmbeddedPostgres({ dataDir, logger });
  return { url: embedded.url, embedded };
}

/** The embedded cluster's postmaster (the first line of postmaster.pid), whose children are its backends. */
function postmasterPid(scratch: string): number | undefined {
  try {
    return Number(readFileSync(path.join(scratch, "pg", "postgres", "postmaster.pid"), "utf8").split("\n")[0]);
  } catch {
    return undefined;
  }
}

/**
 * CPU time (user + system, ms) of the postmaster and its children so far, from
 * /proc: this cluster's only, not the other PostgreSQL servers on the machine.
 * A backend that exits between two readings takes its time with it; the
 * services' pools keep theirs open.
 */
function postgresCpuMs(postmaster: number | undefined): number | undefined {
  if (!postmaster) return undefined;
  let ticks = 0;
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      // After the command: state is field 3, ppid field 4, utime and stime fields 14 and 15.
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(pid) !== postmaster && Number(fields[1]) !== postmaster) continue;
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // The process ended between the listing and the read.
    }
  }
  // Linux counts in clock ticks of 10 ms (USER_HZ 100).
  return ticks * 10;
}

/** The statements this bench sends itself (its polling, these readings), left out of the service's figures. */
const NOT_BENCH = "query not like '%pg_stat%' and query not like '%from jobs where user_id = any($1) and status <> $2%'";

/** Queries this bench sent (each its own transaction), subtracted from the database's transaction count. */
let benchQueries = 0;

/** CPU time (user + system, ms) of one process so far, from /proc. */
function processCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}

/** What the database did between two readings: statements (when counted), transactions, time inside statements. */
interface DatabaseWork {
  statements: number | undefined;
  statementMs: number | undefined;
  transactions: number;
}

async function databaseWork(client: pg.Pool, statements: boolean): Promise<DatabaseWork> {
  benchQueries++;
  const [database] = (
    await client.query<{ xacts: string }>(
      "select xact_commit + xact_rollback as xacts from pg_stat_database where datname = current_database()",
    )
  ).rows;
  // The reading's own queries are a handful; against a batch's thousands they are noise.
  const transactions = Number(database?.xacts) - benchQueries;
  if (!statements) return { statements: undefined, statementMs: undefined, transactions };
  benchQueries++;
  const [calls] = (
    await client.query<{ calls: string; ms: number }>(
      `select coalesce(sum(calls), 0) as calls, coalesce(sum(total_exec_time), 0) as ms
       from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())
         and ${NOT_BENCH}`,
    )
  ).rows;
  return { statements: Number(calls?.calls), statementMs: Number(calls?.ms), transactions };
}

/** A signed-up account on the pro plan with plenty of credits and an API key, made over HTTP and settled in SQL. */
async function benchAccount(apiUrl: string, db: pg.Pool): Promise<{ key: string; userId: string }> {
  const email = `bench-${Date.now()}-${Math.random().toString(16).slice(2, 8)}@example.com`;
  const signUp = await request(apiUrl, "POST", "/auth/sign-up/email", {
    body: { email, password: "bench password 123", name: "Bench" },
  });
  if (signUp.status !== 200) throw new Error(`sign-up answered ${signUp.status}: ${signUp.text}`);
  const userId = signUp.body.user.id as string;
  const cookie = (signUp.headers.getSetCookie().find((value) => value.includes(".session_token=")) ?? "").split(";")[0];
  await db.query(`update "user" set "emailVerified" = true where id = $1`, [userId]);
  await db.query("update profiles set plan = 'pro', credits = 100000 where user_id = $1", [userId]);
  const key = await request(apiUrl, "POST", "/api/keys", { cookie, body: { name: "bench" } });
  if (key.status !== 201) throw new Error(`key creation answered ${key.status}: ${key.text}`);
  return { key: key.body.key as string, userId };
}

async function submit(apiUrl: string, key: string, image: string): Promise<string> {
  const response = await request(apiUrl, "POST", "/api/process", { key, body: { image, prompt: PROMPT } });
  if (response.status !== 200) throw new Error(`submission answered ${response.status}: ${response.text}`);
  return response.body.job_id as string;
}

/** Resolves once none of the account's jobs is pending; the settled jobs' database timestamps. */
async function settled(
  db: pg.Pool,
  userIds: string[],
  count: number,
  timeoutMs = 300_000,
): Promise<Array<{ status: string; created_at: Date; finished_at: Date }>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    benchQueries++;
    const { rows } = await db.query<{ status: string; created_at: Date; finished_at: Date }>(
      "select status, created_at, finished_at from jobs where user_id = any($1) and status <> 'pending'",
      [userIds],
    );
    if (rows.length >= count) return rows;
    if (Date.now() > deadline) throw new Error(`${rows.length} of ${count} jobs settled in ${timeoutMs} ms`);
    // Not more often: these reads are the database's work too (left out of its statement figures, not of its CPU).
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** 1. The store calls of one job, timed one by one, STORE_ROUNDS times. */
async function storeCost(label: string, store: BlobStore, input: Buffer, result: Buffer, signer: UrlSigner): Promise<number> {
  const calls: Record<string, number[]> = {
    "put input": [],
    "get input": [],
    "put result": [],
    "result URL": [],
    "delete inputs": [],
  };
  const perJob: number[] = [];
  for (let round = 0; round < STORE_ROUNDS; round++) {
    const id = `job_bench${round}_${Date.now()}`;
    const started = performance.now();
    await timed(calls["put input"] as number[], () => store.put(`inputs/${id}`, input, { contentType: "image/jpeg" }));
    await timed(calls["get input"] as number[], () => store.get(`inputs/${id}`));
    await timed(calls["put result"] as number[], () => store.put(`results/${id}.jpeg`, result, { contentType: "image/jpeg" }));
    await timed(calls["result URL"] as number[], async () =>
      store.presignedUrl
        ? store.presignedUrl(`results/${id}.jpeg`, 3600)
        : signer.sign(`/files/results/${id}.jpeg`, new Date(Date.now() + 3_600_000)),
    );
    await timed(calls["delete inputs"] as number[], () => store.deleteMany([`inputs/${id}`]));
    perJob.push(performance.now() - started);
  }
  const parts = Object.entries(calls)
    .map(([name, samples]) => `${name} ${median(samples).toFixed(2)}`)
    .join(", ");
  row(`store cost per job, ${label}`, `${median(perJob).toFixed(2)} ms median (${parts} ms)`);
  return median(perJob);
}

async function main(): Promise<void> {
  ensureServerBuild({ quiet: true });
  const scratch = await mkdtemp(path.join(os.tmpdir(), "retouch-throughput-"));
  await chmod(scratch, 0o711); // the embedded database may run as the postgres user
  const { url: databaseUrl, embedded } = await openDatabase(scratch);
  const postmaster = embedded ? postmasterPid(scratch) : undefined;
  const gateway: S3Gateway = await startS3Gateway();
  const db = new pg.Pool({ connectionString: databaseUrl, max: 4, application_name: BENCH_APPLICATION });
  const stopAll: Array<() => Promise<void>> = [];
  try {
    const statements = await db
      .query("create extension if not exists pg_stat_statements")
      .then(() => db.query("select 1 from pg_stat_statements limit 1"))
      .then(
        () => true,
        () => false,
      );
    const input = await productPhoto({ width: 640, height: 480, format: "jpeg" });
    const image = input.toString("base64");
    console.log(
      `Retouch throughput benchmark: ${os.cpus().length} cores, Node ${process.version}, load ${load()}; ` +
        `a 640x480 JPEG (${(input.length / 1024).toFixed(0)} KB), "${PROMPT}"; S3 = s3rver behind the SigV4 gateway on loopback\n`,
    );

    // 1. The store's cost per job, in this process.
    // The AWS SDK's default credential chain, as an operator gives it (environment variables).
    process.env.AWS_ACCESS_KEY_ID = gateway.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = gateway.secretAccessKey;
    const s3Config = parseConfig({
      RETOUCH_DATA_DIR: path.join(scratch, "store"),
      RETOUCH_BLOB_STORE: "s3",
      RETOUCH_S3_BUCKET: gateway.bucket,
      RETOUCH_S3_ENDPOINT: gateway.endpoint,
      RETOUCH_S3_REGION: gateway.region,
      RETOUCH_S3_FORCE_PATH_STYLE: "1",
      RETOUCH_S3_PREFIX: "bench-store/",
    });
    const signer = new UrlSigner("bench-".padEnd(40, "s"));
    const fileCost = await storeCost("file", new FileBlobStore(path.join(scratch, "store", "blobs")), input, input, signer);
    const s3Cost = await storeCost("S3", await openBlobStore(s3Config), input, input, signer);
    row("", `S3 - file: ${(s3Cost - fileCost).toFixed(2)} ms per job (${STORE_ROUNDS} rounds, load ${load()})\n`);

    // 2. End-to-end latency, one job at a time.
    // LOG_LEVEL stays info: the processes' start lines are what the harness waits for.
    const common = {
      RETOUCH_WORKER_CONCURRENCY: "1",
      RETOUCH_WORKER_HEARTBEAT: "1s",
    };
    for (const store of ["file", "s3"] as const) {
      const machines =
        store === "file"
          ? new SeparateMachines({ databaseUrl, sharedDataDir: await mkdtemp(path.join(scratch, "one-machine-")), env: common })
          : new SeparateMachines({ databaseUrl, gateway, env: { ...common, RETOUCH_S3_PREFIX: "bench-latency/" } });
      stopAll.push(() => machines.stop());
      const [api] = await Promise.all([machines.startApi(), machines.startWorker("worker")]);
      const account = await benchAccount(api.url, db);
      const client: number[] = [];
      for (let i = 0; i < LATENCY_JOBS + 2; i++) {
        await timed(client, async () => {
          await submit(api.url, account.key, image);
          await settled(db, [account.userId], i + 1);
        });
      }
      const jobs = (await settled(db, [account.userId], LATENCY_JOBS + 2)).sort(
        (a, b) => a.created_at.getTime() - b.created_at.getTime(),
      );
      // The first two warm the worker (its engine threads, the SDK's connections): not counted.
      const server = jobs.slice(2).map((job) => job.finished_at.getTime() - job.created_at.getTime());
      row(
        `one job at a time, ${store === "file" ? "file (one machine)" : "S3 (separate machines)"}`,
        `submitted -> settled ${median(server).toFixed(0)} ms median, p90 ${p90(server).toFixed(0)} ms (database clock); ` +
          `client round trip ${median(client.slice(2)).toFixed(0)} ms; ${LATENCY_JOBS} jobs, load ${load()}`,
      );
      await machines.stop();
    }
    console.log("");

    // 3. Throughput of a batch with one and two worker processes, and the database's share.
    for (const workerCount of [1, 2]) {
      const machines = new SeparateMachines({
        databaseUrl,
        gateway,
        env: { ...common, RETOUCH_S3_PREFIX: `bench-${workerCount}w/` },
      });
      stopAll.push(() => machines.stop());
      const [api] = await Promise.all([
        machines.startApi(),
        ...Array.from({ length: workerCount }, (_, i) => machines.startWorker(`worker-${i + 1}`)),
      ]);
      // One account per client: one account's submissions queue behind each other on its row lock (its
      // plan's limits are checked in the submission's transaction), which is not what many customers do.
      const accounts = await Promise.all(Array.from({ length: CLIENTS }, () => benchAccount(api.url, db)));
      const userIds = accounts.map((account) => account.userId);
      // Two warm-up jobs per worker, then the statistics start.
      await Promise.all(
        Array.from({ length: 2 * workerCount }, (_, i) => submit(api.url, accounts[i % CLIENTS]?.key ?? "", image)),
      );
      await settled(db, userIds, 2 * workerCount);
      const loadBefore = load();
      if (statements) await db.query("select pg_stat_statements_reset()");
      const before = await databaseWork(db, statements);
      const cpuBefore = postgresCpuMs(postmaster);
      const processesBefore = machines.machines.map((machine) => processCpuMs(machine.pid));
      const benchBefore = process.cpuUsage();
      const started = performance.now();
      let next = 0;
      await Promise.all(
        accounts.map(async (account) => {
          while (next < BATCH) {
            next++;
            await submit(api.url, account.key, image);
          }
        }),
      );
      const jobs = (await settled(db, userIds, 2 * workerCount + BATCH)).sort(
        (a, b) => a.created_at.getTime() - b.created_at.getTime(),
      );
      const processMs = machines.machines.map((machine, i) => processCpuMs(machine.pid) - (processesBefore[i] ?? 0));
      const benchUsage = process.cpuUsage(benchBefore);
      const benchMs = (benchUsage.user + benchUsage.system) / 1000;
      const cpuMs = postmaster ? (postgresCpuMs(postmaster) ?? 0) - (cpuBefore ?? 0) : undefined;
      const wallMs = performance.now() - started;
      const after = await databaseWork(db, statements);
      const batch = jobs.slice(2 * workerCount);
      const failed = batch.filter((job) => job.status !== "done").length;
      const spanMs =
        Math.max(...batch.map((job) => job.finished_at.getTime())) - Math.min(...batch.map((job) => job.created_at.getTime()));
      const perJob = (value: number | undefined, other: number | undefined) =>
        value === undefined || other === undefined ? "n/a" : ((value - other) / BATCH).toFixed(1);
      row(
        `${workerCount} worker process${workerCount > 1 ? "es" : ""} (concurrency 1 each), S3`,
        `${((BATCH / spanMs) * 1000).toFixed(2)} jobs/s (${BATCH} jobs in ${(spanMs / 1000).toFixed(1)} s, database clock; ` +
          `${(wallMs / 1000).toFixed(1)} s client wall${failed ? `, ${failed} failed` : ""}); load ${loadBefore} -> ${load()}`,
      );
      row(
        "  database per job",
        `${perJob(after.statements, before.statements)} statements, ${perJob(after.transactions, before.transactions)} transactions, ` +
          `${perJob(after.statementMs, before.statementMs)} ms inside statements (waits included), ` +
          `${cpuMs === undefined ? "n/a" : (cpuMs / BATCH).toFixed(1)} ms of PostgreSQL CPU (all processes: api, workers, queue polling)`,
      );
      row(
        "  CPU per job",
        machines.machines.map((machine, i) => `${machine.name} ${((processMs[i] ?? 0) / BATCH).toFixed(1)} ms`).join(", ") +
          `, this bench's process ${(benchMs / BATCH).toFixed(1)} ms (the clients, the S3 gateway and s3rver)`,
      );
      const { rows: connections } = await db.query<{ count: string }>(
        "select count(*) from pg_stat_activity where datname = current_database() and application_name <> $1",
        [BENCH_APPLICATION],
      );
      row("  connections open at the end", `${connections[0]?.count} (api + ${workerCount} worker${workerCount > 1 ? "s" : ""})`);
      if (statements) {
        const { rows: top } = await db.query<{ query: string; calls: string; ms: number }>(
          `select left(regexp_replace(query, '\\s+', ' ', 'g'), 90) as query, calls, total_exec_time as ms
           from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())
             and ${NOT_BENCH}
           order by total_exec_time desc limit 8`,
        );
        for (const statement of top)
          row(
            "",
            `${(Number(statement.calls) / BATCH).toFixed(1).padStart(5)}/job ${(statement.ms / BATCH).toFixed(2).padStart(6)} ms/job  ${statement.query}`,
          );
      }
      await machines.stop();
    }
    console.log(`\nload average at the end: ${load()}`);
  } finally {
    for (const stop of stopAll) await stop().catch(() => {});
    await db.end();
    await gateway.close();
    await embedded?.stop();
    await rm(scratch, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
