import { execFile } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const examplesDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../examples");

/** Runs an example's command in its folder, as its README says; never throws. */
export function runExample(
  example: string,
  command: string,
  args: string[],
  env: Record<string, string>,
  onStdout?: (chunk: string) => void,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      command,
      args,
      {
        cwd: path.join(examplesDir, example),
        env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
        timeout: 120_000,
      },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr }),
    );
    if (onStdout) child.stdout?.on("data", (chunk: Buffer) => onStdout(chunk.toString()));
  });
}
