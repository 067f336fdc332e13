import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createKey, signUpVerified } from "../../../test/support/accounts";
import { freePort } from "../../../test/support/free-port";
import { type RetouchProcess, spawnRetouch } from "../../../test/support/spawn-retouch";
import { startTestApp, type TestApp } from "../../../test/support/test-app";
import { createTestDatabase } from "../../../test/support/test-database";

/**
 * The connection caps and timeouts of the host, over real sockets on
 * loopback: 127.0.0.1 and 127.0.0.2 are different client addresses to the
 * server (Linux routes all of 127/8 to lo).
 */

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** An idle connection: connected, sends nothing. */
function openIdle(url: string, localAddress: string): Promise<net.Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: hostname, port: Number(port), localAddress });
    socket.once("connect", () => resolve(socket));
    socket.once("error", reject);
  });
}

/** Reads what the server sends on a fresh connection until it closes it (the client sends `send`, if given). */
function readUntilClosed(url: string, localAddress: string, send?: string): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: hostname, port: Number(port), localAddress });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer and no close within 5 s (${Buffer.concat(chunks).toString("latin1")})`));
    }, 5_000);
    socket.on("connect", () => {
      if (send) socket.write(send);
    });
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(parseAnswer(Buffer.concat(chunks).toString("latin1")));
    });
  });
}

function parseAnswer(text: string): RawAnswer {
  const [head = "", body = ""] = text.split("\r\n\r\n", 2);
  const [statusLine = "", ...lines] = head.split("\r\n");
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine.split(" ")[1] ?? 0), headers, body };
}

/** GET through a fresh connection from `localAddress`. */
function getFrom(
  url: string,
  path: string,
  localAddress: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${url}${path}`, { localAddress, agent: false, timeout: 5_000, headers }, (res) => {
      const parts: Buffer[] = [];
      res.on("data", (part: Buffer) => parts.push(part));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString("utf8") }));
    });
    req.on("timeout", () => req.destroy(new Error("no answer within 5 s")));
    req.on("error", reject);
  });
}

async function closeAll(sockets: net.Socket[]): Promise<void> {
  await Promise.all(
    sockets.splice(0).map(
      (socket) =>
        new Promise<void>((resolve) => {
          if (socket.destroyed) return resolve();
          socket.once("close", () => resolve());
          socket.destroy();
        }),
    ),
  );
}

