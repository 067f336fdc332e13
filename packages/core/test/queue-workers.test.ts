import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createTestDatabase } from "../../../test/support/test-database";
import { QueueWorkersStore } from "../src/stores/queue-workers.store";

/**
 * Which locks a worker frees: only those of workers that are dead (silent
 * for three of their own periods) or gone (no row), never a live worker's
 * nor one taken under another name. On a real database; a dead worker is
 * one whose last beat is written an hour back.
 */
let database: { url: string; drop(): Promise<void> };
let pool: pg.Pool;
let store: QueueWorkersStore;

beforeAll(async () => {
  database = await createTestDatabase();
  pool = new pg.Pool({ connectionString: database.url, max: 3 });
  store = new QueueWorkersStore(pool);
});
afterAll(async () => {
  await pool?.end();
  await database?.drop();
});

async function lockedEntry(holder: string | null, nextRunAt: "future" | null): Promise<string> {
  const { rows } = await pool.query<{ id: string }>(
    `insert into agenda_jobs (name, next_run_at, locked_at, last_modified_by, data)
     values ('process-image', ${nextRunAt ? "now() + interval '2 seconds'" : "null"}, now(), $1, '{}') returning id`,
    [holder],
  );
  return rows[0]?.id as string;
}

describe("QueueWorkersStore.releaseDead", () => {
  it("frees the locks of dead and vanished workers only, and announces each", async () => {
    await store.beat("worker:alive", 2_000);
    await store.beat("worker:dead", 2_000);
    await pool.query("update queue_workers set heartbeat_at = now() - interval '1 hour' where id = 'worker:dead'");
    // A slow beater, silent for less than three of its own periods: alive.
    await store.beat("worker:slow", 60_000);
    await pool.query("update queue_workers set heartbeat_at = now() - interval '1 minute' where id = 'worker:slow'");
    const alive = await lockedEntry("worker:alive", "future");
    const slow = await lockedEntry("worker:slow", null);
    const running = await lockedEntry("worker:dead", null);
    const ahead = await lockedEntry("worker:dead", "future");
    const vanished = await lockedEntry("worker:vanished", "future");
    const foreign = await lockedEntry("someone-else", "future");
    const unnamed = await lockedEntry(null, "future");

    const listener = new pg.Client({ connectionString: database.url });
    await listener.connect();
    const heard: string[] = [];
    listener.on("notification", (message) => heard.push(JSON.parse(message.payload ?? "{}").jobId));
    await listener.query(`listen "agenda:jobs"`);
    const released = await store.releaseDead("agenda:jobs");
    // PostgreSQL sends a transaction's notifications together at its commit: wait for them, then check exactly which.
    await vi.waitFor(() => expect(heard.length).toBeGreaterThanOrEqual(3), { timeout: 5_000, interval: 10 });
    await listener.end();

    expect(released.map((lock) => lock.id).sort()).toEqual([running, ahead, vanished].sort());
    expect(heard.sort()).toEqual([running, ahead, vanished].sort());
    const { rows } = await pool.query<{ id: string; locked: boolean; due_now: boolean }>(
      "select id, locked_at is not null as locked, next_run_at <= now() as due_now from agenda_jobs",
    );
    const state = Object.fromEntries(rows.map((row) => [row.id, row]));
    for (const id of [alive, slow, foreign, unnamed]) expect(state[id]?.locked).toBe(true);
    for (const id of [running, ahead, vanished]) expect(state[id]?.locked).toBe(false);
    // The entry that was running gets a run time (now); the one locked ahead keeps its own.
    expect(state[running]?.due_now).toBe(true);
    expect(state[ahead]?.due_now).toBe(false);
    const workers = await pool.query<{ id: string }>("select id from queue_workers order by id");
    expect(workers.rows.map((row) => row.id)).toEqual(["worker:alive", "worker:slow"]);

    // Nothing left to free: a second pass is a no-op.
    expect(await store.releaseDead("agenda:jobs")).toEqual([]);
  });
});
