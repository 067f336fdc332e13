import { OUTPUT_FORMATS } from "@retouch/engine";
import type { BlobStore } from "../blobs/blob-store";
import type { Config } from "../config/env";
import type { JobWorkflow } from "../db/schema";
import { isJobFailureCode, JOB_FAILURE_CODES, type PublicJobFailure } from "../errors/job-failure-codes";
import { RetouchError } from "../errors/retouch-error";
import type { PageCursors } from "../lib/page-cursor";
import type { UrlSigner } from "../lib/signed-urls";
import {
  JOB_WORKFLOWS,
  type JobFilters,
  type JobListing,
  type ListJobsInput,
  USAGE_DAYS,
  type UsageOutput,
} from "../schemas/jobs.schemas";
import type { ResultOutput } from "../schemas/process.schemas";
import type { BatchJobRow, JobPosition, JobRow, JobsStore } from "../stores/jobs.store";
import type { Principal } from "./principal";

/** The spec's text for a failed job; why it failed is said beside it (`error_code`, `error_message`). */
export const GENERIC_FAILURE = "Processing failed";
/** The spec: signed result URLs are valid for 1 hour. */
export const RESULT_URL_TTL_MS = 3_600_000;
export const RESULT_PATH_PREFIX = "/files/results/";
/** A signed result link's path: `/files/results/<job id>.<output format>`. */
const RESULT_PATH = new RegExp(`^${RESULT_PATH_PREFIX}(job_[0-9a-z]{26})\\.(${OUTPUT_FORMATS.join("|")})$`);

/** The spec's metadata block of a terminal job, and which hosted model made it when one did. */
export function metadataOf(job: JobRow) {
  const done = job.status === "done";
  return {
    width: (done ? job.width : job.input_width) ?? 0,
    height: (done ? job.height : job.input_height) ?? 0,
    format: (done ? job.result_format : null) ?? job.output_format,
    credits_used: job.credits_used,
    credits_remaining: job.credits_remaining ?? 0,
    processing_time_ms: job.processing_time_ms,
    ...(job.provider !== null
      ? { provider: job.provider, model: job.provider_model ?? "", upstream_latency_ms: job.upstream_latency_ms }
      : {}),
  };
}

/**
 * What a client reads of a failed job: the spec's generic text (or, for a
 * batch item that never started, its own input problem), the failure code and
 * a sentence saying why. A batch item refused at submission was never settled,
 * so it has no code of its own: it is `not_started`.
 */
export function failureOf(job: Pick<BatchJobRow, "error_code" | "error_message" | "rejection">): PublicJobFailure {
  const code = isJobFailureCode(job.error_code) ? job.error_code : job.rejection !== null ? "not_started" : "internal_error";
  return {
    error: job.rejection ?? GENERIC_FAILURE,
    error_code: code,
    error_message: job.error_message ?? job.rejection ?? JOB_FAILURE_CODES[code].message,
  };
}

/** What a job cursor holds: `created_at` to the microsecond (UTC) and the job id. */
const CURSOR_CREATED_AT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const CURSOR_JOB_ID = /^job_[0-9a-z]{26}$/;

/** Where settlements are announced (the queue: its LISTEN connection hears every process's). */
export interface SettlementWatch {
  watchSettlement(jobId: string, onSettled: () => void): () => void;
}

export class JobsService {
  constructor(
    private readonly store: JobsStore,
    private readonly signer: UrlSigner,
    private readonly config: Pick<Config, "publicBaseUrl" | "resultUrls">,
    private readonly cursors: PageCursors,
    private readonly settlements?: SettlementWatch,
    /** Presigns result URLs when `resultUrls` is `presigned` (an S3 store). */
    private readonly blobs?: Pick<BlobStore, "presignedUrl">,
  ) {}

