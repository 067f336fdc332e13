/**
 * `pnpm soak`: a bounded load-and-fault run on loopback. The built service
 * runs as `pnpm start` runs it (a child process of run-built.mjs, its own data
 * directory and embedded PostgreSQL, mail to the outbox); a few customers
 * submit edits of a real photograph, poll them and read their account the
 * whole time, while phase after phase an attack runs beside them: idle
 * announcers, slow bodies, a connection flood, and a SIGKILL of the service
 * with a restart. Each phase prints the customers' latency (p50, p99) and
 * their answers by status; at the end the ledger and every job's settlement
 * are checked in PostgreSQL, and the run exits 1 when one does not hold.
 * Latency is measured, never asserted: on a shared machine it says how the
 * service degrades, not whether it is fast.
 *
 * Customers connect from 127.0.0.1, attackers from 127.0.0.2 (and on, with
 * --attacker-addresses), so per-address limits can tell them apart. Every
 * loop is bounded in count and time; the child, its database and every
 * socket are gone on any exit, Ctrl-C included. `pnpm soak --help` lists the
 * settings; docs/soak.md says what the figures mean.
 */
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import pg from "pg";
import { freePort } from "../../../test/support/free-port";
import { request } from "../../../test/support/http-client";
import { verificationLinkFor } from "../../../test/support/outbox";
import { type RetouchProcess, spawnServerEntry } from "../../../test/support/spawn-retouch";
import { WebhookReceiver } from "../../../test/support/webhook-receiver";
import {
  type AttackTarget,
  connectionFlood,
  emptyAttackStats,
  idleAnnouncers,
  type RunningAttack,
  slowBodies,
} from "./soak-attacks.bench";
import { checkSettlement, type ReceivedWebhook, unsettledCounts } from "./soak-settlement.bench";

// ---------------------------------------------------------------------------
// Settings: every size and duration is a flag, or SOAK_<NAME> in the environment.

const SETTINGS = {
  "phase-seconds": { default: 15, help: "length of each phase" },
  phases: { default: "baseline,announcers,slow-bodies,flood,kill", help: "phases to run, in order" },
  customers: { default: 4, help: "customer accounts, one client loop each" },
  "poll-ms": { default: 500, help: "a customer polls a pending job this often" },
  "request-timeout-ms": { default: 15_000, help: "a customer gives up on one request after this" },
  "job-deadline-seconds": { default: 60, help: "a customer stops waiting for one job after this" },
  credits: { default: 2000, help: "credits granted to each customer (on the pro plan)" },
  announcers: { default: 300, help: "idle announcers: sockets that announce a body and send nothing" },
  "announce-bytes": { default: 1_048_576, help: "the Content-Length they announce" },
  "announce-path": { default: "/auth/sign-in/email", help: "the public route they announce it on" },
  "slow-bodies": { default: 200, help: "sockets trickling a body" },
  "slow-headers": { default: 50, help: "sockets trickling their headers (slowloris), in the same phase" },
  "slow-body-bytes": { default: 16_384, help: "the body the slow sockets announce" },
  "slow-bytes-per-second": { default: 4, help: "how fast each slow socket sends" },
  flood: { default: 3000, help: "idle connections of the flood" },
  "flood-parallel": { default: 256, help: "connections the flood opens at once" },
  "reopen-factor": { default: 5, help: "an attack opens at most this many times its sockets in a phase" },
  "attacker-addresses": { default: 1, help: "attackers' source addresses: 127.0.0.2 and on" },
  "kill-at-seconds": { default: 4, help: "into the kill phase, the service gets SIGKILL" },
  "restart-delay-ms": { default: 500, help: "the pause before it is started again" },
  "service-open-files": {
    default: 0,
    help: "the service's open-file limit (ulimit -n), to flood it past its file descriptors; 0: the soak's own",
  },
  "settle-seconds": {
    default: 1,
    help: "after an attack stops, the phase goes on this long (its teardown's answers and log lines count in it)",
  },
  "drain-seconds": { default: 90, help: "after the phases, the wait for every job and webhook to settle" },
  prompt: { default: "make it black and white", help: "the customers' edit" },
  photo: { default: "cat.jpg", help: "the photograph, from packages/engine/test/fixtures" },
} as const;

