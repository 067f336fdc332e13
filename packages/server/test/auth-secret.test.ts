import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { type DatabaseHandle, openDatabase, ServiceSecretsStore } from "@retouch/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { filesUnder } from "../../../test/support/separate-machines";
import { createTestDatabase } from "../../../test/support/test-database";
import { resolveAuthSecret } from "../src/auth-secret";

/**
 * The signing secret without RETOUCH_AUTH_SECRET is the database's, so that
 * processes on separate machines (separate data directories) share it; the
 * multi-process test shows a worker's signed result URL verifying on the api.
 * Here: processes starting at once agree, an earlier installation's file is
 * adopted, and the operator's setting wins.
 */
let database: Awaited<ReturnType<typeof createTestDatabase>>;
let handle: DatabaseHandle;
let secrets: ServiceSecretsStore;
const dirs: string[] = [];

async function dataDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "retouch-secret-"));
  dirs.push(dir);
  return dir;
}

async function kept(): Promise<string[]> {
  const rows = await handle.db.selectFrom("service_secrets").select("value").where("name", "=", "auth").execute();
  return rows.map((row) => row.value);
}

beforeAll(async () => {
  database = await createTestDatabase();
  handle = openDatabase(database.url, { maxConnections: 4 });
  secrets = new ServiceSecretsStore(handle.db);
});

afterAll(async () => {
  await handle?.close();
  await database?.drop();
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe("the signing secret without RETOUCH_AUTH_SECRET", () => {
  it("an earlier installation's data-directory secret moves into the database, so its sessions and links stay valid", async () => {
    const dir = await dataDir();
    const legacy = "f".repeat(64);
    await writeFile(path.join(dir, "auth-secret"), `${legacy}\n`, { mode: 0o600 });
    expect(await resolveAuthSecret({ authSecret: undefined, dataDir: dir }, secrets)).toBe(legacy);
    expect(await kept()).toEqual([legacy]);
  });

  it("processes on separate machines starting at once all get the one secret the database kept", async () => {
    await handle.db.deleteFrom("service_secrets").execute();
    const machines = await Promise.all(Array.from({ length: 4 }, () => dataDir()));
    const resolved = await Promise.all(
      machines.map((dir) => resolveAuthSecret({ authSecret: undefined, dataDir: dir }, secrets)),
    );
    expect(new Set(resolved).size).toBe(1);
    expect(resolved[0]).toMatch(/^[0-9a-f]{64}$/);
    expect(await kept()).toEqual([resolved[0]]);
    // Nothing is written to a data directory any more.
    for (const dir of machines) expect(await filesUnder(dir)).toEqual([]);
  });

  it("a data-directory file does not replace the secret the database already keeps", async () => {
    const [current] = await kept();
    const dir = await dataDir();
    await writeFile(path.join(dir, "auth-secret"), "e".repeat(64), { mode: 0o600 });
    expect(await resolveAuthSecret({ authSecret: undefined, dataDir: dir }, secrets)).toBe(current);
  });

  it("RETOUCH_AUTH_SECRET wins, and is never written to the database", async () => {
    const before = await kept();
    const operator = "operator-secret-".padEnd(40, "x");
    expect(await resolveAuthSecret({ authSecret: operator, dataDir: await dataDir() }, secrets)).toBe(operator);
    expect(await kept()).toEqual(before);
  });
});