  /**
   * One page of the caller's jobs, newest first, single and batch jobs alike.
   * The cursor is sealed to the account, so it resumes only that account's
   * listing; anything else sent as a cursor is a 400.
   */
  async list(principal: Principal, input: ListJobsInput) {
    const after = input.cursor === undefined ? undefined : this.openCursor(principal, input.cursor);
    const { status, workflow, from, to } = input;
    if (from !== undefined && to !== undefined && from > to) {
      const message = "is before `from`: pass a `to` on or after the `from` day";
      throw new RetouchError("invalid_request", `Invalid request: to: ${message}`, { issues: [{ path: "to", message }] });
    }
    const filters: JobFilters = {
      ...(status ? { status } : {}),
      ...(workflow ? { workflow } : {}),
      ...(from ? { from } : {}),
      ...(to ? { to } : {}),
    };
    // One row more than asked says whether there is a next page.
    const rows = await this.store.pageForUser(principal.userId, {
      limit: input.limit + 1,
      filters,
      ...(after ? { after } : {}),
    });
    const page = rows.slice(0, input.limit);
    const last = page.at(-1);
    return {
      jobs: await Promise.all(page.map((job) => this.listing(job))),
      next_cursor:
        rows.length > input.limit && last
          ? this.cursors.seal(principal.userId, [last.position.createdAt, last.position.id])
          : null,
    };
  }

  /** Images made per day over the last USAGE_DAYS days (UTC), by workflow, every day listed. */
  async usage(principal: Principal, now = new Date()): Promise<UsageOutput> {
    const dayMs = 86_400_000;
    const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
    const dates = Array.from({ length: USAGE_DAYS }, (_, index) =>
      new Date(today - (USAGE_DAYS - 1 - index) * dayMs).toISOString().slice(0, 10),
    );
    const rows = await this.store.doneByDay(principal.userId, dates[0] as string);
    const zero = () => Object.fromEntries(JOB_WORKFLOWS.map((workflow) => [workflow, 0])) as Record<JobWorkflow, number>;
    const days = new Map(dates.map((date) => [date, { date, total: 0, by_workflow: zero() }]));
    for (const row of rows) {
      const day = days.get(row.day);
      if (!day) continue; // A job stamped after "now" (clock skew between hosts) waits for its day.
      day.by_workflow[row.workflow] += row.count;
      day.total += row.count;
    }
    return { workflows: [...JOB_WORKFLOWS], days: [...days.values()] };
  }

  private async listing(job: JobRow): Promise<JobListing> {
    const failure = job.status === "error" ? failureOf(job) : undefined;
    return {
      id: job.id,
      batch_id: job.batch_id,
      status: job.status,
      prompt: job.prompt,
      created_at: job.created_at.toISOString(),
      metadata: job.status === "pending" ? null : metadataOf(job),
      error_code: failure?.error_code ?? null,
      error_message: failure?.error_message ?? null,
      result_url: job.status === "done" && job.result_blob && job.result_format ? (await this.resultUrl(job)).url : null,
    };
  }

  private openCursor(principal: Principal, cursor: string): JobPosition {
    const [createdAt, id, ...rest] = this.cursors.open(principal.userId, cursor) ?? [];
    if (createdAt && id && rest.length === 0 && CURSOR_CREATED_AT.test(createdAt) && CURSOR_JOB_ID.test(id)) {
      return { createdAt, id };
    }
    const message =
      "is not a cursor this API gave your account (it is malformed, was changed, or belongs to another account): pass next_cursor exactly as received, or leave cursor out to start from the newest job";
    throw new RetouchError("invalid_request", `Invalid request: cursor: ${message}`, { issues: [{ path: "cursor", message }] });
  }

  /**
   * Waits until the job is no longer pending: true once it has settled (or does
   * not exist), false when `timeoutMs` passed or `signal` aborted first. Woken
   * by the queue's settlement notice, not by polling; the state is read after
   * subscribing, so a settlement in between is not missed. Ownership is not
   * checked here: read the outcome through `jobStatus` or `result`.
   */
  async waitForSettlement(jobId: string, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    if (signal?.aborted) return false;
    let resolve: (settled: boolean) => void = () => {};
    const promise = new Promise<boolean>((done) => {
      resolve = done;
    });
    const stopWatching = this.settlements?.watchSettlement(jobId, () => resolve(true));
    const timer = setTimeout(() => resolve(false), timeoutMs);
    const abandon = () => resolve(false);
    signal?.addEventListener("abort", abandon, { once: true });
    try {
      const job = await this.store.find(jobId);
      if (job?.status !== "pending") resolve(true);
      return await promise;
    } finally {
      stopWatching?.();
      clearTimeout(timer);
      signal?.removeEventListener("abort", abandon);
    }
  }

