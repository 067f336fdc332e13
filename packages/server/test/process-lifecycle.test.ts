import { readFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey, signUp } from "../../../test/support/accounts";
import { freePort } from "../../../test/support/free-port";
import { request } from "../../../test/support/http-client";
import { verificationLinkFor } from "../../../test/support/outbox";
import { type RetouchProcess, runAdmin, spawnRetouch, spawnServerEntry } from "../../../test/support/spawn-retouch";
import { createTestDatabase } from "../../../test/support/test-database";
import { MALLOC_SETTINGS } from "../scripts/malloc-settings.mjs";

/**
 * The real entry point as an operator runs it: its own embedded PostgreSQL in
 * a fresh data directory, signals, crashes and restarts.
 */

let dataDir: string;
let port: number;
let env: Record<string, string>;
const running = new Set<RetouchProcess>();

function start(extra: Record<string, string> = {}, args: string[] = []): RetouchProcess {
  const proc = spawnRetouch({ ...env, ...extra }, args);
  running.add(proc);
  void proc.exited.then(() => running.delete(proc));
  return proc;
}

async function postmasterPid(): Promise<number | undefined> {
  const text = await readFile(path.join(dataDir, "postgres", "postmaster.pid"), "utf8").catch(() => undefined);
  return text ? Number(text.split("\n")[0]) : undefined;
}

function onGlibcLinux(): boolean {
  const report = process.report.getReport() as { header?: { glibcVersionRuntime?: string } };
  return process.platform === "linux" && Boolean(report.header?.glibcVersionRuntime);
}

