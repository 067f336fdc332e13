import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { type Config, createLogger, parseConfig, type ServiceDependencies, type Services } from "@retouch/core";
import { type Role, startRetouch } from "@retouch/server";
import { freePort } from "./free-port";
import { createTestDatabase } from "./test-database";

export interface TestApp {
  url: string;
  config: Config;
  services: Services;
  /** Every log line the app wrote, as JSON text. */
  logs: string[];
  outboxDir: string;
  /** Stops the process's services and starts them again on the same database and data directory. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A real Retouch (HTTP on loopback, its own database) inside the test process.
 * `dashboardDir`: a built dashboard to serve at `/` (by default none is served).
 */
export async function startTestApp(
  env: Record<string, string> = {},
  options: { role?: Role; dashboardDir?: string; fetchClientMetadata?: ServiceDependencies["fetchClientMetadata"] } = {},
): Promise<TestApp> {
  const database = await createTestDatabase();
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "retouch-test-"));
  const port = await freePort();
  const config = parseConfig({
    PORT: String(port),
    HOST: "127.0.0.1",
    RETOUCH_DATA_DIR: dataDir,
    DATABASE_URL: database.url,
    LOG_LEVEL: "debug",
    RETOUCH_SIGNUP_RATE_LIMIT: "1000/1h",
    // Tests never reach for the real model hosts; the model tests point a mirror at loopback.
    RETOUCH_MODEL_DOWNLOAD: "off",
    ...env,
  });
  const logs: string[] = [];
  const logger = createLogger(config.logLevel, { write: (line: string) => void logs.push(line) });
  const start = () =>
    startRetouch({
      config,
      logger,
      role: options.role ?? "all",
      ...(options.dashboardDir ? { dashboardDir: options.dashboardDir } : {}),
      ...(options.fetchClientMetadata ? { fetchClientMetadata: options.fetchClientMetadata } : {}),
    });
  let app: Awaited<ReturnType<typeof start>>;
  try {
    app = await start();
  } catch (error) {
    // A start refused (a store that is down, say) still leaves nothing behind.
    await database.drop();
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
  if (!app.http) throw new Error("test app has no HTTP server");
  const testApp: TestApp = {
    url: app.http.url,
    config,
    services: app.services,
    logs,
    outboxDir: path.join(dataDir, "outbox"),
    async restart() {
      await app.close();
      app = await start();
      testApp.services = app.services;
    },
    async close() {
      await app.close();
      await database.drop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
  return testApp;
}

/** The first log line (JSON) of `app` that matches `pattern`, waiting for it up to `timeoutMs`. */
export async function waitForLog(app: TestApp, pattern: RegExp, timeoutMs = 30_000): Promise<Record<string, unknown>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const line = app.logs.find((candidate) => pattern.test(candidate));
    if (line) return JSON.parse(line);
    if (Date.now() > deadline) throw new Error(`no log line matches ${pattern}:\n${app.logs.join("")}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
