import type { PlannedEdit } from "@retouch/engine";
import { type Kysely, type Selectable, sql, type Transaction } from "kysely";
import type { Database, ImageFormat, JobTable, JobWorkflow } from "../db/schema";
import type { JobFailure } from "../errors/job-failure-codes";
import type { JobFilters } from "../schemas/jobs.schemas";
import type { ProfilesStore } from "./profiles.store";
import type { WebhookDeliveriesStore } from "./webhook-deliveries.store";

export type JobRow = Selectable<JobTable>;
/** Where a job sits in an account's newest-first listing: `created_at` to the microsecond (ISO 8601, UTC) and the id. */
export interface JobPosition {
  createdAt: string;
  id: string;
}

export type BatchJobRow = Pick<JobRow, "id" | "status" | "error_code" | "error_message" | "rejection">;

/** A job row a submission writes: pending (charged 1 credit) or, for a batch item that could not start, error. */
export interface NewJob {
  id: string;
  batchId: string | null;
  batchIndex: number | null;
  status: "pending" | "error";
  workflow: JobWorkflow;
  /**
   * The edit plan accepted (stored for the worker to execute); absent or null for a batch item that could not
   * start, and for a job written without one (the worker's engine then plans it, as for jobs from before 0014).
   */
  plan?: PlannedEdit | null;
  prompt: string;
  negativePrompt: string | null;
  detect: string | null;
  outputFormat: ImageFormat;
  quality: number | null;
  webhookUrl: string | null;
  inputBlob: string | null;
  maskBlob: string | null;
  inputWidth: number | null;
  inputHeight: number | null;
  /** Set for a batch item that could not be started: the client's explanation. */
  rejection: string | null;
}

export interface SubmitRequest {
  userId: string;
  idempotency?: { key: string; requestHash: string };
  /** The rate log's clock (ms since the epoch). */
  now: number;
  windowMs: number;
  /** Every plan's limits; the function picks the account's plan under the profile lock. */
  plans: Record<string, { perMinute: number; concurrent: number }>;
  batch?: { id: string; size: number };
  jobs: NewJob[];
  /** Where pending jobs are queued: the queue's job name and its NOTIFY channel. */
  queue: { jobName: string; channel: string };
  /** The client's answer, saved under the idempotency key; `credits_remaining` is added by the database. */
  response: Record<string, unknown>;
}

/** Why the database refused a submission (nothing was written), with the figures for the client's message. */
export type SubmitRefusal =
  | { code: "idempotency_key_reused" }
  | { code: "batch_exceeds_plan_limit"; plan: string; limit: number }
  | { code: "rate_limited"; plan: string; limit: number; retryAfterMs: number }
  | { code: "too_many_in_flight"; plan: string; limit: number; pending: number }
  | { code: "insufficient_credits"; needed: number; balance: number };

export type SubmitOutcome =
  | { state: "accepted"; response: Record<string, unknown> & { credits_remaining: number } }
  | { state: "replay"; response: unknown }
  | { state: "refused"; refusal: SubmitRefusal };

/** What `precheck` needs: the submission's limits and how many images could become pending jobs. */
export interface SubmitPrecheck extends Pick<SubmitRequest, "userId" | "idempotency" | "now" | "windowMs" | "plans"> {
  /** A batch's size (all its items, as `retouch_submit` checks it); undefined for a single image. */
  batchSize?: number;
  /** Images that passed every check needing no bytes: at most this many become pending jobs. */
  count: number;
}

export type SubmitPrecheckOutcome =
  | { state: "clear" }
  | { state: "replay"; response: unknown }
  | { state: "refused"; refusal: SubmitRefusal };

/** The part of `retouch_submit`'s and `retouch_submit_precheck`'s argument that says whose limits apply, and when. */
function accountPayload(request: Pick<SubmitRequest, "userId" | "idempotency" | "now" | "windowMs" | "plans">) {
  return {
    user_id: request.userId,
    idempotency_key: request.idempotency?.key ?? null,
    request_hash: request.idempotency?.requestHash ?? null,
    now_ms: request.now,
    window_ms: request.windowMs,
    plans: Object.fromEntries(
      Object.entries(request.plans).map(([name, limits]) => [
        name,
        { per_minute: limits.perMinute, concurrent: limits.concurrent },
      ]),
    ),
  };
}

/** SQLSTATE of the refusals `retouch_submit` raises (migration 0006), and `retouch_submit_precheck` (0010). */
const REFUSAL_SQLSTATE = "RTX01";

