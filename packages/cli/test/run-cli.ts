import { execFile } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);
/** The built CLI, as `npm install` would put it on a user's PATH. */
export const CLI_BINARY = path.join(path.resolve(path.dirname(fileURLToPath(import.meta.url)), ".."), "dist", "cli.js");

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI with `env` and the PATH as its whole environment; a failing exit is a result, not a throw. */
export async function runCli(args: string[], env: Record<string, string>, cwd?: string): Promise<CliRun> {
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, [CLI_BINARY, ...args], {
      env: { PATH: process.env.PATH ?? "", ...env },
      ...(cwd ? { cwd } : {}),
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as CliRun;
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}
