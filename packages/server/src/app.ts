import path from "node:path";
import { type Config, createMailer, createServices, type Logger, type Services } from "@retouch/core";
import { resolveAuthSecret } from "./auth-secret";
import { type HttpServer, startHttpServer } from "./http/http-server";
import { openConfiguredDatabase } from "./postgres/database";

export type Role = "api" | "worker" | "all";

export interface RetouchApp {
  services: Services;
  /** Set when the role serves HTTP. */
  http: HttpServer | undefined;
  close(): Promise<void>;
}

const HOUR = 3_600_000;

/** Starts one Retouch process: database, services, and the parts its role runs. */
export async function startRetouch(options: { config: Config; logger: Logger; role?: Role }): Promise<RetouchApp> {
  const { config, logger } = options;
  const role = options.role ?? "all";
  const database = await openConfiguredDatabase(config, logger);
  const mailer = createMailer({
    ...(config.smtpUrl ? { smtpUrl: config.smtpUrl } : {}),
    from: config.mailFrom,
    outboxDir: path.join(config.dataDir, "outbox"),
    logger,
  });
  const services = createServices({
    db: database.db,
    config,
    logger,
    mailer,
    authSecret: await resolveAuthSecret(config),
  });

  let http: HttpServer | undefined;
  try {
    if (role === "api" || role === "all") {
      http = await startHttpServer(services, { host: config.host, port: config.port });
      logger.info({ url: http.url, publicBaseUrl: config.publicBaseUrl, role, database: database.kind }, "Retouch is listening");
    }
  } catch (error) {
    mailer.close();
    await database.shutdown();
    throw error;
  }

  // Old rate-limit windows are useless after a day; sweep them hourly.
  const maintenance = setInterval(() => {
    services.stores.rateLimits.deleteOlderThan(new Date(Date.now() - 24 * HOUR)).catch((error: unknown) => {
      logger.warn({ err: error }, "rate-limit sweep failed");
    });
  }, HOUR);
  maintenance.unref();

  let closing: Promise<void> | undefined;
  return {
    services,
    http,
    close() {
      closing ??= (async () => {
        clearInterval(maintenance);
        await http?.close(config.shutdownTimeoutMs);
        mailer.close();
        await database.shutdown();
        logger.info("Retouch stopped");
      })();
      return closing;
    },
  };
}