/** A refusal raised by the database as the client's figures; any other error is thrown on. */
function refusalOf(error: unknown): SubmitRefusal {
  const failure = error as { code?: string; message?: string; detail?: string };
  if (failure.code !== REFUSAL_SQLSTATE) throw error;
  const detail = JSON.parse(failure.detail ?? "{}") as Record<string, number | string>;
  const refusal = { ...detail, code: failure.message } as Record<string, unknown>;
  if ("retry_after_ms" in detail) {
    refusal.retryAfterMs = Number(detail.retry_after_ms);
    delete refusal.retry_after_ms;
  }
  return refusal as SubmitRefusal;
}

export interface DoneResult {
  resultBlob: string;
  format: ImageFormat;
  width: number;
  height: number;
  processingTimeMs: number;
  resultExpiresAt: Date;
  /** Which hosted model made the edit, when one did. */
  provider?: { name: string; model: string; latencyMs: number };
}

/**
 * A job as its settlement left it, with the webhook delivery that settlement wrote (null without a
 * `webhook_url`): the caller schedules that delivery, with no read back of what was just written.
 */
export type SettledJob = JobRow & { webhookDeliveryId: string | null };

/** The NOTIFY a settling transaction sends (the queue's settlement notice). */
export type SettlementNotice = (jobId: string) => { channel: string; payload: string };

