import { newId, runMaintenance } from "@retouch/core";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type KeyedAccount, keyedAccount, waitForJob } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { base64, productPhoto } from "../../../test/support/images";
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

const sweep = () =>
  runMaintenance({
    jobs: app.services.stores.jobs,
    rateLimits: app.services.stores.rateLimits,
    blobs: app.services.blobs,
    config: app.config,
    logger: app.services.logger,
    enqueueOnce: (jobId) => app.services.queue.enqueue(jobId),
    onSettled: (job) => app.services.webhooks.afterSettle(job),
    rescheduleWebhooks: (graceMs) => app.services.webhooks.rescheduleOverdue(graceMs),
  });

describe("maintenance", () => {
  it("enqueues a committed job whose queue entry was lost, and it completes", async () => {
    // As after a crash between the commit and the enqueue: the job exists, the queue knows nothing.
    const jobId = newId("job");
    const image = await productPhoto();
    await app.services.blobs.put(`inputs/${jobId}`, image);
    await app.services.stores.jobs.submission(async (tx) => {
      await tx.debit(account.userId, [jobId]);
      await tx.insertJobs([
        {
          id: jobId,
          userId: account.userId,
          batchId: null,
          batchIndex: null,
          status: "pending",
          workflow: "generative_edit",
          prompt: "make it sepia",
          negativePrompt: null,
          detect: null,
          outputFormat: "jpeg",
          quality: null,
          webhookUrl: null,
          inputBlob: `inputs/${jobId}`,
          maskBlob: null,
          inputWidth: 320,
          inputHeight: 240,
          rejection: null,
          creditsRemaining: null,
        },
      ]);
    });
    await sql("update jobs set created_at = now() - interval '5 minutes' where id = $1", [jobId]);
    await sweep();
    expect((await waitForJob(app.url, account.key, jobId)).status).toBe("done");
  });

  it("fails a job still pending after RETOUCH_JOB_TIMEOUT, with exactly one refund", async () => {
    const submitted = await request(app.url, "POST", "/api/process", {
      key: account.key,
      body: { image: base64(await productPhoto()), prompt: "make it sepia" },
    });
    const jobId = submitted.body.job_id as string;
    await waitForJob(app.url, account.key, jobId);
    // A second job, stuck: claimed by a worker that never comes back, long ago.
    const stuck = newId("job");
    await app.services.stores.jobs.submission(async (tx) => {
      await tx.debit(account.userId, [stuck]);
      await tx.insertJobs([
        {
          id: stuck,
          userId: account.userId,
          batchId: null,
          batchIndex: null,
          status: "pending",
          workflow: "generative_edit",
          prompt: "x",
          negativePrompt: null,
          detect: null,
          outputFormat: "jpeg",
          quality: null,
          webhookUrl: null,
          inputBlob: null,
          maskBlob: null,
          inputWidth: 320,
          inputHeight: 240,
          rejection: null,
          creditsRemaining: null,
        },
      ]);
    });
    await sql(
      "update jobs set created_at = now() - interval '1 hour', claimed_by = 'gone', claimed_until = now() + interval '1 hour' where id = $1",
      [stuck],
    );
    const before = (await app.services.profiles.get(account.userId)).credits;
    await sweep();
    await sweep();
    const status = await request(app.url, "GET", `/api/process/status?job_id=${stuck}`, { key: account.key });
    expect(status.body).toMatchObject({ status: "error", error: "Processing failed", credits_used: 0 });
    expect((await app.services.profiles.get(account.userId)).credits).toBe(before + 1);
    const ledger = (await app.services.stores.profiles.ledger(account.userId)).filter((row) => row.jobId === stuck);
    expect(ledger.map((row) => row.reason)).toEqual(["job_debit", "job_refund"]);
  });
});