describe("connection caps", { timeout: 60_000 }, () => {
  let app: TestApp;
  const flood: net.Socket[] = [];

  beforeAll(async () => {
    app = await startTestApp({ RETOUCH_MAX_CONNECTIONS: "64", RETOUCH_MAX_CONNECTIONS_PER_ADDRESS: "32" });
  });
  afterEach(async () => closeAll(flood));
  afterAll(async () => app?.close());

  it("answers 503 with Retry-After to one address over its cap, while another address is served", async () => {
    for (let i = 0; i < 32; i++) flood.push(await openIdle(app.url, "127.0.0.1"));

    const refused = await readUntilClosed(app.url, "127.0.0.1", "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    expect(refused.status).toBe(503);
    expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
    expect(refused.headers.connection).toBe("close");
    expect(JSON.parse(refused.body)).toMatchObject({ code: "service_unavailable", message: expect.any(String) });

    expect(await getFrom(app.url, "/healthz", "127.0.0.2")).toMatchObject({ status: 200 });
  });

  it("answers 503 to everyone at the total cap, and serves again as soon as the flood closes", async () => {
    for (let i = 0; i < 32; i++) flood.push(await openIdle(app.url, "127.0.0.3"));
    for (let i = 0; i < 32; i++) flood.push(await openIdle(app.url, "127.0.0.4"));

    // Even the refusal of a client that sends nothing is an answer, not a reset.
    const refused = await readUntilClosed(app.url, "127.0.0.5");
    expect(refused.status).toBe(503);
    expect(refused.headers["retry-after"]).toBeDefined();
    expect(JSON.parse(refused.body).code).toBe("service_unavailable");
    expect((await getFrom(app.url, "/healthz", "127.0.0.2")).status).toBe(503);

    await closeAll(flood);
    // The server sees the closes on its next turn of the event loop: ask until it has.
    await vi.waitFor(async () => expect(await getFrom(app.url, "/healthz", "127.0.0.3")).toMatchObject({ status: 200 }), {
      timeout: 5_000,
      interval: 20,
    });
    expect(await getFrom(app.url, "/healthz", "127.0.0.5")).toMatchObject({ status: 200 });
  });

  it("logs a refusal as a warning, not an error", () => {
    const refusals = app.logs.filter((line) => /too many open connections/i.test(line));
    expect(refusals.length).toBeGreaterThan(0);
    for (const line of refusals) expect(JSON.parse(line).level).toBe(40);
  });
});

describe("header and idle timeouts", { timeout: 60_000 }, () => {
  let app: TestApp;

  beforeAll(async () => {
    app = await startTestApp({ RETOUCH_HEADERS_TIMEOUT: "2s" });
  });
  afterAll(async () => app?.close());

  it("closes a connection whose headers trickle in past the headers timeout", async () => {
    const { hostname, port } = new URL(app.url);
    const socket = net.connect({ host: hostname, port: Number(port) });
    await new Promise((resolve) => socket.once("connect", resolve));
    socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\n");
    // A header line every half second: never idle, never done.
    const trickle = setInterval(() => {
      if (!socket.destroyed) socket.write("X-Slow: 1\r\n");
    }, 500);
    const chunks: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", () => {});
    const closed = await new Promise<boolean>((resolve) => {
      socket.once("close", () => resolve(true));
      setTimeout(() => resolve(false), 10_000);
    });
    clearInterval(trickle);
    socket.destroy();
    expect(closed).toBe(true);
    // Node answers the timed-out request 408 before it closes.
    expect(Buffer.concat(chunks).toString("latin1")).toMatch(/^HTTP\/1\.1 408/);
  });

  it("closes a connection that never sends a request after the headers timeout", async () => {
    const started = Date.now();
    // What the client saw, for the failure message: this failed once in about seven CI runs (two forks
    // sharing two cores) and could not be reproduced; the next failure should say more.
    const seen: string[] = [];
    const answer = await new Promise<{ closed: boolean }>((resolve) => {
      const { hostname, port } = new URL(app.url);
      const socket = net.connect({ host: hostname, port: Number(port) });
      socket.on("connect", () => seen.push(`connected after ${Date.now() - started} ms`));
      socket.on("data", (chunk: Buffer) => seen.push(`${chunk.length} bytes: ${chunk.toString("latin1", 0, 40)}`));
      socket.on("end", () => seen.push(`end after ${Date.now() - started} ms`));
      socket.on("error", (error) => seen.push(`error ${error.message}`));
      socket.once("close", () => resolve({ closed: true }));
      setTimeout(() => {
        socket.destroy();
        resolve({ closed: false });
      }, 10_000);
    });
    expect(answer.closed, `${seen.join("; ")}\n${app.logs.slice(-5).join("")}`).toBe(true);
  });
});

describe("a flood past the process's file descriptors", { timeout: 120_000 }, () => {
  const OPEN_FILES = 400;
  let database: { url: string; drop(): Promise<void> };
  let dataDir: string;
  let server: RetouchProcess | undefined;
  const flood: net.Socket[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    dataDir = await mkdtemp(path.join(os.tmpdir(), "retouch-flood-"));
  });
  afterAll(async () => {
    await closeAll(flood);
    server?.child.kill("SIGKILL");
    await server?.exited;
    await database?.drop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it("answers legitimate requests 200 or 503, never 500, and recovers as soon as the flood ends", async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    server = spawnRetouch(
      { PORT: String(port), HOST: "127.0.0.1", DATABASE_URL: database.url, RETOUCH_DATA_DIR: dataDir, LOG_LEVEL: "info" },
      [],
      { openFiles: OPEN_FILES },
    );
    await server.waitForLog(/Retouch is listening/);
    // The default cap leaves the pools and a margin of the 400 descriptors to the process itself.
    const limits = JSON.parse(await server.waitForLog(/"connection limits"/));
    expect(limits.maxConnections).toBeGreaterThan(50);
    expect(limits.maxConnections).toBeLessThan(OPEN_FILES - 200);
    const account = await signUpVerified({ url: base, outboxDir: path.join(dataDir, "outbox") });
    const { key } = await createKey(base, account);
    // A request that needs the database (the key, then the deliveries): the descriptors it needs are the point.
    const legitimate = () =>
      getFrom(base, "/api/webhooks/deliveries", "127.0.0.2", { authorization: `Bearer ${key}` }).then(
        (answer) => answer.status,
        (error: Error) => error.message,
      );
    expect(await legitimate()).toBe(200);

    // More connections than the process has descriptors, from ten addresses (under the per-address cap).
    const outcomes = { open: 0, failed: 0 };
    await Promise.all(
      Array.from({ length: 10 }, async (_, lane) => {
        for (let i = 0; i < 50; i++) {
          const socket = await openIdle(base, `127.0.0.${10 + lane}`).catch(() => undefined);
          if (socket) {
            socket.on("error", () => {});
            flood.push(socket);
            outcomes.open++;
          } else outcomes.failed++;
        }
      }),
    );
    const during: Array<number | string> = [];
    for (let i = 0; i < 20; i++) during.push(await legitimate());
    for (const status of during) expect([200, 503]).toContain(status);
    expect(during).toContain(503);

    await closeAll(flood);
    // The server sees the closes on its next turn of the event loop: ask until it has, then every request is served.
    await vi.waitFor(async () => expect(await legitimate()).toBe(200), { timeout: 5_000, interval: 20 });
    const after: Array<number | string> = [];
    for (let i = 0; i < 5; i++) after.push(await legitimate());
    expect(after).toEqual([200, 200, 200, 200, 200]);
    expect(server.output()).not.toMatch(/"level":50/);
  });
});
