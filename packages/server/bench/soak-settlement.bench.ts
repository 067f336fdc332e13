/**
 * The end of `pnpm soak` (soak.bench.ts): what must hold in PostgreSQL after
 * floods, slow clients and a SIGKILL, read straight from the tables (the
 * service's own answers are what is under test). Money first: every account's
 * ledger adds up to its balance; every job is debited once and refunded once
 * if, and only if, it failed; no job exists that no idempotency key answers
 * for (a retry that charged twice). Webhooks are at-least-once: duplicates are
 * reported, a missing delivery fails.
 */
import type pg from "pg";

export interface ReceivedWebhook {
  jobId: string;
  status: string;
}

export interface SettlementReport {
  accounts: number;
  jobs: { total: number; done: number; error: number; pending: number };
  webhooks: { expected: number; delivered: number; received: number; duplicates: number; missing: number };
  /** Each broken rule, one line per offending row (the first few of each rule). */
  failures: string[];
}

const SHOWN_PER_RULE = 5;

/** Pending jobs and webhook deliveries of these accounts: the soak waits for both to reach zero before checking. */
export async function unsettledCounts(client: pg.Client, userIds: string[]): Promise<{ jobs: number; deliveries: number }> {
  const { rows } = await client.query<{ jobs: string; deliveries: string }>(
    `select (select count(*) from jobs where user_id = any($1) and status = 'pending') as jobs,
            (select count(*) from webhook_deliveries where user_id = any($1) and status = 'pending') as deliveries`,
    [userIds],
  );
  return { jobs: Number(rows[0]?.jobs), deliveries: Number(rows[0]?.deliveries) };
}

