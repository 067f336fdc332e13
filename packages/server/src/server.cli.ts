import { parseArgs } from "node:util";
import { BlobStoreError, ConfigError, createLogger, loadConfig } from "@retouch/core/bootstrap";
import { webAssetsDirectory } from "@retouch/web";
import type { Role } from "./app";
import { saveCompileCache } from "./compile-cache";
import { openConfiguredDatabase } from "./postgres/database";

const ROLES: Role[] = ["api", "worker", "all"];

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { role: { type: "string", default: "all" } } });
  const role = values.role as Role;
  if (!ROLES.includes(role)) {
    process.stderr.write(`--role must be one of ${ROLES.join(", ")} (got "${values.role}")\n`);
    process.exit(2);
  }
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  const logger = createLogger(config.logLevel);
  // Handlers go in first: a SIGTERM during start-up waits for start-up, then shuts down cleanly.
  let stopRequested: NodeJS.Signals | undefined;
  let stop: ((signal: NodeJS.Signals) => void) | undefined;
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    signals++;
    if (signals > 1) {
      logger.warn({ signal }, "second signal: exiting now");
      process.exit(1);
    }
    if (stop) stop(signal);
    else stopRequested = signal;
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);

  // PostgreSQL boots in its own process while this one loads the rest of the service. The
  // loading holds the event loop for long stretches, so it waits until PostgreSQL is on its way.
  let booting: () => void = () => {};
  const postgresBooting = new Promise<void>((resolve) => {
    booting = resolve;
  });
  const database = openConfiguredDatabase(config, logger, { onBooting: booting });
  // Never left waiting (a database already up, or one that failed first); a failure surfaces from startRetouch.
  database.then(booting, booting);
  let startRetouch: typeof import("./app").startRetouch;
  try {
    await postgresBooting;
    ({ startRetouch } = await import("./app"));
  } catch (error) {
    await database.then((opened) => opened.shutdown()).catch(() => {});
    throw error;
  }
  // The dashboard, when built (pnpm install builds it): `/` says how to build it otherwise.
  const dashboardDir = webAssetsDirectory();
  const app = await startRetouch({ config, logger, role, database, ...(dashboardDir ? { dashboardDir } : {}) });
  saveCompileCache();
  stop = (signal) => {
    logger.info({ signal }, "shutting down: finishing in-flight requests");
    app.close().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  if (stopRequested) stop(stopRequested);
}

main().catch((error: unknown) => {
  if (error instanceof BlobStoreError || (error instanceof Error && error.name === "BlobStoreError")) {
    // The operator's to fix (bucket, credentials, endpoint): the store's answer says what, a stack would not.
    process.stderr.write(`Retouch failed to start: the blob store is not usable: ${error.message}\n`);
    process.exit(1);
  }
  process.stderr.write(`Retouch failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
