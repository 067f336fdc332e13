import { newId, type Services } from "@retouch/core";
import pg from "pg";

/**
 * A pending job written straight to the database, as a submission would, but
 * never enqueued: no worker takes it unless a test (or the sweep) enqueues it.
 */
export async function insertPendingJob(
  services: Services,
  userId: string,
  options: {
    charge?: boolean;
    inputBlob?: string | null;
    prompt?: string;
    id?: string;
    /** The stored edit plan (jobs.plan, JSON); none by default, as for a job queued before plans were stored. */
    plan?: unknown;
    workflow?: "background_removal" | "object_removal" | "generative_edit";
  } = {},
): Promise<string> {
  const jobId = options.id ?? newId("job");
  const client = new pg.Client({ connectionString: services.config.databaseUrl as string });
  await client.connect();
  try {
    await client.query("begin");
    if (options.charge) {
      const { rows } = await client.query<{ credits: number }>(
        "update profiles set credits = credits - 1 where user_id = $1 returning credits",
        [userId],
      );
      await client.query(
        "insert into credit_ledger (user_id, delta, balance_after, reason, job_id) values ($1, -1, $2, 'job_debit', $3)",
        [userId, rows[0]?.credits, jobId],
      );
    }
    await client.query(
      `insert into jobs (id, user_id, status, workflow, prompt, output_format, input_blob, input_width, input_height, credits_used, plan)
       values ($1, $2, 'pending', $6, $3, 'jpeg', $4, 320, 240, $5, $7)`,
      [
        jobId,
        userId,
        options.prompt ?? "make it sepia",
        options.inputBlob ?? null,
        1,
        options.workflow ?? "generative_edit",
        options.plan === undefined ? null : JSON.stringify(options.plan),
      ],
    );
    await client.query("commit");
  } finally {
    await client.end();
  }
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