export async function checkSettlement(
  client: pg.Client,
  userIds: string[],
  received: ReceivedWebhook[],
): Promise<SettlementReport> {
  const failures: string[] = [];
  const rule = async (title: string, sql: string, describe: (row: Record<string, unknown>) => string) => {
    const { rows } = await client.query(sql, [userIds]);
    if (rows.length === 0) return;
    failures.push(`${title}: ${rows.length}`);
    for (const row of rows.slice(0, SHOWN_PER_RULE)) failures.push(`  ${describe(row)}`);
  };

  await rule(
    "accounts whose ledger does not add up to their balance",
    `select p.user_id, p.credits, coalesce(sum(l.delta), 0)::int as ledger_sum
       from profiles p left join credit_ledger l on l.user_id = p.user_id
      where p.user_id = any($1)
      group by p.user_id, p.credits
     having coalesce(sum(l.delta), 0) <> p.credits`,
    (row) => `${row.user_id}: credits ${row.credits}, ledger sum ${row.ledger_sum}`,
  );
  await rule(
    "accounts whose last ledger row's balance_after is not their balance",
    `select p.user_id, p.credits, last.balance_after
       from profiles p
       cross join lateral (select balance_after from credit_ledger l where l.user_id = p.user_id order by l.id desc limit 1) last
      where p.user_id = any($1) and last.balance_after <> p.credits`,
    (row) => `${row.user_id}: credits ${row.credits}, last balance_after ${row.balance_after}`,
  );
  await rule(
    "accounts whose ledger rows do not chain (balance_after = previous balance_after + delta)",
    `select user_id, id, delta, balance_after, previous
       from (select user_id, id, delta, balance_after,
                    lag(balance_after) over (partition by user_id order by id) as previous
               from credit_ledger where user_id = any($1)) chained
      where previous is not null and previous + delta <> balance_after`,
    (row) => `${row.user_id}: row ${row.id} ${row.previous} + ${row.delta} -> ${row.balance_after}`,
  );
  await rule(
    "jobs not settled (still pending after the drain)",
    `select id, user_id, created_at, attempts from jobs where user_id = any($1) and status = 'pending'`,
    (row) => `${row.id} (created ${(row.created_at as Date).toISOString()}, attempts ${row.attempts})`,
  );
  await rule(
    "jobs not debited exactly once",
    `select j.id, j.status, count(l.id)::int as debits
       from jobs j left join credit_ledger l on l.job_id = j.id and l.reason = 'job_debit'
      where j.user_id = any($1) and j.rejection is null
      group by j.id, j.status having count(l.id) <> 1`,
    (row) => `${row.id} (${row.status}): ${row.debits} debits`,
  );
  await rule(
    "jobs whose refund does not match their outcome (a failed job is refunded once, a done one never)",
    `select j.id, j.status, count(l.id)::int as refunds
       from jobs j left join credit_ledger l on l.job_id = j.id and l.reason = 'job_refund'
      where j.user_id = any($1) and j.rejection is null
      group by j.id, j.status
     having count(l.id) <> case when j.status = 'error' then 1 else 0 end`,
    (row) => `${row.id} (${row.status}): ${row.refunds} refunds`,
  );
  await rule(
    "ledger rows for jobs that do not exist",
    `select l.id, l.job_id, l.reason from credit_ledger l
      where l.user_id = any($1) and l.job_id is not null and not exists (select 1 from jobs j where j.id = l.job_id)`,
    (row) => `ledger row ${row.id}: ${row.reason} of ${row.job_id}`,
  );
  // Every submission of the soak carries an Idempotency-Key: a job no key answers for was charged by a retry.
  await rule(
    "jobs no idempotency key answers for (a retry created a second job)",
    `select j.id from jobs j
      where j.user_id = any($1)
        and not exists (select 1 from idempotency_keys k where k.user_id = j.user_id and k.response->>'job_id' = j.id)`,
    (row) => `${row.id}`,
  );

  const { rows: counts } = await client.query<{ status: string; count: string }>(
    "select status, count(*) from jobs where user_id = any($1) group by status",
    [userIds],
  );
  const byStatus = Object.fromEntries(counts.map((row) => [row.status, Number(row.count)]));

  // Webhooks: every settled job with a webhook_url got at least one call carrying its final status.
  const { rows: expected } = await client.query<{
    id: string;
    status: string;
    delivery: string | null;
    last_error: string | null;
  }>(
    `select j.id, j.status, d.status as delivery, d.last_error
       from jobs j left join webhook_deliveries d on d.job_id = j.id
      where j.user_id = any($1) and j.webhook_url is not null and j.status <> 'pending'`,
    [userIds],
  );
  const calls = new Map<string, ReceivedWebhook[]>();
  for (const call of received) calls.set(call.jobId, [...(calls.get(call.jobId) ?? []), call]);
  const missing = expected.filter((job) => !calls.has(job.id));
  if (missing.length > 0) {
    failures.push(`settled jobs whose webhook never arrived: ${missing.length}`);
    for (const job of missing.slice(0, SHOWN_PER_RULE))
      failures.push(
        `  ${job.id} (${job.status}): delivery ${job.delivery ?? "none"}${job.last_error ? `, ${job.last_error}` : ""}`,
      );
  }
  const wrongStatus = expected.filter((job) => (calls.get(job.id) ?? []).some((call) => call.status !== job.status));
  if (wrongStatus.length > 0) {
    failures.push(`webhooks whose status is not the job's: ${wrongStatus.length}`);
    for (const job of wrongStatus.slice(0, SHOWN_PER_RULE))
      failures.push(`  ${job.id}: job ${job.status}, webhook ${(calls.get(job.id) ?? []).map((call) => call.status).join(", ")}`);
  }
  let duplicates = 0;
  for (const list of calls.values()) duplicates += Math.max(0, list.length - 1);

  return {
    accounts: userIds.length,
    jobs: {
      total: counts.reduce((sum, row) => sum + Number(row.count), 0),
      done: byStatus.done ?? 0,
      error: byStatus.error ?? 0,
      pending: byStatus.pending ?? 0,
    },
    webhooks: {
      expected: expected.length,
      delivered: expected.filter((job) => job.delivery === "delivered").length,
      received: received.length,
      duplicates,
      missing: missing.length,
    },
    failures,
  };
}
