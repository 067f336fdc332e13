import { mkdtemp, open, readdir, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { freePort } from "./free-port";
import type { S3Gateway } from "./s3-gateway";
import { type RetouchProcess, spawnRetouch } from "./spawn-retouch";

/**
 * Retouch as an operator runs it on several machines: each process (one api,
 * any number of workers) is the built server (`pnpm start`'s bundle) in its
 * own child process with its own RETOUCH_DATA_DIR; they share nothing but the
 * PostgreSQL at `databaseUrl` and, when given, the S3 gateway on loopback.
 * Used by the multi-process test and the throughput bench (so it takes no
 * vitest context: the caller brings the database).
 */
export interface MachineOptions {
  databaseUrl: string;
  /** The store every process uses; without it, each uses the file store under its own data directory. */
  gateway?: S3Gateway;
  /**
   * RETOUCH_AUTH_SECRET for every process (by default one made up here); `null`
   * leaves it unset, for the service to find the shared one itself.
   */
  authSecret?: string | null;
  /**
   * One data directory for every process, as on one machine (the file store
   * needs it: api and workers read each other's files); by default each gets its own.
   */
  sharedDataDir?: string;
  /** Settings every process gets, after the defaults here. */
  env?: Record<string, string>;
}

export interface Machine {
  name: string;
  dataDir: string;
  proc: RetouchProcess;
  /** The process id, as the queue's worker ids name it (`worker:<host>:<pid>:<uuid>`). */
  pid: number;
  /** The api's base URL; empty for a worker. */
  url: string;
}

/** Processes on separate machines, one service: the same database, the same store, and the same settings. */
export class SeparateMachines {
  readonly machines: Machine[] = [];
  /** The api's port, chosen up front: every process writes result URLs on the api's address (PUBLIC_BASE_URL). */
  private readonly apiPort = freePort();

  constructor(private readonly options: MachineOptions) {}

  private async baseEnv(): Promise<Record<string, string>> {
    const gateway = this.options.gateway;
    return {
      HOST: "127.0.0.1",
      PUBLIC_BASE_URL: `http://127.0.0.1:${await this.apiPort}`,
      DATABASE_URL: this.options.databaseUrl,
      ...(this.options.authSecret === null
        ? {}
        : { RETOUCH_AUTH_SECRET: this.options.authSecret ?? `separate-machines-${"0123456789abcdef".repeat(3)}` }),
      LOG_LEVEL: "info",
      ...(gateway
        ? {
            RETOUCH_BLOB_STORE: "s3",
            RETOUCH_S3_BUCKET: gateway.bucket,
            RETOUCH_S3_ENDPOINT: gateway.endpoint,
            RETOUCH_S3_REGION: gateway.region,
            RETOUCH_S3_FORCE_PATH_STYLE: "1",
            // The AWS SDK's default credential chain, as an operator gives it.
            AWS_ACCESS_KEY_ID: gateway.accessKeyId,
            AWS_SECRET_ACCESS_KEY: gateway.secretAccessKey,
          }
        : {}),
      ...this.options.env,
    };
  }

  private async launch(name: string, args: string[], env: Record<string, string>): Promise<Machine> {
    const dataDir = this.options.sharedDataDir ?? (await mkdtemp(path.join(os.tmpdir(), `retouch-${name}-`)));
    const proc = spawnRetouch({ ...(await this.baseEnv()), RETOUCH_DATA_DIR: dataDir, ...env }, args);
    const machine: Machine = {
      name,
      dataDir,
      proc,
      pid: proc.child.pid ?? 0,
      url: env.PORT ? `http://127.0.0.1:${env.PORT}` : "",
    };
    this.machines.push(machine);
    return machine;
  }

  /** The api process (role api) listening on a free loopback port; resolves once it listens. */
  async startApi(name = "api", env: Record<string, string> = {}): Promise<Machine> {
    const machine = await this.launch(name, ["--role", "api"], { PORT: String(await this.apiPort), ...env });
    await machine.proc.waitForLog(/Retouch is listening/, 60_000);
    return machine;
  }

  /** A worker process (role worker, no listener); resolves once it takes jobs. */
  async startWorker(name: string, env: Record<string, string> = {}): Promise<Machine> {
    const machine = await this.launch(name, ["--role", "worker"], { PORT: "", ...env });
    await machine.proc.waitForLog(/Retouch worker is running/, 60_000);
    return machine;
  }

  /** The machine whose queue worker id this is (a lock's or a claim's holder). */
  holder(workerId: string | null | undefined): Machine | undefined {
    const pid = Number(workerId?.split(":").at(-2));
    return this.machines.find((machine) => machine.pid === pid);
  }

  /** SIGTERMs what still runs (SIGKILL after `graceMs`) and removes the data directories. */
  async stop(graceMs = 10_000): Promise<void> {
    await Promise.all(
      this.machines.map(async ({ proc }) => {
        if (proc.child.exitCode !== null || proc.child.signalCode !== null) return;
        proc.child.kill("SIGTERM");
        const timer = setTimeout(() => proc.child.kill("SIGKILL"), graceMs);
        await proc.exited;
        clearTimeout(timer);
      }),
    );
    await Promise.all(this.machines.map((machine) => rm(machine.dataDir, { recursive: true, force: true })));
  }
}

/** Every file under a directory, recursively, relative to it. */
export async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)))
    .sort();
}

/** The first bytes of the formats Retouch reads or writes (JPEG, PNG, WebP, GIF, AVIF/HEIF, TIFF). */
function looksLikeImage(head: Buffer): boolean {
  const ascii = head.toString("latin1");
  return (
    head.subarray(0, 3).equals(Buffer.from([0xff, 0xd8, 0xff])) ||
    head.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) ||
    (ascii.startsWith("RIFF") && ascii.slice(8, 12) === "WEBP") ||
    ascii.startsWith("GIF8") ||
    ascii.slice(4, 8) === "ftyp" ||
    ascii.startsWith("II*\0") ||
    ascii.startsWith("MM\0*")
  );
}

/** The files under `dir` whose content starts like an image, whatever their names. */
export async function imageFilesUnder(dir: string): Promise<string[]> {
  const images: string[] = [];
  for (const file of await filesUnder(dir)) {
    const handle = await open(path.join(dir, file), "r");
    try {
      const head = Buffer.alloc(16);
      const { bytesRead } = await handle.read(head, 0, 16, 0);
      if (looksLikeImage(head.subarray(0, bytesRead))) images.push(file);
    } finally {
      await handle.close();
    }
  }
  return images;
}