export class JobsStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly profiles: ProfilesStore,
    private readonly deliveries: WebhookDeliveriesStore,
    private readonly settlementNotice?: SettlementNotice,
  ) {}

  /** Announces the settlement at commit (PostgreSQL holds a transaction's NOTIFY until then, and drops it on rollback). */
  private async announceSettled(trx: Transaction<Database>, jobId: string): Promise<void> {
    if (!this.settlementNotice) return;
    const { channel, payload } = this.settlementNotice(jobId);
    await sql`select pg_notify(${channel}, ${payload})`.execute(trx);
  }

  /**
   * The whole submission transaction in one round trip: the idempotency claim,
   * the profile lock, the plan's limits, the debit with a ledger row per image,
   * the batch and job rows, their queue entries (announced at commit) and the
   * saved answer (`retouch_submit`, migration 0006).
   */
  async submit(request: SubmitRequest): Promise<SubmitOutcome> {
    const payload = {
      ...accountPayload(request),
      batch: request.batch ?? null,
      jobs: request.jobs.map((job) => ({
        id: job.id,
        batch_id: job.batchId,
        batch_index: job.batchIndex,
        status: job.status,
        workflow: job.workflow,
        plan: job.plan ?? null,
        prompt: job.prompt,
        negative_prompt: job.negativePrompt,
        detect: job.detect,
        output_format: job.outputFormat,
        quality: job.quality,
        webhook_url: job.webhookUrl,
        input_blob: job.inputBlob,
        mask_blob: job.maskBlob,
        input_width: job.inputWidth,
        input_height: job.inputHeight,
        rejection: job.rejection,
      })),
      queue: { job_name: request.queue.jobName, channel: request.queue.channel },
      response: request.response,
    };
    try {
      type Accepted = Extract<SubmitOutcome, { state: "accepted" }>["response"];
      const result = await sql<{ outcome: { replay?: unknown; response?: Accepted } }>`
        select retouch_submit(${JSON.stringify(payload)}::jsonb) as outcome
      `.execute(this.db);
      const outcome = result.rows[0]?.outcome ?? {};
      if ("replay" in outcome) return { state: "replay", response: outcome.replay };
      return { state: "accepted", response: outcome.response as Accepted };
    } catch (error) {
      return { state: "refused", refusal: refusalOf(error) };
    }
  }

  /**
   * The refusals `submit` would give for `count` images, read-only and before
   * any image is fetched (`retouch_submit_precheck`, migration 0010): the same
   * codes and figures, in the same order. Nothing is locked, counted or
   * charged; `submit` checks again under the profile lock. An idempotency key
   * already answered is a replay, as in `submit`.
   */
  async precheck(request: SubmitPrecheck): Promise<SubmitPrecheckOutcome> {
    const payload = {
      ...accountPayload(request),
      batch: request.batchSize === undefined ? null : { size: request.batchSize },
      count: request.count,
    };
    try {
      const result = await sql<{ outcome: { replay?: unknown } }>`
        select retouch_submit_precheck(${JSON.stringify(payload)}::jsonb) as outcome
      `.execute(this.db);
      const outcome = result.rows[0]?.outcome ?? {};
      return "replay" in outcome ? { state: "replay", response: outcome.replay } : { state: "clear" };
    } catch (error) {
      return { state: "refused", refusal: refusalOf(error) };
    }
  }

  /**
   * Where the account stands against its per-minute limit at `now`: read from
   * the very log `retouch_submit` counts in (key `submissions:<user>`, the
   * plan picked as it picks it), and the wait from `retouch_rate_wait`, the
   * limiter's own arithmetic, so the figures a client sees never disagree
   * with the limiter's next decision. Read-only; a snapshot, like any count.
   */
  async submissionRate(
    request: Pick<SubmitRequest, "userId" | "now" | "windowMs" | "plans">,
  ): Promise<{ limit: number; used: number; waitMs: number } | undefined> {
    const { plans, now_ms: now, window_ms: windowMs } = accountPayload(request);
    const result = await sql<{ limit: number; used: string; wait: string }>`
      select v.per_minute as limit,
        coalesce((select count(*) from rate_limit_events r, unnest(r.hits) h where r.key = v.key and h > ${now}::bigint - ${windowMs}::bigint), 0) as used,
        retouch_rate_wait(v.key, v.per_minute, ${windowMs}::bigint, 1, ${now}::bigint) as wait
      from (
        select 'submissions:' || p.user_id as key,
          (coalesce(${JSON.stringify(plans)}::jsonb -> p.plan, ${JSON.stringify(plans)}::jsonb -> 'free') ->> 'per_minute')::int as per_minute
        from profiles p where p.user_id = ${request.userId}
      ) v
    `.execute(this.db);
    const row = result.rows[0];
    return row && { limit: Number(row.limit), used: Number(row.used), waitMs: Number(row.wait) };
  }

  async countPending(userId: string): Promise<number> {
    const row = await this.db
      .selectFrom("jobs")
      .select((eb) => eb.fn.countAll<string>().as("count"))
      .where("user_id", "=", userId)
      .where("status", "=", "pending")
      .executeTakeFirstOrThrow();
    return Number(row.count);
  }

  async findIdempotencyKey(userId: string, key: string): Promise<{ requestHash: string; response: unknown } | undefined> {
    const row = await this.db
      .selectFrom("idempotency_keys")
      .select(["request_hash", "response"])
      .where("user_id", "=", userId)
      .where("key", "=", key)
      .executeTakeFirst();
    return row && row.response !== null ? { requestHash: row.request_hash, response: row.response } : undefined;
  }

  async findForUser(userId: string, jobId: string): Promise<JobRow | undefined> {
    return this.db.selectFrom("jobs").selectAll().where("id", "=", jobId).where("user_id", "=", userId).executeTakeFirst();
  }

  /**
   * A page of the account's jobs, newest first, strictly after `after` in that
   * order: keyset pagination on `(created_at, id)` (index
   * `jobs_user_created_idx`), so jobs created meanwhile never shift a page.
   * Each row carries its `created_at` to the microsecond as text, the
   * position a cursor resumes from (a JavaScript Date keeps milliseconds only).
   */
  async pageForUser(
    userId: string,
    options: { limit: number; after?: JobPosition; filters?: JobFilters },
  ): Promise<Array<JobRow & { position: JobPosition }>> {
    const filters = options.filters ?? {};
    let query = this.db
      .selectFrom("jobs")
      .selectAll()
      .select(sql<string>`to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`.as("position_created_at"))
      .where("user_id", "=", userId);
    if (filters.status) query = query.where("status", "=", filters.status);
    if (filters.workflow) query = query.where("workflow", "=", filters.workflow);
    // Whole UTC days, both ends included: `to` is the start of the day after.
    if (filters.from) query = query.where(sql<boolean>`created_at >= ${filters.from}::date at time zone 'UTC'`);
    if (filters.to) query = query.where(sql<boolean>`created_at < (${filters.to}::date + 1) at time zone 'UTC'`);
    if (options.after) {
      query = query.where(sql<boolean>`(created_at, id) < (${options.after.createdAt}::timestamptz, ${options.after.id})`);
    }
    const rows = await query.orderBy("created_at", "desc").orderBy("id", "desc").limit(options.limit).execute();
    return rows.map(({ position_created_at, ...row }) => ({ ...row, position: { createdAt: position_created_at, id: row.id } }));
  }

  /**
   * Images made (done jobs) per UTC day and workflow since the start of the
   * day `sinceDay` (YYYY-MM-DD); days and workflows without any are absent.
   */
  async doneByDay(userId: string, sinceDay: string): Promise<Array<{ day: string; workflow: JobWorkflow; count: number }>> {
    const day = sql<string>`to_char(created_at at time zone 'UTC', 'YYYY-MM-DD')`;
    const rows = await this.db
      .selectFrom("jobs")
      .select([day.as("day"), "workflow", (eb) => eb.fn.countAll<string>().as("count")])
      .where("user_id", "=", userId)
      .where("status", "=", "done")
      .where(sql<boolean>`created_at >= ${sinceDay}::date at time zone 'UTC'`)
      .groupBy([day, "workflow"])
      .execute();
    return rows.map((row) => ({ day: row.day, workflow: row.workflow, count: Number(row.count) }));
  }

  /**
   * Jobs created since `since` that still hold their credit: pending or done
   * (a failed job's refund sets its `credits_used` to 0; a batch item that
   * never started was never charged).
   */
  async countCharged(userId: string, since: Date): Promise<number> {
    const row = await this.db
      .selectFrom("jobs")
      .select((eb) => eb.fn.countAll<string>().as("count"))
      .where("user_id", "=", userId)
      .where("created_at", ">=", since)
      .where("credits_used", ">", 0)
      .executeTakeFirstOrThrow();
    return Number(row.count);
  }

  async find(jobId: string): Promise<JobRow | undefined> {
    return this.db.selectFrom("jobs").selectAll().where("id", "=", jobId).executeTakeFirst();
  }

  /** A batch's jobs in order, with what a failed one says; undefined when the account has no such batch. */
  async batchForUser(userId: string, batchId: string): Promise<BatchJobRow[] | undefined> {
    const batch = await this.db
      .selectFrom("batches")
      .select("id")
      .where("id", "=", batchId)
      .where("user_id", "=", userId)
      .executeTakeFirst();
    if (!batch) return undefined;
    return this.db
      .selectFrom("jobs")
      .select(["id", "status", "error_code", "error_message", "rejection"])
      .where("batch_id", "=", batchId)
      .orderBy("batch_index")
      .execute();
  }

  /**
   * Takes a pending job for one worker for `leaseMs`. Undefined when it is
   * settled or another live worker holds it: a job never runs twice at once.
   */
  async claim(jobId: string, workerId: string, leaseMs: number): Promise<JobRow | undefined> {
    return this.db
      .updateTable("jobs")
      .set((eb) => ({
        claimed_by: workerId,
        claimed_until: sql<Date>`now() + ${`${leaseMs} milliseconds`}::interval`,
        attempts: eb("attempts", "+", 1),
        started_at: sql<Date>`coalesce(started_at, now())`,
      }))
      .where("id", "=", jobId)
      .where("status", "=", "pending")
      .where((eb) =>
        eb.or([eb("claimed_until", "is", null), eb("claimed_until", "<", sql<Date>`now()`), eb("claimed_by", "=", workerId)]),
      )
      .returningAll()
      .executeTakeFirst();
  }

  async renewClaim(jobId: string, workerId: string, leaseMs: number): Promise<boolean> {
    const result = await this.db
      .updateTable("jobs")
      .set({ claimed_until: sql<Date>`now() + ${`${leaseMs} milliseconds`}::interval` })
      .where("id", "=", jobId)
      .where("status", "=", "pending")
      .where("claimed_by", "=", workerId)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** Marks the job done, if this worker still holds it; its webhook delivery is created in the same transaction. */
  async settleDone(jobId: string, workerId: string, result: DoneResult): Promise<SettledJob | undefined> {
    return this.db.transaction().execute(async (trx) => {
      const done = await trx
        .updateTable("jobs")
        .set({
          status: "done",
          result_blob: result.resultBlob,
          result_format: result.format,
          width: result.width,
          height: result.height,
          processing_time_ms: result.processingTimeMs,
          result_expires_at: result.resultExpiresAt,
          provider: result.provider?.name ?? null,
          provider_model: result.provider?.model ?? null,
          upstream_latency_ms: result.provider ? Math.round(result.provider.latencyMs) : null,
          finished_at: new Date(),
          claimed_by: null,
          claimed_until: null,
          credits_remaining: (eb) =>
            eb.selectFrom("profiles").select("credits").whereRef("profiles.user_id", "=", "jobs.user_id"),
        })
        .where("id", "=", jobId)
        .where("status", "=", "pending")
        .where("claimed_by", "=", workerId)
        .returningAll()
        .executeTakeFirst();
      if (!done) return undefined;
      const webhookDeliveryId = await this.deliveries.createForJob(trx, done);
      await this.announceSettled(trx, jobId);
      return { ...done, webhookDeliveryId };
    });
  }

  /**
   * Marks the job failed with its failure code, message and internal reason,
   * refunds its credit and creates its webhook delivery, in one transaction. Only a
   * pending job changes (and, with `workerId`, only while that worker holds
   * it); the ledger's unique index makes a second refund impossible anyway.
   */
  async settleFailed(
    jobId: string,
    failure: JobFailure,
    options: { workerId?: string; processingTimeMs?: number | null } = {},
  ): Promise<SettledJob | undefined> {
    return this.db.transaction().execute(async (trx) => {
      let pending = trx
        .selectFrom("jobs")
        .select(["user_id", "credits_used"])
        .where("id", "=", jobId)
        .where("status", "=", "pending");
      if (options.workerId) pending = pending.where("claimed_by", "=", options.workerId);
      const job = await pending.forUpdate().executeTakeFirst();
      if (!job) return undefined;
      await trx
        .updateTable("jobs")
        .set({
          status: "error",
          error_reason: failure.reason,
          error_code: failure.code,
          error_message: failure.message,
          processing_time_ms: options.processingTimeMs ?? null,
          finished_at: new Date(),
          claimed_by: null,
          claimed_until: null,
          credits_used: 0,
        })
        .where("id", "=", jobId)
        .execute();
      const balance =
        job.credits_used > 0
          ? await this.profiles.changeCredits(trx, { userId: job.user_id, delta: job.credits_used, reason: "job_refund", jobId })
          : (await this.profiles.find(job.user_id, trx))?.credits;
      const settled = await trx
        .updateTable("jobs")
        .set({ credits_remaining: balance ?? null })
        .where("id", "=", jobId)
        .returningAll()
        .executeTakeFirstOrThrow();
      // After the refund: the callback's credits_remaining already includes it.
      const webhookDeliveryId = await this.deliveries.createForJob(trx, settled);
      await this.announceSettled(trx, jobId);
      return { ...settled, webhookDeliveryId };
    });
  }

  /** Pending jobs nobody holds that were created before `createdBefore`: candidates to enqueue again. */
  async unclaimedPending(createdBefore: Date, limit = 500): Promise<string[]> {
    const rows = await this.db
      .selectFrom("jobs")
      .select("id")
      .where("status", "=", "pending")
      .where("created_at", "<", createdBefore)
      .where((eb) => eb.or([eb("claimed_until", "is", null), eb("claimed_until", "<", sql<Date>`now()`)]))
      .orderBy("created_at")
      .limit(limit)
      .execute();
    return rows.map((row) => row.id);
  }

  async pendingCreatedBefore(createdBefore: Date, limit = 500): Promise<string[]> {
    const rows = await this.db
      .selectFrom("jobs")
      .select("id")
      .where("status", "=", "pending")
      .where("created_at", "<", createdBefore)
      .orderBy("created_at")
      .limit(limit)
      .execute();
    return rows.map((row) => row.id);
  }

  async clearInputBlobs(jobId: string): Promise<void> {
    await this.db.updateTable("jobs").set({ input_blob: null, mask_blob: null }).where("id", "=", jobId).execute();
  }

  /** Results past their retention: blob keys to delete, then `forgetResult` each. */
  async expiredResults(now: Date, limit = 500): Promise<Array<{ id: string; resultBlob: string }>> {
    const rows = await this.db
      .selectFrom("jobs")
      .select(["id", "result_blob"])
      .where("result_blob", "is not", null)
      .where("result_expires_at", "<", now)
      .limit(limit)
      .execute();
    return rows.map((row) => ({ id: row.id, resultBlob: row.result_blob as string }));
  }

  async forgetResult(jobId: string): Promise<void> {
    await this.db.updateTable("jobs").set({ result_blob: null }).where("id", "=", jobId).execute();
  }

  /** Inputs of settled jobs whose clean-up was missed (a crash right after settling). */
  async leftoverInputs(finishedBefore: Date, limit = 500): Promise<Array<{ id: string; blobs: string[] }>> {
    const rows = await this.db
      .selectFrom("jobs")
      .select(["id", "input_blob", "mask_blob"])
      .where("status", "!=", "pending")
      .where("finished_at", "<", finishedBefore)
      .where((eb) => eb.or([eb("input_blob", "is not", null), eb("mask_blob", "is not", null)]))
      .limit(limit)
      .execute();
    return rows.map((row) => ({
      id: row.id,
      blobs: [row.input_blob, row.mask_blob].filter((blob): blob is string => blob !== null),
    }));
  }

  async deleteIdempotencyKeysBefore(cutoff: Date): Promise<number> {
    const result = await this.db.deleteFrom("idempotency_keys").where("created_at", "<", cutoff).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