type SettingName = keyof typeof SETTINGS;
type Settings = { [K in SettingName]: (typeof SETTINGS)[K]["default"] extends number ? number : string };

function readSettings(): Settings & { keep: boolean } {
  const options = Object.fromEntries(Object.keys(SETTINGS).map((name) => [name, { type: "string" as const }]));
  const { values } = parseArgs({
    args: process.argv.slice(2).filter((arg) => arg !== "--"),
    options: { ...options, keep: { type: "boolean" }, help: { type: "boolean", short: "h" } },
  });
  if (values.help) {
    process.stdout.write("Usage: pnpm soak [--<setting> <value>]... [--keep]\n\n");
    for (const [name, setting] of Object.entries(SETTINGS))
      process.stdout.write(`  --${name.padEnd(22)} ${setting.help} (${setting.default}; or SOAK_${envName(name)})\n`);
    process.stdout.write(`  --${"keep".padEnd(22)} keep the data directory and the service's log\n`);
    process.stdout.write("\nRETOUCH_* and LOG_LEVEL in the environment are passed to the service; DATABASE_URL too.\n");
    process.exit(0);
  }
  const settings: Record<string, number | string> = {};
  for (const [name, setting] of Object.entries(SETTINGS)) {
    const raw = (values as Record<string, unknown>)[name] ?? process.env[`SOAK_${envName(name)}`];
    if (raw === undefined) settings[name] = setting.default;
    else if (typeof setting.default === "number") {
      const value = Number(raw);
      if (!Number.isFinite(value) || value < 0) throw new Error(`--${name} needs a number, not "${String(raw)}"`);
      settings[name] = value;
    } else settings[name] = String(raw);
  }
  return { ...(settings as Settings), keep: Boolean(values.keep) };
}

function envName(name: string): string {
  return name.toUpperCase().replaceAll("-", "_");
}

// ---------------------------------------------------------------------------
// Measurements.

type Kind = "submit" | "poll" | "account";
/** An HTTP status, or how the request failed without one (ECONNREFUSED, timeout...). */
type Outcome = string;

interface Sample {
  phase: string;
  kind: Kind;
  ms: number;
  outcome: Outcome;
}

interface JobRecord {
  phase: string;
  jobId: string;
  /** The first try of its submission. */
  firstTryAt: number;
  /** From the first try to the 200 that accepted it (retries included). */
  acceptedMs?: number;
  /** From that 200 to the poll that saw it done or failed. */
  settledMs?: number;
  status?: string;
  /** Tries of its submission (more than one: the customer retried with the same Idempotency-Key). */
  tries: number;
}

interface PhaseRecord {
  name: string;
  startedAt: number;
  endedAt: number;
  loadBefore: number[];
  loadAfter: number[];
  attack?: RunningAttack;
  notes: string[];
}

const samples: Sample[] = [];
const jobs: JobRecord[] = [];
const logLevels = new Map<string, { warn: number; error: number; messages: Map<string, number> }>();
let currentPhase = "setup";

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

function countBy<T>(items: T[], key: (item: T) => string): string {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(key(item), (counts.get(key(item)) ?? 0) + 1);
  return [...counts]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, count]) => `${name}×${count}`)
    .join(" ");
}

function latencyLine(label: string, list: number[]): string {
  const sorted = [...list].sort((a, b) => a - b);
  if (sorted.length === 0) return `${label.padEnd(9)} -`;
  return `${label.padEnd(9)} n=${String(sorted.length).padEnd(5)} p50 ${percentile(sorted, 50).toFixed(1).padStart(7)} ms  p99 ${percentile(sorted, 99).toFixed(1).padStart(8)} ms`;
}

// ---------------------------------------------------------------------------
// The service, as `pnpm start` runs it.

interface Service {
  baseUrl: string;
  port: number;
  dataDir: string;
  env: Record<string, string>;
  /** RLIMIT_NOFILE of the service's process; undefined: inherited. */
  openFiles: number | undefined;
  proc: RetouchProcess | undefined;
  log: string[];
}

