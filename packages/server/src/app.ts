import path from "node:path";
import {
  type Config,
  createMailer,
  createQueueWorker,
  createServices,
  type ImageProcessor,
  JobQueue,
  type Logger,
  ModelProvisioner,
  modelFileLabel,
  openBlobStore,
  RetouchMetrics,
  type ServiceDependencies,
  ServiceSecretsStore,
  type Services,
} from "@retouch/core";
import { EnginePool, type EnginePoolOptions } from "@retouch/engine";
import pg from "pg";
import { resolveAuthSecret } from "./auth-secret";
import { type HttpServer, startHttpServer } from "./http/http-server";
import { type OpenedDatabase, openConfiguredDatabase } from "./postgres/database";

export type Role = "api" | "worker" | "all";

export interface RetouchApp {
  services: Services;
  /** Set when the role serves HTTP. */
  http: HttpServer | undefined;
  /** Set when the role works the queue. */
  processor: ImageProcessor | undefined;
  close(): Promise<void>;
}

/**
 * Starts one Retouch process: database, services, and the parts its role runs.
 * `database`, when given, is the configured database already being opened
 * (the entry starts it before loading this module); it is closed with the app.
 */
export async function startRetouch(options: {
  config: Config;
  logger: Logger;
  role?: Role;
  database?: Promise<OpenedDatabase>;
  /** The built dashboard to serve at `/` (a directory with index.html); none: `/` says how to build it. */
  dashboardDir?: string;
  /** For tests: how MCP clients' metadata documents are fetched (see ServiceDependencies). */
  fetchClientMetadata?: ServiceDependencies["fetchClientMetadata"];
}): Promise<RetouchApp> {
  const { config, logger } = options;
  const role = options.role ?? "all";
  const database = await (options.database ?? openConfiguredDatabase(config, logger));
  // The queue has its own small pool: LISTEN holds one connection for good. Its writes
  // skip the wait for the disk flush: the jobs table is the durable record, and the
  // maintenance sweep re-enqueues any job whose queue entry a crash lost.
  const queuePool = new pg.Pool({
    connectionString: database.url,
    max: config.workerConcurrency + 4,
    connectionTimeoutMillis: 10_000,
    options: "-c synchronous_commit=off",
  });
  queuePool.on("error", (error) => logger.warn({ err: error }, "queue database connection lost"));
  const queue = new JobQueue({ pool: queuePool, config, logger });
  const mailer = createMailer({
    ...(config.smtpUrl ? { smtpUrl: config.smtpUrl } : {}),
    from: config.mailFrom,
    outboxDir: path.join(config.dataDir, "outbox"),
    logger,
  });
  // One registry per process (never prom-client's global one): what /metrics shows on this role.
  const metrics = new RetouchMetrics();
  const services = createServices({
    metrics,
    db: database.db,
    config,
    logger,
    mailer,
    authSecret: await resolveAuthSecret(config, new ServiceSecretsStore(database.db)),
    queue,
    blobs: await openBlobStore(config),
    ...(options.fetchClientMetadata ? { fetchClientMetadata: options.fetchClientMetadata } : {}),
  });

  let engine: EnginePool | undefined;
  const poolOptions: EnginePoolOptions = {
    onModelLoaded: (file, seconds) => metrics.modelSessionLoadDuration.observe({ model: modelFileLabel(file) }, seconds),
  };
  let models: ModelProvisioner | undefined;
  let processor: ImageProcessor | undefined;
  let http: HttpServer | undefined;
  let queueStarted = false;
  try {
    // A store that is down or refuses (bad credentials, missing bucket) stops the start, with the store's answer:
    // better than accepting jobs whose images cannot be kept.
    await services.blobs.check();
    logger.info({ blobStore: services.blobs.kind, resultUrls: config.resultUrls }, "blob store reachable");
    if (role === "worker" || role === "all") {
      // The threads start with what is on disk; a missing model is fetched once the service is up.
      models = new ModelProvisioner({ config, logger, metrics });
      engine = new EnginePool(config.workerConcurrency, await models.initialOptions(), logger, poolOptions);
      services.selections.useEngine(engine);
      const worker = createQueueWorker(services, { engine, workerId: queue.workerId });
      processor = worker.processor;
      queue.work(worker.handlers);
    }
    await queue.start();
    queueStarted = true;
    if (role === "api") {
      // Click-to-select runs where its requests arrive: a pool with no edit threads, whose inference
      // thread starts only at the first selection.
      engine = new EnginePool(
        0,
        { objectSegmenter: config.objectSegmenter, maxPixels: config.maxImagePixels },
        logger,
        poolOptions,
      );
      services.selections.useEngine(engine);
    }
    if (role === "api" || role === "all") {
      http = await startHttpServer(services, { host: config.host, port: config.port, dashboardDir: options.dashboardDir });
      logger.info({ url: http.url, publicBaseUrl: config.publicBaseUrl, role, database: database.kind }, "Retouch is listening");
    } else {
      // A worker answers probes and scrapes only where PORT says so: a worker beside an API process on one
      // machine (the same environment, PORT unset for it) must not compete for the API's port.
      if (config.portSet) {
        http = await startHttpServer(services, { host: config.host, port: config.port, routes: "operations" });
      }
      logger.info(
        { role, concurrency: config.workerConcurrency, database: database.kind, ...(http ? { url: http.url } : {}) },
        "Retouch worker is running",
      );
    }
    const pool = engine;
    if (pool) models?.start((options) => pool.reconfigure(options));
    await queue.scheduleMaintenance();
  } catch (error) {
    // better-auth initialises in the background from its creation (the OAuth provider seeds its resources):
    // let that finish, or it meets a closed database after the failure it has nothing to do with.
    await services.auth.$context.catch(() => undefined);
    await models?.stop();
    await http?.close(0);
    // A started queue holds a LISTEN connection: the pool would wait for it forever.
    if (queueStarted) await queue.stop(0);
    await engine?.close();
    services.blobs.close?.();
    mailer.close();
    await queuePool.end();
    await database.shutdown();
    throw error;
  }

  let closing: Promise<void> | undefined;
  return {
    services,
    http,
    processor,
    close() {
      closing ??= (async () => {
        // Requests first (they may enqueue), then the jobs in flight, then the connections.
        await http?.close(config.shutdownTimeoutMs);
        await queue.stop(config.shutdownTimeoutMs);
        await models?.stop();
        await engine?.close();
        services.blobs.close?.();
        mailer.close();
        // As on a failed start: a service closed right after it started (a test, a quick restart) may still be
        // seeding better-auth's OAuth resources, whose insert would meet a destroyed database (CI saw it once).
        await services.auth.$context.catch(() => undefined);
        await queuePool.end();
        await database.shutdown();
        logger.info("Retouch stopped");
      })();
      return closing;
    },
  };
}
