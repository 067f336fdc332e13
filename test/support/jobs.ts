import { newId, type Services } from "@retouch/core";
import pg from "pg";

/**
 * A pending job written straight to the database, as a submission would, but
 * never enqueued: no worker takes it unless a test (or the sweep) enqueues it.
 */
export async function insertPendingJob(
  services: Services,
  userId: string,
  options: { charge?: boolean; inputBlob?: string | null; prompt?: string; id?: string } = {},
): Promise<string> {
  const jobId = options.id ?? newId("job");
  await services.stores.jobs.submission(async (tx) => {
    if (options.charge) await tx.debit(userId, [jobId]);
    await tx.insertJobs([
      {
        id: jobId,
        userId,
        batchId: null,
        batchIndex: null,
        status: "pending",
        workflow: "generative_edit",
        prompt: options.prompt ?? "make it sepia",
        negativePrompt: null,
        detect: null,
        outputFormat: "jpeg",
        quality: null,
        webhookUrl: null,
        inputBlob: options.inputBlob ?? null,
        maskBlob: null,
        inputWidth: 320,
        inputHeight: 240,
        rejection: null,
        creditsRemaining: null,
      },
    ]);
  });
  return jobId;
}

/** Every job row of an account (pending, done or error), read straight from the database. */
export async function jobCount(databaseUrl: string, userId: string): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ count: string }>("select count(*) from jobs where user_id = $1", [userId]);
    return Number(rows[0]?.count);
  } finally {
    await client.end();
  }
}
