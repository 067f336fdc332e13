import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const serverDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../packages/server");

export interface RetouchProcess {
  child: ChildProcess;
  /** stdout + stderr so far. */
  output(): string;
  /** Resolves with the exit code (or the signal name). */
  exited: Promise<number | string>;
  waitForLog(pattern: RegExp, timeoutMs?: number): Promise<string>;
}

/**
 * Runs a script of the server package with Node, in the package's folder:
 * an entry of the bundle that `pnpm start` runs (dist/, built by the global
 * setup), or the launcher itself.
 */
export function spawnServerEntry(
  entry: string,
  args: string[],
  env: Record<string, string>,
  options: { openFiles?: number } = {},
): RetouchProcess {
  // `openFiles`: the process's RLIMIT_NOFILE (soft and hard), set by the shell that then becomes Node.
  const [command, commandArgs] =
    options.openFiles === undefined
      ? [process.execPath, [entry, ...args]]
      : ["/bin/sh", ["-c", `ulimit -n ${options.openFiles} && exec "$0" "$@"`, process.execPath, entry, ...args]];
  const child = spawn(command, commandArgs, {
    cwd: serverDir,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      INIT_CWD: serverDir,
      RETOUCH_MODEL_DOWNLOAD: "off",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const waiters = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    output += chunk.toString("utf8");
    for (const waiter of waiters) waiter();
  };
  child.stdout?.on("data", onData);
  child.stderr?.on("data", onData);
  const exited = new Promise<number | string>((resolve) => {
    child.on("exit", (code, signal) => {
      resolve(code ?? signal ?? "unknown");
      for (const waiter of waiters) waiter();
    });
  });
  let done = false;
  void exited.then(() => {
    done = true;
  });
  return {
    child,
    output: () => output,
    exited,
    waitForLog(pattern, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const line = output.split("\n").find((candidate) => pattern.test(candidate));
          if (line !== undefined) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(line);
          } else if (done) {
            waiters.delete(check);
            clearTimeout(timer);
            reject(new Error(`process exited before logging ${pattern}:\n${output}`));
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`timed out waiting for ${pattern}:\n${output}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
  };
}

export function spawnRetouch(
  env: Record<string, string>,
  args: string[] = [],
  options: { openFiles?: number } = {},
): RetouchProcess {
  return spawnServerEntry("dist/main.js", args, env, options);
}

export async function runAdmin(args: string[], env: Record<string, string>): Promise<{ code: number | string; output: string }> {
  const proc = spawnServerEntry("dist/admin.js", ["admin", ...args], env);
  const code = await proc.exited;
  return { code, output: proc.output() };
}
