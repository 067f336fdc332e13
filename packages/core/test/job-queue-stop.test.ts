import pg from "pg";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { createTestDatabase } from "../../../test/support/test-database";
import { createLogger } from "../src/lib/logger";
import { JobQueue } from "../src/processing/job-queue";

/**
 * A stopped queue keeps its LISTEN connection closed. The backend reconnects a
 * lost LISTEN connection by itself, with growing delays; a reconnect in flight
 * when `stop` disconnects the channel finishes after it, and held a pooled
 * connection for ever: the service's shutdown then hung on closing the pool
 * (operations.test.ts, under load, after its database refused connections).
 */
let database: { url: string; drop(): Promise<void> };
let pool: pg.Pool;

beforeAll(async () => {
  database = await createTestDatabase();
  pool = new pg.Pool({ connectionString: database.url, max: 4 });
});
afterAll(async () => {
  if (!pool.ended) await pool.end();
  await database?.drop();
});

interface Channel {
  state: string;
  connect(): Promise<void>;
}

it("closes its LISTEN connection for good at stop, even when a reconnect finishes after it; the pool then ends at once", async () => {
  const queue = new JobQueue({
    pool,
    config: { workerConcurrency: 1, jobLockLifetimeMs: 60_000, queuePollIntervalMs: 5_000, workerHeartbeatMs: 2_000 },
    logger: createLogger("silent"),
  });
  await queue.start();
  // The backend's channel, which JobQueue keeps to itself: Agenda exposes it.
  const channel = (queue as unknown as { agenda: { notificationChannel?: Channel } }).agenda.notificationChannel;
  if (!channel) throw new Error("the queue has no LISTEN channel");
  expect(channel.state).toBe("connected");
  await queue.stop(0);
  expect(channel.state).toBe("disconnected");

  // What a reconnect in flight at `stop` does when it finishes after it.
  await channel.connect();
  await vi.waitFor(() => expect(channel.state).toBe("disconnected"), { timeout: 5_000 });
  await vi.waitFor(() => expect(pool.totalCount - pool.idleCount).toBe(0), { timeout: 5_000 });
  const ended = await Promise.race([
    pool.end().then(() => "ended"),
    new Promise((resolve) => setTimeout(() => resolve("still waiting on a connection"), 5_000)),
  ]);
  expect(ended).toBe("ended");
});
