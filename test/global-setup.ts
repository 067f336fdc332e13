import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { createLogger, migrateToLatest, openDatabase } from "@retouch/core";
import { startEmbeddedPostgres } from "@retouch/server";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { ensureServerBuild } from "../packages/server/scripts/build-if-stale.mjs";

export const TEMPLATE_DATABASE = "retouch_template";

declare module "vitest" {
  export interface ProvidedContext {
    /** Connection URL of the shared test cluster's maintenance database. */
    postgresAdminUrl: string;
    templateDatabase: string;
  }
}

const execFileAsync = promisify(execFile);

export default async function setup(project: TestProject) {
  // The published packages are built once, before any test file: the CLI binary, the
  // packed SDK and the examples use the builds, and two files building at once would race.
  await execFileAsync("pnpm", ["--filter", "@retouch/sdk", "--filter", "@retouch/cli", "--sort", "run", "build"], {
    cwd: path.resolve(import.meta.dirname, ".."),
  });
  // The process tests run the server's bundle, as `pnpm start` does: built here when its sources changed.
  ensureServerBuild({ quiet: true });

  const dataDir = await mkdtemp(path.join(os.tmpdir(), "retouch-test-pg-"));
  const postgres = await startEmbeddedPostgres({ dataDir, logger: createLogger("warn") });
  const adminUrl = postgres.url.replace(/\/retouch$/, "/postgres");

  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${TEMPLATE_DATABASE}`);
  await admin.end();
  const template = openDatabase(adminUrl.replace(/\/postgres$/, `/${TEMPLATE_DATABASE}`), { maxConnections: 1 });
  await migrateToLatest(template.db);
  await template.close();

  project.provide("postgresAdminUrl", adminUrl);
  project.provide("templateDatabase", TEMPLATE_DATABASE);

  return async () => {
    await postgres.stop();
    await rm(dataDir, { recursive: true, force: true });
  };
}