/** The service's JSON log lines, counted by level for the phase they came in. */
function watchLog(service: Service, proc: RetouchProcess): void {
  let partial = "";
  proc.child.stdout?.on("data", (chunk: Buffer) => {
    const lines = (partial + chunk.toString("utf8")).split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines) {
      service.log.push(line);
      let entry: { level?: number; msg?: string };
      try {
        entry = JSON.parse(line) as { level?: number; msg?: string };
      } catch {
        continue;
      }
      if ((entry.level ?? 0) < 40) continue;
      const counts = logLevels.get(currentPhase) ?? { warn: 0, error: 0, messages: new Map() };
      logLevels.set(currentPhase, counts);
      const level = (entry.level ?? 0) >= 50 ? "error" : "warn";
      counts[level]++;
      const message = `${level}: ${entry.msg ?? "?"}`;
      counts.messages.set(message, (counts.messages.get(message) ?? 0) + 1);
    }
  });
  proc.child.stderr?.on("data", (chunk: Buffer) => service.log.push(chunk.toString("utf8")));
}

async function startService(service: Service): Promise<number> {
  const started = performance.now();
  const proc = spawnServerEntry(
    "scripts/run-built.mjs",
    ["main"],
    service.env,
    service.openFiles === undefined ? {} : { openFiles: service.openFiles },
  );
  service.proc = proc;
  watchLog(service, proc);
  // The first start may build the server and the dashboard, and initialise the database.
  await proc.waitForLog(/Retouch is listening/, 180_000);
  return performance.now() - started;
}

async function stopService(service: Service): Promise<void> {
  const proc = service.proc;
  if (!proc || proc.child.exitCode !== null || proc.child.signalCode !== null) return;
  proc.child.kill("SIGTERM");
  const exited = await Promise.race([proc.exited, sleep(30_000).then(() => "timeout" as const)]);
  if (exited === "timeout") proc.child.kill("SIGKILL");
}

async function runAdminCommand(service: Service, args: string[]): Promise<string> {
  const proc = spawnServerEntry("scripts/run-built.mjs", ["admin", "admin", ...args], service.env);
  const code = await proc.exited;
  if (code !== 0) throw new Error(`pnpm retouch admin ${args.join(" ")} failed (${code}):\n${proc.output()}`);
  return proc.output().trim();
}

/** The database the service uses: DATABASE_URL, or the embedded one its data directory describes. */
async function databaseUrl(service: Service): Promise<string> {
  if (service.env.DATABASE_URL) return service.env.DATABASE_URL;
  const state = JSON.parse(await readFile(path.join(service.dataDir, "postgres.json"), "utf8")) as {
    password: string;
    port: number;
  };
  return `postgres://postgres:${state.password}@127.0.0.1:${state.port}/retouch`;
}

/** The embedded postmaster, when one is left (the service was killed): it must not outlive the soak. */
function killLeftoverPostmaster(dataDir: string): void {
  try {
    const pid = Number(readFileSync(path.join(dataDir, "postgres", "postmaster.pid"), "utf8").split("\n")[0]);
    // Only the postmaster of this cluster: a stale file's pid may belong to another process by now.
    if (pid > 0 && readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(dataDir)) process.kill(pid, "SIGKILL");
  } catch {
    // No postmaster.pid, or it is gone already.
  }
}

// ---------------------------------------------------------------------------
// Customers: what a well-behaved client does, with retries a real client makes.

interface Customer {
  email: string;
  key: string;
  userId: string;
}

interface TimedResponse {
  outcome: Outcome;
  status?: number;
  body?: Record<string, unknown>;
  retryAfterSeconds?: number;
}

