import { Kysely, PostgresDialect } from "kysely";
import pg from "pg";
import type { Database } from "./schema";

export type Db = Kysely<Database>;

export interface DatabaseHandle {
  db: Db;
  pool: pg.Pool;
  close(): Promise<void>;
}

export function openDatabase(connectionString: string, options: { maxConnections?: number } = {}): DatabaseHandle {
  const pool = new pg.Pool({
    connectionString,
    max: options.maxConnections ?? 20,
    // A dead database should fail requests fast rather than queue them forever.
    connectionTimeoutMillis: 10_000,
  });
  // An idle client losing its connection (database restart) must not crash the process.
  pool.on("error", () => {});
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return {
    db,
    pool,
    // Kysely's destroy() ends the pool it was given.
    close: () => db.destroy(),
  };
}
