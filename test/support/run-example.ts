import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { productPhoto } from "./images";
import { startTestApp, type TestApp } from "./test-app";

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

/** A live Retouch and a scratch folder holding `photo.png`, for one example's test file. */
export async function exampleFixture(
  name: string,
): Promise<{ app: TestApp; scratch: string; photo: string; close(): Promise<void> }> {
  const app = await startTestApp({ RETOUCH_QUEUE_POLL_INTERVAL: "200ms" });
  const scratch = await mkdtemp(path.join(os.tmpdir(), `retouch-example-${name}-`));
  const photo = path.join(scratch, "photo.png");
  await writeFile(photo, await productPhoto());
  return {
    app,
    scratch,
    photo,
    async close() {
      await app.close();
      await rm(scratch, { recursive: true, force: true });
    },
  };
}
