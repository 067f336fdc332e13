import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { PostgresJobRepository, PostgresNotificationChannel } from "@agendajs/postgres-backend";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../../../test/support/test-database";
import {
  AGENDA_COLUMNS,
  AGENDA_FORMATS_READ_FROM,
  AGENDA_TABLE,
  entryNotificationSql,
  QUEUE_CHANNEL,
  stateChannelOf,
  stateNotification,
} from "../src/processing/agenda-formats";

/**
 * agenda-formats.ts against the installed libraries: their versions (the
 * formats were read from those), the table our migrations create against the
 * one the backend would create, and the NOTIFY payloads Retouch writes
 * against the backend's own serialiser and parser.
 */
let database: { url: string; drop(): Promise<void> };
let pool: pg.Pool;

beforeAll(async () => {
  database = await createTestDatabase();
  pool = new pg.Pool({ connectionString: database.url, max: 2 });
});
afterAll(async () => {
  await pool?.end();
  await database?.drop();
});

/** The version of a dependency of @retouch/core as installed (pnpm links each under the package's node_modules). */
async function installedVersion(name: string): Promise<string> {
  const manifest = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../node_modules", name, "package.json");
  return JSON.parse(await readFile(manifest, "utf8")).version;
}

/** A table's columns with their types, in name order. */
async function columnsOf(table: string): Promise<string[]> {
  const { rows } = await pool.query<{ column_name: string; data_type: string }>(
    "select column_name, data_type from information_schema.columns where table_name = $1 order by column_name",
    [table],
  );
  return rows.map((row) => `${row.column_name} ${row.data_type}`);
}

// A channel never connected: only its (de)serialisers are used, which touch no connection.
const channel = new PostgresNotificationChannel({ channelName: QUEUE_CHANNEL }) as unknown as {
  stateChannelName: string;
  serializeNotification(notification: object): string;
  parseNotification(payload: string): Record<string, unknown>;
  serializeStateNotification(notification: object): string;
  parseStateNotification(payload: string): Record<string, unknown>;
};

describe("Agenda's formats", () => {
  it("were read from the installed versions of agenda and @agendajs/postgres-backend", async () => {
    const installed = {
      agenda: await installedVersion("agenda"),
      "@agendajs/postgres-backend": await installedVersion("@agendajs/postgres-backend"),
    };
    expect(
      installed,
      "agenda or its PostgreSQL backend changed version: re-check packages/core/src/processing/agenda-formats.ts " +
        "(table, columns, NOTIFY payloads), the submit function's NOTIFY (0006-submit-function) and " +
        "patches/agenda@6.2.6.patch against the new library, then update AGENDA_FORMATS_READ_FROM",
    ).toEqual(AGENDA_FORMATS_READ_FROM);
  });

  it("the table our migrations create is the one the backend would create", async () => {
    await new PostgresJobRepository({ pool, tableName: "agenda_reference", ensureSchema: true }).connect();
    const ours = await columnsOf(AGENDA_TABLE);
    expect(ours).toEqual(await columnsOf("agenda_reference"));
    const names = ours.map((column) => column.split(" ")[0]);
    expect(names).toEqual(expect.arrayContaining(Object.values(AGENDA_COLUMNS)));
  });

  it("a new entry's NOTIFY is what the backend writes and reads", async () => {
    const id = "0b9f3c4e-5d6a-4b7c-8d9e-0f1a2b3c4d5e";
    const { rows } = await pool.query<{ payload: string }>(`select ${entryNotificationSql("$1::uuid", "$2::text")} as payload`, [
      id,
      "process-image",
    ]);
    const payload = rows[0]?.payload as string;
    const theirs = JSON.parse(
      channel.serializeNotification({ jobId: id, jobName: "process-image", nextRunAt: null, priority: 0, timestamp: new Date() }),
    );
    expect(Object.keys(JSON.parse(payload)).sort()).toEqual(Object.keys(theirs).sort());
    expect(channel.parseNotification(payload)).toEqual({
      jobId: id,
      jobName: "process-image",
      nextRunAt: null,
      priority: 0,
      timestamp: expect.any(Date),
      source: undefined,
    });
    expect(Number.isNaN((channel.parseNotification(payload).timestamp as Date).getTime())).toBe(false);
  });

  it("a state event sent by the database is read on the backend's state channel", () => {
    expect(stateChannelOf(QUEUE_CHANNEL)).toBe(channel.stateChannelName);
    const payload = stateNotification({ type: "complete", jobId: "job_1", jobName: "retouch-job-settled" });
    const theirs = JSON.parse(
      channel.serializeStateNotification({
        type: "complete",
        jobId: "job_1",
        jobName: "retouch-job-settled",
        timestamp: new Date(),
        source: "an-instance",
      }),
    );
    expect(Object.keys(JSON.parse(payload)).sort()).toEqual(Object.keys(theirs).sort());
    expect(channel.parseStateNotification(payload)).toMatchObject({
      type: "complete",
      jobId: "job_1",
      jobName: "retouch-job-settled",
      timestamp: expect.any(Date),
      source: "retouch-db",
    });
  });
});
