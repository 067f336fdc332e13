/**
 * `pnpm bench` (start-up part; alone: `pnpm --filter @retouch/server bench:start`):
 * how long the built service takes from the spawn of its process to the
 * first 200 on GET /healthz, on a data directory whose embedded database
 * already exists (every start after the first), next to the floor of
 * starting Node at all. Figures are printed; nothing here asserts on time.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { freePort } from "../../../test/support/free-port";
import { distDir, ensureServerBuild, serverDir } from "../scripts/build-if-stale.mjs";

const STARTS = Number(process.env.BENCH_STARTS ?? 5);

interface StartSample {
  /** Spawn to the first 200 on /healthz. */
  healthyMs: number;
  /** Spawn to the first answer of a REST route (GET /api/keys without a key: 401). */
  apiMs: number;
  /** CPU time the process had used when it first answered 200 (Linux), or NaN. */
  cpuMs: number;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

function figure(label: string, values: number[]): void {
  const range = `${Math.min(...values).toFixed(0)}-${Math.max(...values).toFixed(0)}`;
  console.log(`${label.padEnd(52)} median ${median(values).toFixed(0).padStart(5)} ms   range ${range.padStart(11)} ms`);
}

function load(): string {
  return os
    .loadavg()
    .map((value) => value.toFixed(2))
    .join(" ");
}

/** utime + stime from /proc/<pid>/stat, in ms. */
function cpuTimeMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
    const msPerTick = 1000 / 100; // USER_HZ is 100 on Linux
    return (Number(fields[11]) + Number(fields[12])) * msPerTick;
  } catch {
    return Number.NaN;
  }
}

async function statusOf(url: string): Promise<number | undefined> {
  try {
    const response = await fetch(url);
    await response.arrayBuffer();
    return response.status;
  } catch {
    return undefined;
  }
}

/** Spawns the entry, times it to its first 200 and first API answer, then stops it with SIGTERM. */
async function timeStart(args: string[], env: NodeJS.ProcessEnv, port: number): Promise<StartSample> {
  const base = `http://127.0.0.1:${port}`;
  const started = performance.now();
  const child = spawn(process.execPath, args, { cwd: serverDir, env, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | string>((resolve) => child.on("exit", (code, signal) => resolve(code ?? signal ?? "?")));
  try {
    let healthyMs = Number.NaN;
    let cpuMs = Number.NaN;
    while (Number.isNaN(healthyMs)) {
      if (child.exitCode !== null) throw new Error(`the service exited before answering:\n${output}`);
      if (performance.now() - started > 60_000) throw new Error(`no 200 on /healthz within a minute:\n${output}`);
      if ((await statusOf(`${base}/healthz`)) === 200) {
        healthyMs = performance.now() - started;
        cpuMs = child.pid ? cpuTimeMs(child.pid) : Number.NaN;
      } else await new Promise((resolve) => setTimeout(resolve, 5));
    }
    if ((await statusOf(`${base}/api/keys`)) !== 401) throw new Error(`GET /api/keys did not answer 401:\n${output}`);
    return { healthyMs, apiMs: performance.now() - started, cpuMs };
  } finally {
    child.kill("SIGTERM");
    const code = await exited;
    if (code !== 0) console.error(`the service exited with ${code}:\n${output}`);
  }
}

async function nodeFloorMs(): Promise<number> {
  const started = performance.now();
  await new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, ["-e", "0"], { stdio: "ignore" });
    child.on("error", reject);
    child.on("exit", () => resolve());
  });
  return performance.now() - started;
}

async function main(): Promise<void> {
  if (ensureServerBuild()) console.log();
  const scratch = await mkdtemp(path.join(os.tmpdir(), "retouch-bench-start-"));
  await chmod(scratch, 0o711); // the embedded database may run as the postgres user
  const port = await freePort();
  const { DATABASE_URL: _external, ...inherited } = process.env;
  const env = { ...inherited, PORT: String(port), HOST: "127.0.0.1", RETOUCH_DATA_DIR: path.join(scratch, "data") };
  console.log(
    `Retouch start-up benchmark: ${os.cpus().length} cores, Node ${process.version}, ${STARTS} starts of ${path.relative(process.cwd(), distDir)}/main.js on an existing data directory`,
  );
  console.log(`load average before: ${load()} (1, 5, 15 min)\n`);
  try {
    // The first start creates the cluster and the schema, and fills the compile cache: not measured.
    await timeStart(["dist/main.js"], env, port);
    const entry: StartSample[] = [];
    for (let i = 0; i < STARTS; i++) entry.push(await timeStart(["dist/main.js"], env, port));
    const launcher: StartSample[] = [];
    for (let i = 0; i < STARTS; i++) launcher.push(await timeStart(["scripts/run-built.mjs", "main"], env, port));
    const floor: number[] = [];
    for (let i = 0; i < STARTS; i++) floor.push(await nodeFloorMs());

    figure(
      "node dist/main.js: spawn -> first 200 on /healthz",
      entry.map((sample) => sample.healthyMs),
    );
    figure(
      "  ... -> first answer of the REST API",
      entry.map((sample) => sample.apiMs),
    );
    figure(
      "  CPU time of the process by then (all its threads)",
      entry.map((sample) => sample.cpuMs),
    );
    figure(
      "pnpm start's launcher (build check + the same)",
      launcher.map((sample) => sample.healthyMs),
    );
    figure("floor: node -e 0 (spawn -> exit)", floor);
    console.log(
      `${"ratio (entry median / floor median)".padEnd(52)} ${(median(entry.map((sample) => sample.healthyMs)) / median(floor)).toFixed(1).padStart(6)}x`,
    );
    console.log(`\nload average after: ${load()} (1, 5, 15 min)\n`);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
