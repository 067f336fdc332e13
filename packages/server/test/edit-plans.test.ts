import { type Config, createLogger, jobFailure, newId } from "@retouch/core";
import { type RetouchApp, startRetouch } from "@retouch/server";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type KeyedAccount, keyedAccount, waitForJob } from "../../../test/support/accounts";
import { request } from "../../../test/support/http-client";
import { base64, productPhoto } from "../../../test/support/images";
import { insertPendingJob } from "../../../test/support/jobs";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

/**
 * The edit plan is made once, at submission, stored with the job and executed
 * by the worker as stored. Here the api has a hosted generative provider
 * configured and the worker, a second Retouch on the same database, has none:
 * the two would read some prompts differently, and the job must either run
 * the stored plan or fail saying the worker cannot, never make another edit.
 */
let api: TestApp;
let worker: RetouchApp;
let account: KeyedAccount;
/** The shared database, read straight (the rows as stored). */
let db: pg.Pool;
const workerLogs: string[] = [];

async function sql<T extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<T[]> {
  return (await db.query<T>(text, values)).rows;
}

beforeAll(async () => {
  api = await startTestApp(
    {
      RETOUCH_GENERATIVE_PROVIDER: "openai-compatible",
      // Never called: the api only plans with it; the worker, which would call it, has none.
      RETOUCH_OPENAI_BASE_URL: "http://127.0.0.1:9/v1",
      RETOUCH_WORKER_CONCURRENCY: "1",
    },
    { role: "api" },
  );
  const workerConfig: Config = { ...api.config, portSet: false, generativeProvider: undefined };
  worker = await startRetouch({
    config: workerConfig,
    logger: createLogger("info", { write: (line: string) => void workerLogs.push(line) }),
    role: "worker",
  });
  account = await keyedAccount(api, { plan: "pro", credits: 20 });
  db = new pg.Pool({ connectionString: api.config.databaseUrl as string, max: 1 });
}, 120_000);

afterAll(async () => {
  await db?.end();
  await worker?.close();
  await api?.close();
});

async function submit(body: Record<string, unknown>) {
  const response = await request(api.url, "POST", "/api/process", { key: account.key, body });
  expect(response.status, response.text).toBe(200);
  return response.body as Record<string, unknown>;
}

describe("the plan made at submission", { timeout: 120_000 }, () => {
  it("is stored with each job it accepted, a batch's items too (a refused item has none)", async () => {
    const image = base64(await productPhoto({ width: 320, height: 240 }));
    const single = await submit({ image, prompt: "remove the background and add a drop shadow" });
    const batch = await submit({
      images: [
        { image, prompt: "remove the person" },
        { image: "not base64 at all!", prompt: "make it black and white" },
      ],
    });
    const batchJobs = batch.jobs as Array<{ job_id: string; status: string }>;
    const ids = [single.job_id as string, ...batchJobs.map((job) => job.job_id)];
    const rows = await sql<{ id: string; workflow: string; plan: unknown }>(
      "select id, workflow, plan from jobs where id = any($1)",
      [ids],
    );
    const plans = Object.fromEntries(rows.map((row) => [row.id, row]));
    expect(plans[ids[0] as string]).toEqual({
      id: ids[0],
      workflow: "background_removal",
      plan: {
        workflow: "background_removal",
        executor: "builtin",
        route: { workflow: "background_removal", removalTerms: [], followUpInstructions: ["add a drop shadow"] },
      },
    });
    expect(plans[ids[1] as string]?.plan).toEqual({
      workflow: "object_removal",
      executor: "builtin",
      route: { workflow: "object_removal", removalTerms: ["person"], followUpInstructions: [] },
    });
    expect(batchJobs[1]?.status).toBe("error");
    expect(plans[ids[2] as string]?.plan).toBeNull();
    for (const id of ids.slice(0, 2)) await waitForJob(api.url, account.key, id);
  });
});

describe("a worker configured differently from the api", { timeout: 120_000 }, () => {
  it("fails a job accepted for the hosted provider with plan_not_executable, refunded, and makes no built-in edit instead", async () => {
    const before = (await api.services.profiles.get(account.userId)).credits;
    // "make her smile" is beyond the built-in catalog: the api (with a provider) accepts it for the provider.
    const { job_id: jobId } = await submit({ image: base64(await productPhoto()), prompt: "make her smile" });
    const [row] = await sql<{ plan: { executor: string } }>("select plan from jobs where id = $1", [jobId]);
    expect(row?.plan.executor).toBe("provider");
    const status = await waitForJob(api.url, account.key, jobId as string);
    expect(status).toMatchObject({ status: "error", error_code: "plan_not_executable" });
    expect(String(status.error_message)).toMatch(/not set up to carry it out/);
    expect((await api.services.profiles.get(account.userId)).credits).toBe(before);
    // The operator's log says what the worker lacks.
    expect(workerLogs.join("")).toContain("RETOUCH_GENERATIVE_PROVIDER");
  });

  it("runs a stored plan as stored, where the worker's own reading of the prompt differs; a row without a plan it plans itself", async () => {
    const photo = await productPhoto({ width: 320, height: 240 });
    const queued = async (row: Parameters<typeof insertPendingJob>[2]) => {
      const id = newId("job");
      await api.services.blobs.put(`inputs/${id}`, photo);
      await insertPendingJob(api.services, account.userId, { ...row, id, inputBlob: `inputs/${id}` });
      await api.services.queue.enqueueOnce(id);
      return id;
    };
    // The stored plan says background removal; the prompt alone reads as a colour edit (a JPEG).
    const storedId = await queued({
      prompt: "make it black and white",
      workflow: "background_removal",
      plan: {
        workflow: "background_removal",
        executor: "builtin",
        route: { workflow: "background_removal", removalTerms: [], followUpInstructions: [] },
      },
    });
    // A job queued before plans were stored (no plan) is planned by the worker, as it always was.
    const oldId = await queued({ prompt: "make it black and white" });
    expect(await waitForJob(api.url, account.key, storedId)).toMatchObject({ status: "done", format: "png" });
    expect(await waitForJob(api.url, account.key, oldId)).toMatchObject({ status: "done", format: "jpeg" });
  });
});

describe("settling a job", { timeout: 60_000 }, () => {
  it("returns the webhook delivery it wrote, for the caller to schedule (none without a webhook_url)", async () => {
    const withHook = await insertPendingJob(api.services, account.userId, { charge: true });
    await sql("update jobs set webhook_url = $1 where id = $2", ["https://hooks.example.invalid/retouch", withHook]);
    const plain = await insertPendingJob(api.services, account.userId, { charge: true });
    const jobs = api.services.stores.jobs;
    const settled = await jobs.settleFailed(withHook, jobFailure("internal_error", "test: settle"));
    const [delivery] = await sql<{ id: string }>("select id from webhook_deliveries where job_id = $1", [withHook]);
    expect(delivery?.id).toMatch(/^whd_/);
    expect(settled?.webhookDeliveryId).toBe(delivery?.id);
    expect((await jobs.settleFailed(plain, jobFailure("internal_error", "test: settle")))?.webhookDeliveryId).toBeNull();
  });
});
