import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey, signUpVerified } from "../../../test/support/accounts";
import { freePort } from "../../../test/support/free-port";
import { request } from "../../../test/support/http-client";
import { base64, productPhoto } from "../../../test/support/images";
import { type RetouchProcess, spawnRetouch } from "../../../test/support/spawn-retouch";
import { createTestDatabase } from "../../../test/support/test-database";
import { WebhookReceiver } from "../../../test/support/webhook-receiver";

/**
 * A worker killed with SIGKILL leaves its queue locks behind; the next
 * process frees them once the dead one's heartbeat is stale, rather than
 * when they expire (a webhook attempt's lock lives 60 s). Real processes on
 * one database, a real receiver on loopback.
 */

/** A webhook attempt's queue lock lifetime (job-queue.ts): what a dead worker's lock would otherwise be waited out for. */
const WEBHOOK_LOCK_LIFETIME_MS = 60_000;

let database: { url: string; drop(): Promise<void> };
let dataDir: string;
let receiver: WebhookReceiver;
let env: Record<string, string>;
let client: pg.Client;
const running = new Set<RetouchProcess>();

function start(): RetouchProcess {
  const proc = spawnRetouch(env);
  running.add(proc);
  void proc.exited.then(() => running.delete(proc));
  return proc;
}

beforeAll(async () => {
  database = await createTestDatabase();
  dataDir = await mkdtemp(path.join(os.tmpdir(), "retouch-queue-"));
  receiver = await new WebhookReceiver().start();
  env = {
    PORT: String(await freePort()),
    HOST: "127.0.0.1",
    DATABASE_URL: database.url,
    RETOUCH_DATA_DIR: dataDir,
    LOG_LEVEL: "info",
    RETOUCH_WEBHOOK_ALLOW_INSECURE: "1",
    RETOUCH_WEBHOOK_RETRY_DELAYS: "3s",
    // A long scan period: the retry, due within it, is locked as soon as it is scheduled (Agenda locks ahead).
    RETOUCH_QUEUE_POLL_INTERVAL: "30s",
  };
  client = new pg.Client({ connectionString: database.url });
  await client.connect();
});

afterAll(async () => {
  for (const proc of running) proc.child.kill("SIGKILL");
  await client?.end();
  await receiver?.stop();
  await database?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

describe("a worker killed with SIGKILL", { timeout: 120_000 }, () => {
  it("has its locked webhook retry delivered by the restarted service within seconds, not when the lock expires", async () => {
    receiver.script("/hook", [500, 200]);
    const first = start();
    await first.waitForLog(/Retouch is listening/);
    const base = `http://127.0.0.1:${env.PORT}`;
    const account = await signUpVerified({ url: base, outboxDir: path.join(dataDir, "outbox") });
    const { key } = await createKey(base, account);
    const submitted = await request(base, "POST", "/api/process", {
      key,
      body: { image: base64(await productPhoto()), prompt: "make it sepia", webhook_url: `${receiver.url}/hook` },
    });
    expect(submitted.status, submitted.text).toBe(200);
    await receiver.waitFor("/hook", 1);

    // The retry's queue entry, locked ahead of its time by the process about to die.
    let lock: { locked_at: Date; last_modified_by: string } | undefined;
    for (let tries = 0; !lock && tries < 100; tries++) {
      const rows = await client.query(
        "select locked_at, last_modified_by from agenda_jobs where name = 'deliver-webhook' and locked_at is not null",
      );
      lock = rows.rows[0];
      if (!lock) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(lock?.last_modified_by).toMatch(/^worker:/);
    first.child.kill("SIGKILL");
    await first.exited;
    expect(receiver.callsTo("/hook")).toHaveLength(1);

    const second = start();
    await second.waitForLog(/Retouch is listening/);
    // Waited for only until shortly before the dead lock would have expired by itself.
    const expiresIn = (lock?.locked_at.getTime() ?? 0) + WEBHOOK_LOCK_LIFETIME_MS - Date.now();
    const calls = await receiver.waitFor("/hook", 2, expiresIn - 10_000);
    expect(calls).toHaveLength(2);
    expect(second.output()).toMatch(/freed the queue locks of stopped workers/);

    const delivery = await request(base, "GET", "/api/webhooks/deliveries?limit=10", { key });
    expect(delivery.body.deliveries[0]).toMatchObject({ status: "delivered", attempts: 2 });
    second.child.kill("SIGTERM");
    await second.exited;
    // A clean stop leaves no heartbeat behind.
    expect((await client.query("select id from queue_workers")).rows).toEqual([]);
  });
});
