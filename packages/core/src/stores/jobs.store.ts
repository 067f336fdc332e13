import { type Kysely, type Selectable, sql, type Transaction } from "kysely";
import type { Database, ImageFormat, JobTable, JobWorkflow } from "../db/schema";
import type { ProfilesStore } from "./profiles.store";
import type { RateDecision, RateLimitsStore } from "./rate-limits.store";
import type { WebhookDeliveriesStore } from "./webhook-deliveries.store";

export type JobRow = Selectable<JobTable>;

export interface NewJob {
  id: string;
  userId: string;
  batchId: string | null;
  batchIndex: number | null;
  status: "pending" | "error";
  workflow: JobWorkflow;
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
  /** For an item that could not be started: the balance after the submission (its metadata). */
  creditsRemaining: number | null;
}

export type IdempotencyClaim = { state: "new" } | { state: "replay"; response: unknown } | { state: "conflict" };

/**
 * The statements of one submission, all inside one transaction: the caller
 * (the submissions service) decides, this only reads and writes.
 */
export class SubmissionTransaction {
  constructor(
    private readonly trx: Transaction<Database>,
    private readonly profiles: ProfilesStore,
    private readonly rateLimits: RateLimitsStore,
  ) {}

  /**
   * Takes the key for this request. A parallel request with the same key waits
   * here on the primary key until the first one commits or rolls back.
   */
  async claimIdempotencyKey(userId: string, key: string, requestHash: string): Promise<IdempotencyClaim> {
    const inserted = await this.trx
      .insertInto("idempotency_keys")
      .values({ user_id: userId, key, request_hash: requestHash, response: null })
      .onConflict((conflict) => conflict.columns(["user_id", "key"]).doNothing())
      .returning("key")
      .executeTakeFirst();
    if (inserted) return { state: "new" };
    const existing = await this.trx
      .selectFrom("idempotency_keys")
      .select(["request_hash", "response"])
      .where("user_id", "=", userId)
      .where("key", "=", key)
      .executeTakeFirstOrThrow();
    return existing.request_hash === requestHash ? { state: "replay", response: existing.response } : { state: "conflict" };
  }

  async saveIdempotentResponse(userId: string, key: string, response: unknown): Promise<void> {
    await this.trx
      .updateTable("idempotency_keys")
      .set({ response: JSON.stringify(response) })
      .where("user_id", "=", userId)
      .where("key", "=", key)
      .execute();
  }

  /** Locks the account's profile: submissions of one account are serialised from here to commit. */
  async lockProfile(userId: string): Promise<{ plan: string; credits: number }> {
    return this.trx
      .selectFrom("profiles")
      .select(["plan", "credits"])
      .where("user_id", "=", userId)
      .forUpdate()
      .executeTakeFirstOrThrow();
  }

  async countPending(userId: string): Promise<number> {
    const row = await this.trx
      .selectFrom("jobs")
      .select((eb) => eb.fn.countAll<string>().as("count"))
      .where("user_id", "=", userId)
      .where("status", "=", "pending")
      .executeTakeFirstOrThrow();
    return Number(row.count);
  }

  hitRateWindow(key: string, options: { limit: number; windowMs: number; amount: number }): Promise<RateDecision> {
    return this.rateLimits.hit(key, options, this.trx);
  }

  /** One credit per job, one ledger row each. Undefined when the balance cannot cover them (nothing written). */
  async debit(userId: string, jobIds: string[]): Promise<number | undefined> {
    let balance: number | undefined;
    for (const jobId of jobIds) {
      balance = await this.profiles.changeCredits(this.trx, { userId, delta: -1, reason: "job_debit", jobId });
      if (balance === undefined) return undefined;
    }
    return balance;
  }

  async insertBatch(id: string, userId: string): Promise<void> {
    await this.trx.insertInto("batches").values({ id, user_id: userId }).execute();
  }

  async insertJobs(jobs: NewJob[]): Promise<void> {
    if (jobs.length === 0) return;
    await this.trx
      .insertInto("jobs")
      .values(
        jobs.map((job) => ({
          id: job.id,
          user_id: job.userId,
          batch_id: job.batchId,
          batch_index: job.batchIndex,
          status: job.status,
          workflow: job.workflow,
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
          credits_used: job.status === "pending" ? 1 : 0,
          rejection: job.rejection,
          credits_remaining: job.creditsRemaining,
          finished_at: job.status === "error" ? new Date() : null,
        })),
      )
      .execute();
  }
}

export interface DoneResult {
  resultBlob: string;
  format: ImageFormat;
  width: number;
  height: number;
  processingTimeMs: number;
  resultExpiresAt: Date;
}

export class JobsStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly profiles: ProfilesStore,
    private readonly rateLimits: RateLimitsStore,
    private readonly deliveries: WebhookDeliveriesStore,
  ) {}

  submission<T>(fn: (tx: SubmissionTransaction) => Promise<T>): Promise<T> {
    return this.db.transaction().execute((trx) => fn(new SubmissionTransaction(trx, this.profiles, this.rateLimits)));
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

  async find(jobId: string): Promise<JobRow | undefined> {
    return this.db.selectFrom("jobs").selectAll().where("id", "=", jobId).executeTakeFirst();
  }

  async batchForUser(userId: string, batchId: string): Promise<Array<{ id: string; status: JobRow["status"] }> | undefined> {
    const batch = await this.db
      .selectFrom("batches")
      .select("id")
      .where("id", "=", batchId)
      .where("user_id", "=", userId)
      .executeTakeFirst();
    if (!batch) return undefined;
    return this.db.selectFrom("jobs").select(["id", "status"]).where("batch_id", "=", batchId).orderBy("batch_index").execute();
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
  async settleDone(jobId: string, workerId: string, result: DoneResult): Promise<JobRow | undefined> {
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
      if (done) await this.deliveries.createForJob(trx, done);
      return done;
    });
  }

  /**
   * Marks the job failed, refunds its credit and creates its webhook delivery, in one transaction. Only a
   * pending job changes (and, with `workerId`, only while that worker holds
   * it); the ledger's unique index makes a second refund impossible anyway.
   */
  async settleFailed(
    jobId: string,
    reason: string,
    options: { workerId?: string; processingTimeMs?: number | null } = {},
  ): Promise<JobRow | undefined> {
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
          error_reason: reason,
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
      await this.deliveries.createForJob(trx, settled);
      return settled;
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