  async jobStatus(principal: Principal, jobId: string) {
    const job = await this.ownJob(principal, jobId);
    if (job.status === "pending") return { status: "pending" as const };
    return {
      status: job.status,
      ...metadataOf(job),
      ...(job.status === "error" ? failureOf(job) : {}),
    };
  }

  async batchStatus(principal: Principal, batchId: string) {
    const jobs = await this.store.batchForUser(principal.userId, batchId);
    if (!jobs) throw new RetouchError("not_found", `No batch ${batchId}.`);
    return {
      batch_id: batchId,
      jobs: jobs.map((job) => ({ job_id: job.id, status: job.status, ...(job.status === "error" ? failureOf(job) : {}) })),
    };
  }

  async result(principal: Principal, jobId: string): Promise<ResultOutput> {
    const job = await this.ownJob(principal, jobId);
    if (job.status === "pending") return { job_id: jobId, status: "pending" };
    if (job.status === "error") {
      const failure = failureOf(job);
      const refund = failure.error_code === "not_started" ? "" : " Its credit was refunded.";
      throw new RetouchError("job_failed", `Job ${jobId} failed (${failure.error_code}): ${failure.error_message}${refund}`, {
        failure,
      });
    }
    if (!job.result_blob || !job.result_format) {
      throw new RetouchError("not_found", `The result of job ${jobId} has expired and was deleted.`);
    }
    const { url, expiresAt } = await this.resultUrl(job);
    return { job_id: jobId, url, expires_at: expiresAt.toISOString(), ...metadataOf(job) };
  }

  /**
   * A fresh signed link to a done job's image (webhooks sign one at every
   * attempt): the store's presigned GET when RETOUCH_RESULT_URLS is
   * `presigned` (S3), valid for the spec's hour as the service's own link is;
   * otherwise this service's signed /files/ URL.
   */
  async resultUrl(job: Pick<JobRow, "id" | "result_format" | "result_blob">): Promise<{ url: string; expiresAt: Date }> {
    const expiresAt = new Date(Date.now() + RESULT_URL_TTL_MS);
    const presign = this.blobs?.presignedUrl?.bind(this.blobs);
    if (this.config.resultUrls === "presigned" && presign && job.result_blob) {
      return { url: await presign(job.result_blob, RESULT_URL_TTL_MS / 1000), expiresAt };
    }
    const pathname = `${RESULT_PATH_PREFIX}${job.id}.${job.result_format}`;
    return { url: `${this.config.publicBaseUrl}${pathname}?${this.signer.sign(pathname, expiresAt)}`, expiresAt };
  }

  /**
   * The stored result of a done job whose link this service just made for its
   * owner (MCP inlines small pictures): the blob to read, whatever the link's kind.
   */
  async storedResult(jobId: string): Promise<{ blob: string; format: string; jobId: string }> {
    const job = await this.store.find(jobId);
    if (!job?.result_blob || !job.result_format) throw new RetouchError("not_found", "This result has expired and was deleted.");
    return { blob: job.result_blob, format: job.result_format, jobId: job.id };
  }

  /** Checks a signed result link; returns the blob to serve. */
  async openSignedResult(pathname: string, query: URLSearchParams): Promise<{ blob: string; format: string; jobId: string }> {
    const verdict = this.signer.verify(pathname, query);
    if (verdict === "expired")
      throw new RetouchError("signed_url_invalid", "This link has expired; request a fresh one from GET /api/process/result.");
    if (verdict === "invalid") throw new RetouchError("signed_url_invalid");
    const match = RESULT_PATH.exec(pathname);
    if (!match?.[1]) throw new RetouchError("signed_url_invalid");
    const job = await this.store.find(match[1]);
    if (!job?.result_blob || job.result_format !== match[2]) {
      throw new RetouchError("not_found", "This result has expired and was deleted.");
    }
    return { blob: job.result_blob, format: job.result_format, jobId: job.id };
  }

  private async ownJob(principal: Principal, jobId: string): Promise<JobRow> {
    // Another account's job is "not found" too: its existence is not revealed.
    const job = await this.store.findForUser(principal.userId, jobId);
    if (!job) throw new RetouchError("not_found", `No job ${jobId}.`);
    return job;
  }
}
