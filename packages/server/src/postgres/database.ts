import { type Config, type DatabaseHandle, type Logger, migrateToLatest, openDatabase } from "@retouch/core/bootstrap";
import { startEmbeddedPostgres } from "./embedded-postgres";

export interface OpenedDatabase extends DatabaseHandle {
  /** Where it runs: "external" (DATABASE_URL) or "embedded". */
  kind: "external" | "embedded";
  /** Its connection URL, for the components that open their own pool (the queue). */
  url: string;
  /** Closes the pool and stops the embedded server if this process owns it. */
  shutdown(): Promise<void>;
}

/** `DATABASE_URL` when set, else the embedded PostgreSQL in the data directory; migrated to the latest schema. */
export async function openConfiguredDatabase(
  config: Pick<Config, "databaseUrl" | "dataDir" | "embeddedPostgresPort">,
  logger: Logger,
  options: {
    maxConnections?: number;
    /** See `startEmbeddedPostgres`; with `DATABASE_URL`, called at once. */
    onBooting?: () => void;
  } = {},
): Promise<OpenedDatabase> {
  if (config.databaseUrl) options.onBooting?.();
  const embedded = config.databaseUrl
    ? undefined
    : await startEmbeddedPostgres({
        dataDir: config.dataDir,
        ...(config.embeddedPostgresPort ? { port: config.embeddedPostgresPort } : {}),
        logger,
        ...(options.onBooting ? { onBooting: options.onBooting } : {}),
      });
  const url = config.databaseUrl ?? (embedded?.url as string);
  const handle = openDatabase(url, options);
  try {
    const { applied } = await migrateToLatest(handle.db);
    if (applied.length > 0) logger.info({ applied }, "database migrated");
  } catch (error) {
    await handle.close();
    await embedded?.stop();
    throw error;
  }
  return {
    ...handle,
    kind: embedded ? "embedded" : "external",
    url,
    async shutdown() {
      await handle.close();
      await embedded?.stop();
    },
  };
}
