import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createTestDatabase } from "../../../test/support/test-database";
import { checkSettlement, type ReceivedWebhook, unsettledCounts } from "../bench/soak-settlement.bench";

/**
 * The checks `pnpm soak` ends with, on a real migrated database: a settled
 * account passes, and each way money or settlement can go wrong is named.
 * The rows are written straight to the tables, as the service's transactions
 * leave them (signup grant, a debit per job, a refund for a failed one).
 */

let database: { url: string; drop(): Promise<void> };
let client: pg.Client;

beforeEach(async () => {
  database = await createTestDatabase();
  client = new pg.Client({ connectionString: database.url });
  await client.connect();
});

afterEach(async () => {
  await client.end();
  await database.drop();
});

const id = (prefix: string) => `${prefix}_${randomBytes(8).toString("hex")}`;

async function ledger(userId: string, delta: number, balanceAfter: number, reason: string, jobId: string | null = null) {
  await client.query("insert into credit_ledger (user_id, delta, balance_after, reason, job_id) values ($1, $2, $3, $4, $5)", [
    userId,
    delta,
    balanceAfter,
    reason,
    jobId,
  ]);
}

async function job(userId: string, status: "pending" | "done" | "error", options: { idempotent?: boolean } = {}) {
  const jobId = id("job");
  await client.query(
    `insert into jobs (id, user_id, status, workflow, prompt, output_format, credits_used, webhook_url)
     values ($1, $2, $3, 'generative_edit', 'make it black and white', 'jpeg', 1, 'http://127.0.0.1:9/hook')`,
    [jobId, userId, status],
  );
  if (options.idempotent !== false)
    await client.query("insert into idempotency_keys (user_id, key, request_hash, response) values ($1, $2, 'h', $3)", [
      userId,
      id("key"),
      { job_id: jobId, credits_remaining: 0 },
    ]);
  return jobId;
}

/** An account that signed up with 10 credits, had one job done and one failed (refunded): 9 left. */
async function settledAccount(): Promise<{ userId: string; done: string; failed: string; webhooks: ReceivedWebhook[] }> {
  const userId = id("usr");
  await client.query(`insert into "user" (id, name, email, "emailVerified") values ($1, 'Soak', $2, true)`, [
    userId,
    `${userId}@example.com`,
  ]);
  await client.query("insert into profiles (user_id, plan, credits, webhook_secret) values ($1, 'pro', 9, 'secret')", [userId]);
  await ledger(userId, 10, 10, "signup_grant");
  const done = await job(userId, "done");
  await ledger(userId, -1, 9, "job_debit", done);
  const failed = await job(userId, "error");
  await ledger(userId, -1, 8, "job_debit", failed);
  await ledger(userId, 1, 9, "job_refund", failed);
  return {
    userId,
    done,
    failed,
    webhooks: [
      { jobId: done, status: "done" },
      { jobId: failed, status: "error" },
    ],
  };
}

describe("the soak's settlement checks", () => {
  it("pass on a settled account, counting jobs and duplicate webhooks", async () => {
    const account = await settledAccount();
    const report = await checkSettlement(
      client,
      [account.userId],
      [...account.webhooks, { jobId: account.done, status: "done" }],
    );
    expect(report.failures).toEqual([]);
    expect(report.jobs).toEqual({ total: 2, done: 1, error: 1, pending: 0 });
    expect(report.webhooks).toMatchObject({ expected: 2, received: 3, duplicates: 1, missing: 0 });
    expect(await unsettledCounts(client, [account.userId])).toEqual({ jobs: 0, deliveries: 0 });
  });

  it("name a balance the ledger does not add up to", async () => {
    const account = await settledAccount();
    await client.query("update profiles set credits = 10 where user_id = $1", [account.userId]);
    const report = await checkSettlement(client, [account.userId], account.webhooks);
    expect(report.failures).toContain("accounts whose ledger does not add up to their balance: 1");
    expect(report.failures).toContain("accounts whose last ledger row's balance_after is not their balance: 1");
  });

  it("name a job charged twice, a refund of a job that succeeded and a failed job left unrefunded", async () => {
    const account = await settledAccount();
    // A second debit can only come under another reason the unique index allows: a refund of the done job.
    await ledger(account.userId, 1, 10, "job_refund", account.done);
    const unrefunded = await job(account.userId, "error");
    await ledger(account.userId, -1, 9, "job_debit", unrefunded);
    const undebited = await job(account.userId, "done");
    const report = await checkSettlement(
      client,
      [account.userId],
      [...account.webhooks, { jobId: unrefunded, status: "error" }, { jobId: undebited, status: "done" }],
    );
    expect(report.failures).toContain(
      "jobs whose refund does not match their outcome (a failed job is refunded once, a done one never): 2",
    );
    expect(report.failures).toContain("jobs not debited exactly once: 1");
    expect(report.failures.join("\n")).toContain(`${undebited} (done): 0 debits`);
  });

  it("name a job no idempotency key answers for (a retry that made a second job), and one still pending", async () => {
    const account = await settledAccount();
    const duplicate = await job(account.userId, "done", { idempotent: false });
    const pending = await job(account.userId, "pending");
    await client.query("update profiles set credits = 7 where user_id = $1", [account.userId]);
    await ledger(account.userId, -1, 8, "job_debit", duplicate);
    await ledger(account.userId, -1, 7, "job_debit", pending);
    const report = await checkSettlement(client, [account.userId], [...account.webhooks, { jobId: duplicate, status: "done" }]);
    expect(report.failures).toContain("jobs no idempotency key answers for (a retry created a second job): 1");
    expect(report.failures).toContain("jobs not settled (still pending after the drain): 1");
    expect(report.jobs.pending).toBe(1);
    expect(await unsettledCounts(client, [account.userId])).toEqual({ jobs: 1, deliveries: 0 });
  });

  it("name a settled job whose webhook never came, and one whose webhook told another outcome", async () => {
    const account = await settledAccount();
    const report = await checkSettlement(client, [account.userId], [{ jobId: account.done, status: "error" }]);
    expect(report.failures).toContain("settled jobs whose webhook never arrived: 1");
    expect(report.failures).toContain("webhooks whose status is not the job's: 1");
    expect(report.webhooks.missing).toBe(1);
  });

  it("look only at the soak's accounts", async () => {
    const soak = await settledAccount();
    const other = await settledAccount();
    await client.query("update profiles set credits = 100 where user_id = $1", [other.userId]);
    expect((await checkSettlement(client, [soak.userId], soak.webhooks)).failures).toEqual([]);
  });
});