/** Running, and not a zombie (this container's init may not reap the orphaned postmaster). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
}

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), "retouch-proc-"));
  port = await freePort();
  env = { PORT: String(port), HOST: "127.0.0.1", RETOUCH_DATA_DIR: dataDir, LOG_LEVEL: "info" };
});

afterAll(async () => {
  for (const proc of running) proc.child.kill("SIGKILL");
  const pid = await postmasterPid();
  if (pid && alive(pid)) process.kill(pid, "SIGKILL");
  await rm(dataDir, { recursive: true, force: true });
});

describe("the service process", { timeout: 90_000 }, () => {
  const base = () => `http://127.0.0.1:${port}`;
  let email: string;
  let password: string;

  it("runs the whole account flow on a fresh embedded database", async () => {
    const server = start();
    await server.waitForLog(/Retouch is listening/);
    expect(server.output()).toMatch(/embedded PostgreSQL cluster initialised/);

    const account = await signUp(base());
    ({ email, password } = account);
    const link = new URL(await verificationLinkFor(path.join(dataDir, "outbox"), email));
    expect(server.output()).toContain(link.searchParams.get("token"));
    // The built service serves the dashboard: the link verifies (it signs no one in) and lands on its sign-in page.
    const landing = await fetch(`${base()}${link.pathname}${link.search}`, { redirect: "manual" });
    expect(landing.status).toBe(303);
    expect(landing.headers.get("location")).toBe("/sign-in?verified=1");
    expect(landing.headers.getSetCookie()).toEqual([]);
    const page = await fetch(new URL(landing.headers.get("location") as string, base()), { headers: { accept: "text/html" } });
    expect(await page.text()).toContain('<div id="root">');

    const signIn = await request(base(), "POST", "/auth/sign-in/email", { body: { email, password } });
    expect(signIn.status).toBe(200);
    const cookie = (signIn.headers.getSetCookie()[0] as string).split(";")[0] as string;
    const { key, id } = await createKey(base(), { cookie }, "fresh clone");
    const listed = await request(base(), "GET", "/api/keys", { key });
    expect(listed.body.keys.map((entry: { id: string }) => entry.id)).toEqual([id]);
    expect((await request(base(), "GET", "/api/webhooks/secret", { key })).status).toBe(200);
    expect((await request(base(), "DELETE", `/api/keys/${id}`, { key })).body).toEqual({ ok: true });
    expect((await request(base(), "GET", "/api/keys", { key })).status).toBe(401);
    expect(server.output()).not.toContain(key);
    expect(server.output()).not.toContain(password);

    server.child.kill("SIGTERM");
    expect(await server.exited).toBe(0);
  });

  it("on SIGTERM stops accepting, finishes the request in flight, then stops its database", async () => {
    const server = start();
    await server.waitForLog(/Retouch is listening/);
    const pid = await postmasterPid();
    expect(pid && alive(pid)).toBe(true);

    // A request whose body is still arriving is in flight.
    const { request: httpRequest } = await import("node:http");
    const body = JSON.stringify({ email, password });
    const inFlight = new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = httpRequest(
        {
          host: "127.0.0.1",
          port,
          path: "/auth/sign-in/email",
          method: "POST",
          headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
        },
        (res) => {
          let text = "";
          res.on("data", (chunk) => (text += chunk));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
        },
      );
      req.on("error", reject);
      req.write(body.slice(0, 10));
      setTimeout(() => {
        server.child.kill("SIGTERM");
        setTimeout(() => req.end(body.slice(10)), 300);
      }, 100);
    });
    await server.waitForLog(/shutting down/);
    await expect(fetch(`${base()}/healthz`)).rejects.toThrow();
    const finished = await inFlight;
    expect(finished.status).toBe(200);
    expect(JSON.parse(finished.text).user.email).toBe(email);
    expect(await server.exited).toBe(0);
    expect(alive(pid as number)).toBe(false);
  });

  it("recovers at start after a SIGKILL left the database running (orphaned postmaster)", async () => {
    const first = start();
    await first.waitForLog(/Retouch is listening/);
    const pid = await postmasterPid();
    first.child.kill("SIGKILL");
    await first.exited;
    expect(alive(pid as number)).toBe(true);

    const second = start();
    await second.waitForLog(/Retouch is listening/);
    expect(second.output()).toMatch(/recovering the embedded PostgreSQL/);
    expect(await postmasterPid()).toBe(pid);
    const signIn = await request(base(), "POST", "/auth/sign-in/email", { body: { email, password } });
    expect(signIn.status).toBe(200);
    second.child.kill("SIGTERM");
    expect(await second.exited).toBe(0);
    expect(alive(pid as number)).toBe(false);
  });

  it("recovers at start after both the service and its database were SIGKILLed (stale postmaster.pid)", async () => {
    const first = start();
    await first.waitForLog(/Retouch is listening/);
    const pid = (await postmasterPid()) as number;
    first.child.kill("SIGKILL");
    process.kill(pid, "SIGKILL");
    await first.exited;
    while (alive(pid)) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await postmasterPid()).toBe(pid);

    const second = start();
    await second.waitForLog(/Retouch is listening/, 60_000);
    expect(second.output()).toMatch(/stale postmaster.pid/);
    const signIn = await request(base(), "POST", "/auth/sign-in/email", { body: { email, password } });
    expect(signIn.status).toBe(200);
    second.child.kill("SIGTERM");
    expect(await second.exited).toBe(0);
  });

  it("runs through `pnpm start`'s launcher, which finds the bundle up to date and sets glibc's allocator", async () => {
    const server = spawnServerEntry("scripts/run-built.mjs", ["main"], env);
    running.add(server);
    await server.waitForLog(/Retouch is listening/);
    expect(server.output()).not.toMatch(/Building the server/);
    if (onGlibcLinux()) {
      // The same process (so signals and the exit code below are the launcher's), now under the settings.
      const environment = readFileSync(`/proc/${server.child.pid}/environ`, "utf8").split("\0");
      for (const [name, value] of Object.entries(MALLOC_SETTINGS)) expect(environment).toContain(`${name}=${value}`);
    }
    expect((await fetch(`${base()}/healthz`)).status).toBe(200);
    server.child.kill("SIGTERM");
    expect(await server.exited).toBe(0);
  });

  it("exits with the reason when its port is taken, stopping the database it started", async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(port, "127.0.0.1", resolve));
    try {
      const server = start();
      expect(await server.exited).toBe(1);
      expect(server.output()).toMatch(/Retouch failed to start: Error: listen EADDRINUSE/);
      expect(server.output()).toMatch(/embedded PostgreSQL stopped/);
      const pid = await postmasterPid();
      expect(pid === undefined || !alive(pid)).toBe(true);
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });

  it("shares one embedded database between processes (api + worker roles)", async () => {
    const api = start({}, ["--role", "api"]);
    await api.waitForLog(/Retouch is listening/);
    const otherPort = await freePort();
    const second = start({ PORT: String(otherPort) }, ["--role", "api"]);
    await second.waitForLog(/Retouch is listening/);
    expect(second.output()).toMatch(/using the embedded PostgreSQL started by another Retouch process/);
    const signIn = await request(`http://127.0.0.1:${otherPort}`, "POST", "/auth/sign-in/email", { body: { email, password } });
    expect(signIn.status).toBe(200);
    // Without PORT: a worker given one listens on it, and this one is the API's.
    const worker = start({ PORT: "" }, ["--role", "worker"]);
    await worker.waitForLog(/using the embedded PostgreSQL started by another Retouch process/);
    worker.child.kill("SIGTERM");
    second.child.kill("SIGTERM");
    expect(await second.exited).toBe(0);
    expect(await worker.exited).toBe(0);
    api.child.kill("SIGTERM");
    expect(await api.exited).toBe(0);
  });
});

describe("pnpm retouch admin", { timeout: 90_000 }, () => {
  it("acts on the running server's embedded database", async () => {
    const server = start();
    await server.waitForLog(/Retouch is listening/);
    const base = `http://127.0.0.1:${port}`;
    const account = await signUp(base);
    expect((await request(base, "POST", "/api/keys", { cookie: account.cookie, body: { name: "k" } })).status).toBe(403);

    const verified = await runAdmin(["verify-email", account.email], env);
    expect(verified.code, verified.output).toBe(0);
    expect(verified.output).toContain(`Verified ${account.email}`);
    expect((await request(base, "POST", "/api/keys", { cookie: account.cookie, body: { name: "k" } })).status).toBe(201);

    const granted = await runAdmin(["grant-credits", account.email, "15"], env);
    expect(granted.output).toContain("balance is now 25");
    const plan = await runAdmin(["set-plan", account.email, "pro"], env);
    expect(plan.code).toBe(0);
    const shown = await runAdmin(["show", account.email], env);
    expect(JSON.parse(shown.output.slice(shown.output.indexOf("{")))).toMatchObject({
      plan: "pro",
      credits: 25,
      emailVerified: true,
    });

    const unknown = await runAdmin(["verify-email", "nobody@example.com"], env);
    expect(unknown.code).toBe(1);
    expect(unknown.output).toContain("No account with the email nobody@example.com");
    const badPlan = await runAdmin(["set-plan", account.email, "gold"], env);
    expect(badPlan.code).toBe(2);

    server.child.kill("SIGTERM");
    expect(await server.exited, server.output()).toBe(0);
  });

  it("acts on DATABASE_URL", async () => {
    const database = await createTestDatabase();
    const otherPort = await freePort();
    const server = start({ DATABASE_URL: database.url, PORT: String(otherPort) });
    await server.waitForLog(/Retouch is listening/);
    expect(server.output()).not.toMatch(/embedded PostgreSQL/);
    const account = await signUp(`http://127.0.0.1:${otherPort}`);
    const verified = await runAdmin(["verify-email", account.email], { ...env, DATABASE_URL: database.url });
    expect(verified.code, verified.output).toBe(0);
    const key = await request(`http://127.0.0.1:${otherPort}`, "POST", "/api/keys", {
      cookie: account.cookie,
      body: { name: "k" },
    });
    expect(key.status).toBe(201);
    server.child.kill("SIGTERM");
    expect(await server.exited).toBe(0);
    await database.drop();
  });
});

describe("configuration", () => {
  it("fails fast, naming every bad variable", async () => {
    const proc = spawnRetouch({ ...env, PORT: "eighty", SMTP_URL: "ftp://mail", RETOUCH_DEFAULT_PLAN: "gold" });
    expect(await proc.exited).toBe(2);
    const output = proc.output();
    expect(output).toContain("Invalid configuration");
    for (const name of ["PORT", "SMTP_URL", "RETOUCH_DEFAULT_PLAN"]) expect(output).toContain(name);
  });
});
