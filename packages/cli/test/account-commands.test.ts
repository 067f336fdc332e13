import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type KeyedAccount, keyedAccount } from "../../../test/support/accounts";
import { freePort } from "../../../test/support/free-port";
import { request } from "../../../test/support/http-client";
import { productPhoto } from "../../../test/support/images";
import { insertPendingJob } from "../../../test/support/jobs";
import { connectApp } from "../../../test/support/oauth-client";
import { startTestApp, type TestApp } from "../../../test/support/test-app";
import { type CliRun, runCli } from "./run-cli";

/** `retouch whoami`, `retouch jobs`, `retouch apps` and `retouch logout`: the built binary against a real Retouch. */

let app: TestApp;
let home: string;
let account: KeyedAccount;

function cli(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return runCli(args, {
    HOME: home,
    RETOUCH_CONFIG: path.join(home, "config.json"),
    RETOUCH_BASE_URL: app.url,
    ...env,
  });
}

beforeAll(async () => {
  // Its own address as the public one: OAuth tokens are issued for {PUBLIC_BASE_URL}/mcp, where the test's client connects.
  const port = await freePort();
  app = await startTestApp({
    PORT: String(port),
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    RETOUCH_QUEUE_POLL_INTERVAL: "200ms",
  });
  home = await mkdtemp(path.join(os.tmpdir(), "retouch-cli-account-"));
  account = await keyedAccount(app, { plan: "core", credits: 30 });
}, 120_000);
afterAll(async () => {
  await app.close();
  await rm(home, { recursive: true, force: true });
});

describe("retouch whoami", () => {
  it("prints the account with a key, and the same as JSON", async () => {
    const human = await cli(["whoami"], { RETOUCH_API_KEY: account.key });
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toContain(`${account.name} <${account.email}>`);
    expect(human.stdout).toMatch(/Plan:\s+core \(40 images a minute, 25 at once\)/);
    expect(human.stdout).toMatch(/Credits:\s+30/);
    expect(human.stdout).toMatch(/Usage:\s+0 jobs charged this month \(UTC\)/);

    const json = await cli(["whoami", "--json"], { RETOUCH_API_KEY: account.key });
    expect(JSON.parse(json.stdout)).toEqual((await request(app.url, "GET", "/api/account", { key: account.key })).body);
  });

  it("works with the stored session after login, and asks to sign in without credentials (exit 2)", async () => {
    const login = await cli(["login", "--email", account.email], { RETOUCH_PASSWORD: account.password });
    expect(login.code, login.stderr).toBe(0);
    const whoami = await cli(["whoami", "--json"]);
    expect(JSON.parse(whoami.stdout)).toMatchObject({ email: account.email, plan: "core" });
    await writeFile(path.join(home, "config.json"), "{}");
    const nobody = await cli(["whoami"]);
    expect(nobody.code).toBe(2);
    expect(nobody.stderr).toContain("not signed in");
  });
});

