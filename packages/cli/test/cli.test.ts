import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { uniqueEmail, verifyEmail } from "../../../test/support/accounts";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

const execFileAsync = promisify(execFile);
const packageDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const binary = path.join(packageDir, "dist", "cli.js");

let app: TestApp;
let home: string;
let configFile: string;
const email = uniqueEmail("cli");
const password = "cli password 123";

/** Runs the built binary, as a user would. */
async function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, [binary, ...args], {
      env: { PATH: process.env.PATH ?? "", HOME: home, RETOUCH_CONFIG: configFile, RETOUCH_BASE_URL: app.url, ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

beforeAll(async () => {
  await execFileAsync("pnpm", ["build"], { cwd: packageDir });
  app = await startTestApp();
  home = await mkdtemp(path.join(os.tmpdir(), "retouch-cli-"));
  configFile = path.join(home, "config", "retouch.json");
}, 120_000);

afterAll(async () => {
  await app.close();
  await rm(home, { recursive: true, force: true });
});

describe("the retouch binary", () => {
  it("signs up and stores the session in a 0600 file", async () => {
    const result = await cli(["signup", "--email", email, "--name", "Cli User"], { RETOUCH_PASSWORD: password });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(`We sent a verification link to ${email}`);
    expect((await stat(configFile)).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(await readFile(configFile, "utf8"));
    expect(stored).toMatchObject({ email, baseUrl: app.url, sessionCookie: expect.stringMatching(/^retouch\.session_token=/) });
  });

  it("explains what to do when the email is not verified yet (exit 3)", async () => {
    const result = await cli(["keys", "create", "laptop"]);
    expect(result.code).toBe(3);
    expect(result.stderr).toContain(`verify your email first: open the link we sent to ${email}`);
  });

  it("creates a key, keeps it with --use, lists and revokes", async () => {
    await verifyEmail(app.url, app.outboxDir, email);
    const created = await cli(["keys", "create", "laptop", "--use", "--json"]);
    expect(created.code, created.stderr).toBe(0);
    const key = JSON.parse(created.stdout);
    expect(key.key).toMatch(/^pk_/);
    expect(JSON.parse(await readFile(configFile, "utf8")).apiKey).toBe(key.key);

    const listed = await cli(["keys", "list", "--json"]);
    expect(JSON.parse(listed.stdout).keys.map((entry: { id: string }) => entry.id)).toContain(key.id);
    expect(listed.stdout).not.toContain(key.key);
    const human = await cli(["keys", "list"]);
    expect(human.stdout).toMatch(/ID\s+NAME\s+PREFIX/);
    expect(human.stdout).toContain(key.prefix);

    const secret = await cli(["secret"]);
    expect(secret.stdout.trim()).toMatch(/^[0-9a-f]{64}$/);

    const revoked = await cli(["keys", "revoke", key.id, "--quiet"]);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toBe("");
    const afterRevoke = await cli(["keys", "list"]);
    expect(afterRevoke.code).toBe(3);
    expect(afterRevoke.stderr).toMatch(/revoked/);
  });

  it("signs in again with the password; a wrong one is exit 3", async () => {
    const wrong = await cli(["login", "--email", email], { RETOUCH_PASSWORD: "not the password" });
    expect(wrong.code).toBe(3);
    expect(wrong.stderr).toContain("wrong email or password");
    const right = await cli(["login", "--email", email], { RETOUCH_PASSWORD: password });
    expect(right.code).toBe(0);
    expect((await cli(["keys", "list"])).code).toBe(0);
  });

  it("exits 5 with advice when the server is unreachable, 2 on usage errors", async () => {
    const unreachable = await cli(["keys", "list", "--base-url", "http://127.0.0.1:9"]);
    expect(unreachable.code).toBe(5);
    expect(unreachable.stderr).toContain("is the server running?");
    const usage = await cli(["keys", "revoke"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("missing key id");
    const help = await cli(["keys", "create", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("Usage: retouch keys create <name> [--use]");
  });
});
