import type { Kysely } from "kysely";
import { Migrator } from "kysely/migration";
import { migrations } from "./migrations/index";

export interface MigrationReport {
  applied: string[];
}

/** Brings the schema to the latest version; safe to run from several processes at once (Kysely takes a lock). */
export async function migrateToLatest<DB>(db: Kysely<DB>): Promise<MigrationReport> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    migrationTableName: "schema_migrations",
    migrationLockTableName: "schema_migrations_lock",
  });
  const { error, results = [] } = await migrator.migrateToLatest();
  const failed = results.find((result) => result.status === "Error");
  if (error || failed) {
    throw new Error(`Database migration ${failed?.migrationName ?? ""} failed`, { cause: error });
  }
  return { applied: results.filter((result) => result.status === "Success").map((result) => result.migrationName) };
}