describe("retouch jobs", () => {
  it("lists edits newest first with their outcome: a page, or every job with --all", async () => {
    const photo = path.join(home, "photo.png");
    await writeFile(photo, await productPhoto());
    const done = await cli(["edit", photo, "make it black and white", "-o", path.join(home, "bw.jpg")], {
      RETOUCH_API_KEY: account.key,
    });
    expect(done.code, done.stderr).toBe(0);
    const failed = await cli(["edit", photo, "crop to 5000x5000 pixels", "-o", path.join(home, "big.jpg")], {
      RETOUCH_API_KEY: account.key,
    });
    expect(failed.code).toBe(6);
    for (let i = 0; i < 3; i++) await insertPendingJob(app.services, account.userId, { prompt: `queued ${i}` });

    const page = await cli(["jobs", "--limit", "2"], { RETOUCH_API_KEY: account.key });
    expect(page.code, page.stderr).toBe(0);
    const lines = page.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^ID\s+STATUS\s+CREATED\s+PROMPT\s+RESULT$/);
    expect(lines[1]).toMatch(/^job_\S+\s+pending\s+\S+\s+queued 2$/);
    expect(lines[2]).toMatch(/queued 1$/);
    expect(page.stdout).toContain("Older jobs: retouch jobs --all");

    const all = await cli(["jobs", "--all"], { RETOUCH_API_KEY: account.key });
    expect(all.stdout).toMatch(/error\s+\S+\s+crop to 5000x5000 pixels\s+unsupported_instruction: Cannot crop/);
    expect(all.stdout).toMatch(/done\s+\S+\s+make it black and white\s+jpeg 320x240/);
    expect(all.stdout).not.toContain("Older jobs");

    const listed = (await request(app.url, "GET", "/api/jobs?limit=100", { key: account.key })).body.jobs;
    const json = JSON.parse((await cli(["jobs", "--all", "--limit", "2", "--json"], { RETOUCH_API_KEY: account.key })).stdout);
    expect(json.jobs.map((job: { id: string }) => job.id)).toEqual(listed.map((job: { id: string }) => job.id));
    expect(json.jobs).toHaveLength(5);

    const whoami = JSON.parse((await cli(["whoami", "--json"], { RETOUCH_API_KEY: account.key })).stdout);
    expect(whoami).toMatchObject({ credits_remaining: 29, usage: { this_month: 4 } });
  });

  it("filters by status, workflow and day: the service's filters, on every page", async () => {
    const owner = await keyedAccount(app);
    const env = { RETOUCH_API_KEY: owner.key };
    const photo = path.join(home, "filters.png");
    await writeFile(photo, await productPhoto());
    const edited = await cli(["edit", photo, "make it black and white", "-o", path.join(home, "filters-bw.jpg")], env);
    expect(edited.code, edited.stderr).toBe(0);
    const cutout = await cli(["edit", photo, "remove the background", "-o", path.join(home, "filters-cut.png")], env);
    expect(cutout.code, cutout.stderr).toBe(0);
    const failed = await cli(["edit", photo, "crop to 5000x5000 pixels", "-o", path.join(home, "filters-big.jpg")], env);
    expect(failed.code).toBe(6);
    for (let i = 0; i < 2; i++) await insertPendingJob(app.services, owner.userId, { prompt: `waiting ${i}` });
    const today = new Date().toISOString().slice(0, 10);
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);

    // Done today: the edit and the cut-out, nothing pending or failed.
    const done = await cli(["jobs", "--status", "done", "--from", today, "--to", today], env);
    expect(done.code, done.stderr).toBe(0);
    const rows = done.stdout.trimEnd().split("\n").slice(1);
    expect(rows).toHaveLength(2);
    expect(rows.every((row) => /^job_\S+\s+done\s/.test(row))).toBe(true);

    // Done and background removal: the cut-out alone.
    const removal = await cli(["jobs", "--status", "done", "--workflow", "background_removal", "--json"], env);
    expect(JSON.parse(removal.stdout).jobs.map((job: { prompt: string }) => job.prompt)).toEqual(["remove the background"]);

    // --all follows the cursor with the filters kept: both pending jobs, one per page.
    const pending = JSON.parse((await cli(["jobs", "--all", "--limit", "1", "--status", "pending", "--json"], env)).stdout);
    expect(pending.jobs.map((job: { prompt: string }) => job.prompt)).toEqual(["waiting 1", "waiting 0"]);
    // A page with more behind it says how to see the rest, with the same filters.
    const paged = await cli(["jobs", "--limit", "1", "--status", "pending"], env);
    expect(paged.stdout).toContain("Older jobs: retouch jobs --all --status pending");

    // Nothing from tomorrow on: said so, not "No jobs yet".
    const none = await cli(["jobs", "--from", tomorrow], env);
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout.trim()).toBe("No jobs match these filters.");

    // The service checks the values: its 400 names the field (exit 1).
    const badStatus = await cli(["jobs", "--status", "finished"], env);
    expect(badStatus.code).toBe(1);
    expect(badStatus.stderr).toContain("status");
    const badDay = await cli(["jobs", "--from", "27/11/2026"], env);
    expect(badDay.code).toBe(1);
    expect(badDay.stderr).toContain("from: must be a date written YYYY-MM-DD");
  });

  it("refuses a bad --limit: not a number is exit 2, out of range is the server's 400 (exit 1)", async () => {
    const word = await cli(["jobs", "--limit", "ten"], { RETOUCH_API_KEY: account.key });
    expect(word.code).toBe(2);
    expect(word.stderr).toContain("--limit must be a whole number");
    const range = await cli(["jobs", "--limit", "500"], { RETOUCH_API_KEY: account.key });
    expect(range.code).toBe(1);
    expect(range.stderr).toContain("limit: must be a whole number from 1 to 100");
  });

  it("has --help", async () => {
    for (const command of [["whoami"], ["jobs"]]) {
      const help = await cli([...command, "--help"]);
      expect(help.code).toBe(0);
      expect(help.stdout).toContain(`Usage: retouch ${command.join(" ")}`);
    }
    expect((await cli(["jobs", "--help"])).stdout).toContain("--workflow <w>");
  });
});

describe("retouch apps", () => {
  it("lists the MCP clients connected with OAuth; disconnect ends one; an unknown one is an error", async () => {
    const owner = await keyedAccount(app);
    const env = { RETOUCH_API_KEY: owner.key };
    const none = await cli(["apps"], env);
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).toContain("No connected apps.");

    const { clientId } = await connectApp(app.url, owner.cookie, "Terminal Agent");
    const listed = await cli(["apps"], env);
    expect(listed.stdout).toMatch(/CLIENT ID\s+NAME\s+SCOPES/);
    expect(listed.stdout).toContain(clientId);
    expect(listed.stdout).toContain("Terminal Agent");
    const json = await cli(["apps", "--json"], env);
    expect(JSON.parse(json.stdout)).toEqual((await request(app.url, "GET", "/api/connected-apps", { key: owner.key })).body);

    const disconnected = await cli(["apps", "disconnect", clientId], env);
    expect(disconnected.code, disconnected.stderr).toBe(0);
    expect(disconnected.stdout).toContain(`Disconnected ${clientId}`);
    expect((await cli(["apps"], env)).stdout).toContain("No connected apps.");
    const unknown = await cli(["apps", "disconnect", clientId], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("No connected app");
    const missing = await cli(["apps", "disconnect"], env);
    expect(missing.code).toBe(2);
  });
});

describe("retouch logout", () => {
  it("ends the session on the server, not only on this machine", async () => {
    expect((await cli(["login", "--email", account.email], { RETOUCH_PASSWORD: account.password })).code).toBe(0);
    const cookie = JSON.parse(await readFile(path.join(home, "config.json"), "utf8")).sessionCookie as string;
    expect((await request(app.url, "GET", "/api/account", { cookie })).status).toBe(200);
    const logout = await cli(["logout"]);
    expect(logout.code, logout.stderr).toBe(0);
    expect(logout.stdout).toContain("the session was ended on the server");
    expect((await request(app.url, "GET", "/api/account", { cookie })).status).toBe(401);
    expect(JSON.parse(await readFile(path.join(home, "config.json"), "utf8")).sessionCookie).toBeUndefined();
  });
});
