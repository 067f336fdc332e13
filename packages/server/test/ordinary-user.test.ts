import { execFileSync, spawn } from "node:child_process";
import { copyFileSync, statSync } from "node:fs";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";
import { signUp } from "../../../test/support/accounts";
import { freePort } from "../../../test/support/free-port";

/**
 * The embedded database must work for an ordinary user too (the other tests
 * run as whoever runs the suite, root in CI). As root we can check it for real
 * by starting the entry as another user; elsewhere the suite already is the ordinary-user case.
 */
const USER = "retouch-test";
const serverDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

function traversableByOthers(target: string): boolean {
  let current = path.resolve(target);
  while (path.dirname(current) !== current) {
    current = path.dirname(current);
    if ((statSync(current).mode & 0o001) === 0) return false;
  }
  return true;
}

const runnable = process.getuid?.() === 0 && traversableByOthers(serverDir);

it.skipIf(!runnable)("runs with its embedded database as an ordinary (non-root) user", { timeout: 90_000 }, async () => {
  try {
    execFileSync("id", [USER], { stdio: "ignore" });
  } catch {
    execFileSync("useradd", ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER]);
  }
  const scratch = await mkdtemp(path.join(os.tmpdir(), "retouch-user-"));
  await chmod(scratch, 0o777);
  const uid = Number(execFileSync("id", ["-u", USER]).toString());
  const gid = Number(execFileSync("id", ["-g", USER]).toString());
  // The Node binary may live under root's home (CI provisions it there): give the user its own copy.
  let node = process.execPath;
  if (!traversableByOthers(node)) {
    node = path.join(scratch, "node");
    copyFileSync(process.execPath, node);
    await chmod(node, 0o755);
  }
  const port = await freePort();
  const dataDir = path.join(scratch, "data");
  // The bundle that `pnpm start` runs, built by the global setup.
  const child = spawn(node, ["dist/main.js"], {
    cwd: serverDir,
    uid,
    gid,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: scratch,
      PORT: String(port),
      HOST: "127.0.0.1",
      RETOUCH_DATA_DIR: dataDir,
      // As every test's service: the catalog's default models are not fetched from the internet.
      RETOUCH_MODEL_DOWNLOAD: "off",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (chunk) => (output += chunk));
  child.stderr.on("data", (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  try {
    // Started once its output says so; an exit or a minute without it is a failure.
    await new Promise<void>((resolve, reject) => {
      const fail = () => {
        clearTimeout(timer);
        reject(new Error(`did not start:\n${output}`));
      };
      const timer = setTimeout(fail, 60_000);
      const check = () => {
        if (!output.includes("Retouch is listening")) return;
        clearTimeout(timer);
        resolve();
      };
      child.stdout.on("data", check);
      child.stderr.on("data", check);
      child.on("exit", fail);
      check();
    });
    const account = await signUp(`http://127.0.0.1:${port}`);
    expect(account.userId).toMatch(/^usr_/);
    const owner = execFileSync("stat", ["-c", "%U", path.join(dataDir, "postgres")])
      .toString()
      .trim();
    expect(owner).toBe(USER);
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
  } finally {
    if (child.exitCode === null) child.kill("SIGKILL");
    await rm(scratch, { recursive: true, force: true });
  }
});
