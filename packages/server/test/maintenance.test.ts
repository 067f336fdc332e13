import { newId } from "@retouch/core";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type KeyedAccount, keyedAccount, waitForJob } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { productPhoto } from "../../../test/support/images";
import { insertPendingJob } from "../../../test/support/jobs";
import { sweep } from "../../../test/support/maintenance";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

/** The once-a-minute sweep: lost jobs are enqueued again, stuck ones fail with their refund. */
let app: TestApp;
let account: KeyedAccount;
beforeAll(async () => {
  app = await startTestApp({ RETOUCH_QUEUE_POLL_INTERVAL: "200ms", RETOUCH_JOB_TIMEOUT: "10m" });
  account = await keyedAccount(app, { plan: "pro" });
});
afterAll(() => app.close());

async function sql(text: string, values: unknown[]) {
  const client = new pg.Client({ connectionString: app.config.databaseUrl });
  await client.connect();
  await client.query(text, values);
  await client.end();
}

const sweepNow = () => sweep(app);

describe("maintenance", () => {
  it("enqueues a committed job whose queue entry was lost, and it completes", async () => {
    // As after a crash between the commit and the enqueue: the job exists, the queue knows nothing.
    const jobId = newId("job");
    await app.services.blobs.put(`inputs/${jobId}`, await productPhoto());
    await insertPendingJob(app.services, account.userId, { id: jobId, charge: true, inputBlob: `inputs/${jobId}` });
    await sql("update jobs set created_at = now() - interval '5 minutes' where id = $1", [jobId]);
    await sweepNow();
    expect((await waitForJob(app.url, account.key, jobId)).status).toBe("done");
  });

  it("fails a job still pending after RETOUCH_JOB_TIMEOUT, with exactly one refund", async () => {
    // Claimed by a worker that never came back, long ago.
    const stuck = await insertPendingJob(app.services, account.userId, { charge: true });
    await sql(
      "update jobs set created_at = now() - interval '1 hour', claimed_by = 'gone', claimed_until = now() + interval '1 hour' where id = $1",
      [stuck],
    );
    const before = (await app.services.profiles.get(account.userId)).credits;
    await sweepNow();
    await sweepNow();
    const status = await request(app.url, "GET", `/api/process/status?job_id=${stuck}`, { key: account.key });
    expect(status.body).toMatchObject({ status: "error", error: "Processing failed", credits_used: 0 });
    expect((await app.services.profiles.get(account.userId)).credits).toBe(before + 1);
    const ledger = (await app.services.stores.profiles.ledger(account.userId)).filter((row) => row.jobId === stuck);
    expect(ledger.map((row) => row.reason)).toEqual(["job_debit", "job_refund"]);
  });
});
