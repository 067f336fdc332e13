import { execFileSync, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm, symlink } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../../test/support/free-port";

/**
 * On a Node older than package.json's engines (Node 20 is Debian's /usr/bin/node), `pnpm start`
 * and `pnpm test` stop before doing anything, with one line saying what to install, instead of
 * engine warnings and then a half-working service or a test run failing everywhere.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const preflight = path.join(root, "scripts/toolchain.preflight.cjs");
const manifest = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as {
  engines: { node: string };
  scripts: Record<string, string>;
};

const OLD_NODE = "/usr/bin/node";
const oldNodeVersion = existsSync(OLD_NODE)
  ? execFileSync(OLD_NODE, ["-p", "process.versions.node"], { encoding: "utf8" }).trim()
  : "";
// Only a Node below the minimum shows the refusal; a machine without one skips these cases.
const hasOldNode = oldNodeVersion !== "" && Number(oldNodeVersion.split(".")[0]) < 22;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

// What `pnpm start` or `pnpm test` print once they are under way: the service's JSON log lines, biome, vitest.
const UNDER_WAY = /"level":|Checked \d+ files|RUN {2}v|Test Files/;

/**
 * Runs a command in its own process group. Without the preflight `pnpm start` would serve and `pnpm test`
 * would run the whole suite: the group is killed as soon as either shows it is under way (`stopOn`), or
 * after `limitMs` at the latest.
 */
function run(command: string, args: string[], env: NodeJS.ProcessEnv, stopOn?: RegExp, limitMs = 60_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: root, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    const stop = () => {
      try {
        if (child.pid) process.kill(-child.pid, "SIGKILL");
      } catch {
        // Already gone.
      }
    };
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
      if (stopOn?.test(stdout)) stop();
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
      if (stopOn?.test(stderr)) stop();
    });
    const timer = setTimeout(stop, limitMs);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

function lines(text: string): string[] {
  return text.split("\n").filter((line) => line.trim() !== "");
}

describe("the preflight itself", () => {
  it("is the first step of pnpm start, pnpm test and pnpm dev", () => {
    for (const script of ["start", "test", "dev"]) {
      expect(manifest.scripts[script], script).toMatch(/^node scripts\/toolchain\.preflight\.cjs && /);
    }
  });

  it("lets the Node running this test through, silently", async () => {
    const result = await run(process.execPath, [preflight], { PATH: process.env.PATH });
    expect(result).toEqual({ code: 0, stdout: "", stderr: "" });
  });

  it.skipIf(!hasOldNode)(`refuses Node ${oldNodeVersion} (${OLD_NODE}) with one line naming what to install`, async () => {
    const result = await run(OLD_NODE, [preflight], { PATH: process.env.PATH });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(lines(result.stderr)).toEqual([expect.stringContaining(`not v${oldNodeVersion}`)]);
    expect(result.stderr).toMatch(/needs Node\.js 22\.2 or newer \(24 recommended\)/);
    expect(result.stderr).toMatch(/install Node 24/);
  });

  it("refuses a pnpm older than the one pinned, with corepack's fallbacks", async () => {
    const result = await run(process.execPath, [preflight], {
      PATH: process.env.PATH,
      npm_config_user_agent: "pnpm/9.15.4 npm/? node/v24.11.0 linux x64",
    });
    expect(result.code).toBe(1);
    expect(lines(result.stderr)).toHaveLength(1);
    expect(result.stderr).toMatch(/needs pnpm 10, not 9\.15\.4/);
    expect(result.stderr).toMatch(/npm install -g pnpm@10/);
    expect(result.stderr).toMatch(/npx pnpm@10/);
  });
});

describe.skipIf(!hasOldNode)(`pnpm start and pnpm test on Node ${oldNodeVersion}`, () => {
  let bin: string;
  let dataDir: string;
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    // A PATH whose `node` is the old one, so pnpm and every script it runs are on Node 20.
    bin = await mkdtemp(path.join(os.tmpdir(), "retouch-old-node-"));
    await symlink(OLD_NODE, path.join(bin, "node"));
    dataDir = await mkdtemp(path.join(os.tmpdir(), "retouch-preflight-data-"));
    const pnpmDir = (process.env.PATH ?? "")
      .split(path.delimiter)
      .find((dir) => dir !== "" && existsSync(path.join(dir, "pnpm")));
    if (!pnpmDir) throw new Error("no pnpm on PATH");
    env = {
      PATH: [bin, pnpmDir, "/usr/bin", "/bin"].join(path.delimiter),
      HOME: process.env.HOME,
      // Were the preflight missing, `pnpm start` would start a service: on a free loopback port with its data in a temporary folder.
      HOST: "127.0.0.1",
      PORT: String(await freePort()),
      RETOUCH_DATA_DIR: dataDir,
      RETOUCH_MODEL_DOWNLOAD: "off",
    };
  });
  afterAll(async () => {
    await rm(bin, { recursive: true, force: true });
    await rm(dataDir, { recursive: true, force: true });
  });

  it.each(["start", "test"])(
    "pnpm %s stops at once with the preflight's line and runs nothing else",
    async (script) => {
      const result = await run("pnpm", [script], env, UNDER_WAY);
      expect(result.code, result.stdout + result.stderr).not.toBe(0);
      const refusals = lines(result.stderr).filter((line) => line.startsWith("Retouch needs"));
      expect(refusals).toEqual([expect.stringContaining(`not v${oldNodeVersion}`)]);
      // Nothing of the service's start (its JSON log lines) or of the test run (biome, tsc, vitest).
      expect(result.stdout + result.stderr).not.toMatch(UNDER_WAY);
    },
    90_000,
  );
});