async function timedRequest(
  baseUrl: string,
  kind: Kind,
  init: { method: string; path: string; key: string; body?: string; headers?: Record<string, string> },
  timeoutMs: number,
): Promise<TimedResponse> {
  const phase = currentPhase;
  const started = performance.now();
  let result: TimedResponse;
  try {
    const response = await fetch(`${baseUrl}${init.path}`, {
      method: init.method,
      headers: { authorization: `Bearer ${init.key}`, ...init.headers },
      body: init.body,
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.text();
    let body: Record<string, unknown> | undefined;
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      body = undefined;
    }
    const retryAfter = Number(response.headers.get("retry-after"));
    result = {
      outcome: String(response.status),
      status: response.status,
      body,
      ...(Number.isFinite(retryAfter) && retryAfter > 0 ? { retryAfterSeconds: retryAfter } : {}),
    };
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause;
    result = { outcome: cause?.code ?? (error instanceof Error ? error.name : "error") };
  }
  samples.push({ phase, kind, ms: performance.now() - started, outcome: result.outcome });
  return result;
}

/** Waits before a retry: the service's Retry-After when it gave one (capped), else a growing backoff. */
function retryDelayMs(response: TimedResponse, attempt: number): number {
  if (response.retryAfterSeconds !== undefined) return Math.min(5_000, response.retryAfterSeconds * 1000);
  return Math.min(2_000, 100 * 2 ** attempt);
}

const RETRYABLE = new Set([408, 425, 429, 500, 502, 503, 504]);

async function customerLoop(
  baseUrl: string,
  customer: Customer,
  index: number,
  image: string,
  webhookUrl: string,
  settings: Settings,
  stopping: () => boolean,
): Promise<void> {
  const timeout = settings["request-timeout-ms"];
  while (!stopping()) {
    // Submit, retrying with the same Idempotency-Key until the service answers (the retry is free when the first landed).
    const idempotencyKey = randomUUID();
    const body = JSON.stringify({ prompt: settings.prompt, image, webhook_url: `${webhookUrl}/customer-${index}` });
    const deadline = Date.now() + settings["job-deadline-seconds"] * 1000;
    const record: JobRecord = { phase: currentPhase, jobId: "", firstTryAt: performance.now(), tries: 0 };
    for (let attempt = 0; Date.now() < deadline; attempt++) {
      record.tries++;
      const response = await timedRequest(
        baseUrl,
        "submit",
        {
          method: "POST",
          path: "/api/process",
          key: customer.key,
          body,
          headers: { "content-type": "application/json", "idempotency-key": idempotencyKey },
        },
        timeout,
      );
      if (response.status === 200 && typeof response.body?.job_id === "string") {
        record.jobId = response.body.job_id;
        record.acceptedMs = performance.now() - record.firstTryAt;
        break;
      }
      // A refusal that a retry cannot change (400, 402, 422...): this job is given up, the loop goes on.
      if (response.status !== undefined && !RETRYABLE.has(response.status)) break;
      await sleep(retryDelayMs(response, attempt));
    }
    if (record.jobId) {
      jobs.push(record);
      // Poll until the job settles (or the customer's patience runs out).
      while (Date.now() < deadline) {
        await sleep(settings["poll-ms"]);
        const response = await timedRequest(
          baseUrl,
          "poll",
          { method: "GET", path: `/api/process/status?job_id=${record.jobId}`, key: customer.key },
          timeout,
        );
        const status = response.body?.status;
        if (response.status === 200 && (status === "done" || status === "error")) {
          record.status = status;
          record.settledMs = performance.now() - record.firstTryAt - (record.acceptedMs ?? 0);
          break;
        }
        if (response.status !== 200 && response.status !== undefined && !RETRYABLE.has(response.status)) break;
      }
    }
    await timedRequest(baseUrl, "account", { method: "GET", path: "/api/account", key: customer.key }, timeout);
  }
}

async function setUpCustomer(service: Service, index: number, credits: number): Promise<Customer> {
  const email = `soak-${index}-${randomUUID().slice(0, 8)}@example.com`;
  const password = `soak password ${randomUUID()}`;
  const signUp = await request(service.baseUrl, "POST", "/auth/sign-up/email", {
    body: { email, password, name: `Soak customer ${index}` },
  });
  if (signUp.status !== 200) throw new Error(`sign-up of ${email} answered ${signUp.status}: ${signUp.text}`);
  const cookie = signUp.headers
    .getSetCookie()
    .find((value) => value.includes(".session_token="))
    ?.split(";")[0];
  if (!cookie) throw new Error("sign-up set no session cookie");
  // Verified through the emailed link, as a person does; credits and plan through the operator's commands.
  const link = new URL(await verificationLinkFor(path.join(service.dataDir, "outbox"), email));
  const verified = await fetch(`${service.baseUrl}${link.pathname}${link.search}`, { redirect: "manual" });
  if (verified.status !== 200 && verified.status !== 303) throw new Error(`verification link answered ${verified.status}`);
  const created = await request(service.baseUrl, "POST", "/api/keys", { cookie, body: { name: "soak" } });
  if (created.status !== 201) throw new Error(`key creation answered ${created.status}: ${created.text}`);
  const key = created.body.key as string;
  await runAdminCommand(service, ["set-plan", email, "pro"]);
  const account = await request(service.baseUrl, "GET", "/api/account", { key });
  const current = Number(account.body.credits_remaining);
  if (!Number.isInteger(current)) throw new Error(`GET /api/account answered ${account.status}: ${account.text}`);
  if (credits !== current) await runAdminCommand(service, ["grant-credits", email, String(credits - current), "--note", "soak"]);
  return { email, key, userId: signUp.body.user.id as string };
}

// ---------------------------------------------------------------------------
// Phases.

interface PhaseContext {
  service: Service;
  target: AttackTarget;
  settings: Settings;
  note(text: string): void;
}

type PhaseStart = (context: PhaseContext) => RunningAttack | undefined;

const PHASES: Record<string, PhaseStart> = {
  baseline: () => undefined,
  announcers: ({ target, settings }) =>
    idleAnnouncers(target, {
      slots: settings.announcers,
      path: settings["announce-path"],
      contentLength: settings["announce-bytes"],
      maxOpens: settings.announcers * settings["reopen-factor"],
    }),
  "slow-bodies": ({ target, settings }) =>
    slowBodies(target, {
      slots: settings["slow-bodies"],
      slowHeaderSlots: settings["slow-headers"],
      path: settings["announce-path"],
      bodyBytes: settings["slow-body-bytes"],
      bytesPerSecond: settings["slow-bytes-per-second"],
      maxOpens: (settings["slow-bodies"] + settings["slow-headers"]) * settings["reopen-factor"],
    }),
  flood: ({ target, settings }) =>
    connectionFlood(target, {
      slots: settings.flood,
      connectParallel: settings["flood-parallel"],
      maxOpens: settings.flood * settings["reopen-factor"],
    }),
  kill: ({ service, settings, note }) => {
    // Not a socket attack: the service dies mid-load and comes back; the customers retry as real clients do.
    let restart: Promise<void> = Promise.resolve();
    const timer = setTimeout(() => {
      restart = (async () => {
        const killedAt = performance.now();
        const proc = service.proc;
        proc?.child.kill("SIGKILL");
        await proc?.exited;
        await sleep(settings["restart-delay-ms"]);
        const startMs = await startService(service);
        note(
          `SIGKILL at ${settings["kill-at-seconds"]} s; listening again ${((performance.now() - killedAt) / 1000).toFixed(2)} s later (the start itself ${(startMs / 1000).toFixed(2)} s)`,
        );
      })();
    }, settings["kill-at-seconds"] * 1000);
    return {
      name: "SIGKILL and restart",
      stats: emptyAttackStats(0, 0),
      async stop() {
        clearTimeout(timer);
        await restart;
      },
    };
  },
};

function printPhase(phase: PhaseRecord, cores: number): void {
  const mine = samples.filter((sample) => sample.phase === phase.name);
  const answered = (kind: Kind) =>
    mine.filter((sample) => sample.kind === kind && /^\d+$/.test(sample.outcome)).map((sample) => sample.ms);
  const load = (values: number[]) => values.map((value) => value.toFixed(2)).join(" ");
  console.log(
    `\n== ${phase.name} (${((phase.endedAt - phase.startedAt) / 1000).toFixed(1)} s; load average ${load(phase.loadBefore)} -> ${load(phase.loadAfter)} on ${cores} cores)`,
  );
  console.log(`  customers' requests: ${mine.length}`);
  for (const kind of ["submit", "poll", "account"] as const) {
    const outcomes = countBy(
      mine.filter((sample) => sample.kind === kind),
      (sample) => sample.outcome,
    );
    console.log(`  ${latencyLine(kind, answered(kind))}   ${outcomes}`);
  }
  const failed = mine.filter((sample) => !/^[23]\d\d$/.test(sample.outcome));
  console.log(`  errors by status:   ${countBy(failed, (sample) => sample.outcome) || "none"}`);
  const phaseJobs = jobs.filter((job) => job.phase === phase.name);
  const settled = phaseJobs.flatMap((job) => (job.settledMs === undefined ? [] : [job.settledMs]));
  const accepted = phaseJobs.flatMap((job) => (job.acceptedMs === undefined ? [] : [job.acceptedMs]));
  console.log(
    `  jobs accepted: ${phaseJobs.length} (${phaseJobs.filter((job) => job.tries > 1).length} after a retry with the same Idempotency-Key), seen settled by their customer: ${settled.length} (${countBy(phaseJobs, (job) => job.status ?? "not seen settled")})`,
  );
  console.log(`  ${latencyLine("accepted", accepted)}  (first try to the 200 that accepted the job, retries included)`);
  console.log(`  ${latencyLine("settled", settled)}  (that 200 to the poll that saw it done or failed)`);
  const attack = phase.attack;
  if (attack && attack.stats.slots > 0) {
    const stats = attack.stats;
    console.log(
      `  attack ${attack.name}: ${stats.slots} sockets, opened ${stats.opened}${stats.capReached ? ` (the cap of ${stats.maxOpens} opens was reached)` : ""} (peak ${stats.peakOpen} open at once, ${stats.openNow} at the end), ${stats.bytesSent} bytes sent`,
    );
    console.log(
      `    answered: ${
        countBy(
          [...stats.answers].flatMap(([status, count]) => Array<string>(count).fill(status)),
          (status) => status,
        ) || "none"
      }; closed unanswered: ${stats.closedUnanswered}; connect errors: ${
        countBy(
          [...stats.connectErrors].flatMap(([code, count]) => Array<string>(count).fill(code)),
          (code) => code,
        ) || "none"
      }; socket errors: ${
        countBy(
          [...stats.socketErrors].flatMap(([code, count]) => Array<string>(count).fill(code)),
          (code) => code,
        ) || "none"
      }`,
    );
  }
  for (const note of phase.notes) console.log(`  ${note}`);
  const levels = logLevels.get(phase.name);
  console.log(`  service log: ${levels?.warn ?? 0} warnings, ${levels?.error ?? 0} errors`);
  for (const [message, count] of [...(levels?.messages ?? new Map<string, number>())].slice(0, 6))
    console.log(`    ${count}× ${message}`);
}

// ---------------------------------------------------------------------------

async function main(): Promise<number> {
  let settings: ReturnType<typeof readSettings>;
  try {
    settings = readSettings();
    for (const name of settings.phases.split(","))
      if (!PHASES[name]) throw new Error(`unknown phase "${name}" (the phases: ${Object.keys(PHASES).join(", ")})`);
  } catch (error) {
    console.error(`${error instanceof Error ? error.message : String(error)}; pnpm soak --help lists the settings`);
    return 2;
  }
  const phaseNames = settings.phases.split(",");
  const cores = os.cpus().length;
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "retouch-soak-"));
  await chmod(dataDir, 0o711); // as root, the embedded database runs as the postgres user
  const port = await freePort();
  const passed = Object.fromEntries(
    Object.entries(process.env).filter(
      (entry): entry is [string, string] =>
        entry[1] !== undefined && (entry[0].startsWith("RETOUCH_") || entry[0] === "LOG_LEVEL" || entry[0] === "DATABASE_URL"),
    ),
  );
  const service: Service = {
    baseUrl: `http://127.0.0.1:${port}`,
    port,
    dataDir,
    openFiles: settings["service-open-files"] > 0 ? settings["service-open-files"] : undefined,
    proc: undefined,
    log: [],
    env: {
      PORT: String(port),
      HOST: "127.0.0.1",
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      RETOUCH_DATA_DIR: dataDir,
      // The webhook receiver is on loopback, over http:.
      RETOUCH_WEBHOOK_ALLOW_INSECURE: "1",
      // A delivery or a job cut off by the SIGKILL is retried within the drain, not in 30 s or minutes.
      RETOUCH_WEBHOOK_RETRY_DELAYS: "1s,2s,5s,10s,20s",
      RETOUCH_JOB_LOCK_LIFETIME: "10s",
      LOG_LEVEL: "info",
      ...passed,
    },
  };
  const receiver = await new WebhookReceiver().start();
  const attacks = new Set<RunningAttack>();
  let stoppingCustomers = false;
  let db: pg.Client | undefined;

  let cleanedUp = false;
  const cleanup = async () => {
    if (cleanedUp) return;
    cleanedUp = true;
    stoppingCustomers = true;
    await Promise.all([...attacks].map((attack) => attack.stop().catch(() => {})));
    await db?.end().catch(() => {});
    await stopService(service).catch(() => {});
    if (!service.env.DATABASE_URL) killLeftoverPostmaster(dataDir);
    await receiver.stop().catch(() => {});
    const logFile = path.join(os.tmpdir(), `retouch-soak-${port}.log`);
    await writeFile(logFile, service.log.join("\n")).catch(() => {});
    console.log(`\nThe service's log: ${logFile}`);
    if (settings.keep) console.log(`Data directory kept: ${dataDir}`);
    else await rm(dataDir, { recursive: true, force: true }).catch(() => {});
  };
  // Ctrl-C or a kill: nothing is left running (the service, its database, the sockets).
  for (const signal of ["SIGINT", "SIGTERM"] as const)
    process.once(signal, () => {
      console.log(`\n${signal}: stopping`);
      void cleanup().finally(() => process.exit(130));
    });
  process.once("exit", () => {
    if (service.proc && service.proc.child.exitCode === null) service.proc.child.kill("SIGKILL");
    if (!service.env.DATABASE_URL && !cleanedUp) killLeftoverPostmaster(dataDir);
  });

  try {
    const photo = await readFile(new URL(`../../engine/test/fixtures/${settings.photo}`, import.meta.url));
    console.log(
      `Retouch soak: ${cores} cores, Node ${process.version}, load average ${os
        .loadavg()
        .map((value) => value.toFixed(2))
        .join(" ")}`,
    );
    console.log(
      `  phases ${phaseNames.join(", ")} of ${settings["phase-seconds"]} s; ${settings.customers} customers from 127.0.0.1 ("${settings.prompt}" on ${settings.photo}, ${photo.length} bytes; polling every ${settings["poll-ms"]} ms)`,
    );
    const sourceAddresses = Array.from({ length: Math.max(1, settings["attacker-addresses"]) }, (_, i) => `127.0.0.${2 + i}`);
    console.log(`  attackers from ${sourceAddresses.join(", ")}; service on ${service.baseUrl}, data in ${dataDir}`);

    const startMs = await startService(service);
    console.log(`  service listening after ${(startMs / 1000).toFixed(1)} s (first start: build check, database initialisation)`);
    const customers = await Promise.all(
      Array.from({ length: settings.customers }, (_, index) => setUpCustomer(service, index, settings.credits)),
    );
    console.log(`  ${customers.length} customers signed up, verified, on the pro plan with ${settings.credits} credits each`);

    const image = photo.toString("base64");
    const loops = customers.map((customer, index) =>
      customerLoop(service.baseUrl, customer, index, image, receiver.url, settings, () => stoppingCustomers),
    );

    const target: AttackTarget = { host: "127.0.0.1", port, sourceAddresses };
    const phases: PhaseRecord[] = [];
    for (const name of phaseNames) {
      const phase: PhaseRecord = {
        name,
        startedAt: performance.now(),
        endedAt: 0,
        loadBefore: os.loadavg(),
        loadAfter: [],
        notes: [],
      };
      currentPhase = name;
      const start = PHASES[name] as PhaseStart;
      const attack = start({ service, target, settings, note: (text) => phase.notes.push(text) });
      if (attack) {
        phase.attack = attack;
        attacks.add(attack);
      }
      await sleep(settings["phase-seconds"] * 1000);
      await attack?.stop();
      if (attack) {
        attacks.delete(attack);
        await sleep(settings["settle-seconds"] * 1000);
      }
      phase.endedAt = performance.now();
      phase.loadAfter = os.loadavg();
      phases.push(phase);
      const answered = samples.filter((sample) => sample.phase === name);
      console.log(
        `  phase ${name} over: ${answered.length} customer requests answered so far, ${answered.filter((sample) => !/^[23]\d\d$/.test(sample.outcome)).length} of them not 2xx/3xx`,
      );
    }

    // Drain: no new jobs; the customers finish watching theirs; then every job and webhook must settle.
    currentPhase = "drain";
    stoppingCustomers = true;
    const drainStarted = performance.now();
    await Promise.race([Promise.all(loops), sleep(settings["job-deadline-seconds"] * 1000)]);
    db = new pg.Client({ connectionString: await databaseUrl(service) });
    await db.connect();
    const userIds = customers.map((customer) => customer.userId);
    const drainDeadline = drainStarted + settings["drain-seconds"] * 1000;
    let unsettled = await unsettledCounts(db, userIds);
    let jobsSettledMs = unsettled.jobs === 0 ? performance.now() - drainStarted : Number.NaN;
    while ((unsettled.jobs > 0 || unsettled.deliveries > 0) && performance.now() < drainDeadline) {
      await sleep(500);
      unsettled = await unsettledCounts(db, userIds);
      if (unsettled.jobs === 0 && Number.isNaN(jobsSettledMs)) jobsSettledMs = performance.now() - drainStarted;
    }
    const drainMs = performance.now() - drainStarted;

    // Per phase, now that every job the customers watched has settled.
    for (const phase of phases) printPhase(phase, cores);
    console.log(
      `\n== drain (${settings["drain-seconds"]} s at most): no job pending ${(jobsSettledMs / 1000).toFixed(1)} s after the phases, waited ${(drainMs / 1000).toFixed(1)} s in all; still pending: ${unsettled.jobs} jobs, ${unsettled.deliveries} webhook deliveries`,
    );
    const drainLog = logLevels.get("drain");
    console.log(`  service log: ${drainLog?.warn ?? 0} warnings, ${drainLog?.error ?? 0} errors`);
    for (const [message, count] of [...(drainLog?.messages ?? new Map<string, number>())].slice(0, 6))
      console.log(`    ${count}× ${message}`);

    const received: ReceivedWebhook[] = receiver.calls.flatMap((call) => {
      try {
        const body = JSON.parse(call.rawBody) as { job_id?: string; status?: string };
        return body.job_id ? [{ jobId: body.job_id, status: body.status ?? "?" }] : [];
      } catch {
        return [];
      }
    });
    const report = await checkSettlement(db, userIds, received);
    const known = new Set(jobs.map((job) => job.jobId));
    console.log(`\n== settlement (PostgreSQL, ${report.accounts} accounts)`);
    console.log(
      `  jobs: ${report.jobs.total} (done ${report.jobs.done}, error ${report.jobs.error}, pending ${report.jobs.pending}); the customers were answered for ${known.size}`,
    );
    console.log(
      `  webhooks: ${report.webhooks.expected} expected, ${report.webhooks.delivered} recorded delivered, ${report.webhooks.received} calls received, ${report.webhooks.duplicates} duplicates (at-least-once), ${report.webhooks.missing} missing`,
    );
    if (report.failures.length === 0)
      console.log(
        "  OK: every ledger adds up to its balance; every job settled, debited once, refunded once if it failed; no double charge",
      );
    else {
      console.log("  FAILED:");
      for (const line of report.failures) console.log(`    ${line}`);
    }
    await cleanup();
    return report.failures.length === 0 ? 0 : 1;
  } catch (error) {
    console.error(`\nThe soak could not run: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    const tail = service.log.slice(-20).join("\n");
    if (tail) console.error(`\nThe service's last lines:\n${tail}`);
    await cleanup();
    return 2;
  }
}

process.exitCode = await main();
// Keep-alive sockets of fetch's pool must not hold the process open.
process.exit();
