import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { type DatabaseHandle, openDatabase } from "../src/db/database";
import { migrateToLatest } from "../src/db/migrate";
import { migrations } from "../src/db/migrations/index";

const adminUrl = inject("postgresAdminUrl");
const name = `m_${randomBytes(6).toString("hex")}`;
let handles: DatabaseHandle[] = [];

async function admin(sql: string) {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  await client.query(sql);
  await client.end();
}

beforeAll(() => admin(`create database ${name}`));
afterAll(async () => {
  await Promise.all(handles.map((handle) => handle.close()));
  handles = [];
  await admin(`drop database if exists ${name} with (force)`);
});

it("applies every migration once, in order, even when two processes start together", async () => {
  const url = adminUrl.replace(/\/postgres$/, `/${name}`);
  handles = [openDatabase(url), openDatabase(url)];
  const [first, second] = await Promise.all(handles.map((handle) => migrateToLatest(handle.db)));
  const applied = [...(first?.applied ?? []), ...(second?.applied ?? [])];
  expect(applied.sort()).toEqual(Object.keys(migrations).sort());

  expect((await migrateToLatest(handles[0]?.db as DatabaseHandle["db"])).applied).toEqual([]);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const { rows } = await client.query<{ name: string }>("select name from schema_migrations order by name");
  const tables = await client.query<{ table_name: string }>(
    "select table_name from information_schema.tables where table_schema = 'public' order by table_name",
  );
  await client.end();
  expect(rows.map((row) => row.name)).toEqual(Object.keys(migrations));
  expect(tables.rows.map((row) => row.table_name)).toEqual(
    expect.arrayContaining([
      "user",
      "session",
      "account",
      "verification",
      "profiles",
      "credit_ledger",
      "api_keys",
      "rate_limit_events",
    ]),
  );
});

it("names migrations with a zero-padded sequence so their order is their name order", () => {
  const names = Object.keys(migrations);
  expect(names).toEqual([...names].sort());
  for (const migrationName of names) expect(migrationName).toMatch(/^\d{4}-[a-z0-9-]+$/);
});
