import { createHash } from "node:crypto";
import {
  EngineError,
  inspectImage,
  isOutputFormat,
  outputFormatFor,
  type PlannedEdit,
  planEdit,
  plannedEdit,
} from "@retouch/engine";
import pMap from "p-map";
import { configure } from "safe-stable-stringify";
import type { BlobStore } from "../blobs/blob-store";
import type { Config } from "../config/env";
import { PLAN_LIMITS } from "../config/plans";
import type { ImageFormat } from "../db/schema";
import type { ErrorCode } from "../errors/error-codes";
import { RetouchError } from "../errors/retouch-error";
import { newId } from "../lib/ids";
import type { Logger } from "../lib/logger";
import { checkOutboundUrl } from "../lib/network-guard";
import { type ProcessInput, type ProcessItemInput, processItemSchema, type SubmissionOutput } from "../schemas/process.schemas";
import type { JobsStore, NewJob, SubmitRefusal } from "../stores/jobs.store";
import { retryAfterSeconds } from "../stores/rate-limits.store";
import {
  type FetchSession,
  IMAGE_FETCH_CONCURRENCY,
  type ImageInputsDependencies,
  ImageInputsService,
  RequestLevelError,
} from "./image-inputs.service";
import type { Principal } from "./principal";

const MINUTE = 60_000;
/** Idempotency keys: printable ASCII, as Stripe and the IETF draft allow; a UUID fits. */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/**
 * Where an account stands against its plan's images per minute: what the
 * `X-RateLimit-*` headers say.
 */
export interface SubmissionRateLimit {
  /** The plan's images per minute. */
  limit: number;
  /** Images that would still be accepted now (a batch needs one per image). */
  remaining: number;
  /** Seconds until one more image fits: 0 while `remaining` is above 0. */
  resetSeconds: number;
}

/** An item that passed validation: ready to become a pending job. */
interface AcceptedItem {
  index: number;
  jobId: string;
  input: ProcessItemInput;
  image: Buffer;
  mask: Buffer | undefined;
  /** The edit plan accepted at submission, stored with the job for the worker to execute. */
  plan: PlannedEdit;
  outputFormat: ImageFormat;
  width: number;
  height: number;
}

/**
 * An item that passed every check needing no download (its base64 decoded and
 * inspected already); an `image_url` or `mask_url` is still to be fetched.
 */
interface PreparedItem {
  index: number;
  jobId: string;
  input: ProcessItemInput;
  plan: PlannedEdit;
  outputFormat: ImageFormat;
  /** Undefined while `image_url` is still to be fetched. */
  image: { bytes: Buffer; width: number; height: number } | undefined;
  /** Undefined while `mask_url` is still to be fetched, or when there is no mask. */
  mask: Buffer | undefined;
  hasMask: boolean;
}

/** A batch item that cannot be started: listed with its reason, not charged. */
interface RejectedItem {
  index: number;
  jobId: string;
  input: Partial<ProcessItemInput>;
  error: string;
  /** What a single-image request answers with (400, or 413 for a too-large image). */
  code: ErrorCode;
}

export interface SubmissionsDependencies {
  jobs: JobsStore;
  blobs: BlobStore;
  /** The image inputs' settings (it builds that service), and what routing and inspection need. */
  config: ImageInputsDependencies["config"] &
    Pick<Config, "maxImagePixels" | "generativeProvider"> &
    Partial<Pick<Config, "payments" | "publicBaseUrl">>;
  logger: Logger;
  /** The queue's job name and NOTIFY channel: a submission queues its jobs in its own transaction. */
  queue: { jobName: string; channel: string };
  /** For tests: how webhook and image_url hosts resolve. */
  resolveHost?: (host: string) => Promise<string[]>;
  /** Whether an open-vocabulary detector is installed (RETOUCH_OBJECT_DETECTOR): then any thing may be named to remove. */
  openVocabulary?: () => Promise<boolean>;
}

/**
 * Key order does not change the request, so it must not change the hash either. The keys are
 * sorted with localeCompare, as the hand-written canonical form sorted them before this library:
 * the library's default (code-unit order) would give another hash for the same request, and a
 * retry across an upgrade would be refused as a reused Idempotency-Key.
 */
const canonicalJson = configure({ deterministic: (a, b) => a.localeCompare(b) });

/** The SHA-256 of the request's canonical JSON: what an Idempotency-Key is bound to. */
export function requestHash(input: ProcessInput): string {
  return createHash("sha256")
    .update(canonicalJson(input) ?? "")
    .digest("hex");
}

/** The plans' limits as the submission function takes them. */
const PLAN_LIMITS_FOR_STORE = Object.fromEntries(
  Object.entries(PLAN_LIMITS).map(([name, limits]) => [
    name,
    { perMinute: limits.submissionsPerMinute, concurrent: limits.concurrentJobs },
  ]),
);

/** Where a person tops up: the billing page and its API when this server takes payments, else the operator. */
export function topUpHint(config: Partial<Pick<Config, "payments" | "publicBaseUrl">>): string {
  if (config.payments?.provider !== "stripe") return "top up before retrying.";
  return `top up before retrying: buy credits or a plan on the billing page (${config.publicBaseUrl ?? ""}/billing) or with POST /api/billing/checkout.`;
}

/** The database's refusal as the client's error, with a message that says what to do. */
function refusalError(refusal: SubmitRefusal, count: number, size: number, topUp: string): RetouchError {
  switch (refusal.code) {
    case "idempotency_key_reused":
      return new RetouchError("idempotency_key_reused");
    case "batch_exceeds_plan_limit":
      return new RetouchError(
        "batch_exceeds_plan_limit",
        `This batch has ${size} images; your ${refusal.plan} plan runs at most ${refusal.limit} at once. Submit fewer images per call.`,
      );
    case "rate_limited": {
      const seconds = retryAfterSeconds(refusal.retryAfterMs);
      return new RetouchError(
        "rate_limited",
        `Your ${refusal.plan} plan accepts ${refusal.limit} images per minute; retry after ${seconds} s.`,
        { retryAfterSeconds: seconds },
      );
    }
    case "too_many_in_flight":
      return new RetouchError(
        "too_many_in_flight",
        `${refusal.pending} of your jobs are still processing and your ${refusal.plan} plan runs at most ${refusal.limit} at once; retry after some finish.`,
      );
    case "insufficient_credits":
      return new RetouchError(
        "insufficient_credits",
        `This request needs ${count} credit${count === 1 ? "" : "s"} and your balance is ${refusal.balance}; ${topUp}`,
      );
  }
}

export class SubmissionsService {
  private readonly images: ImageInputsService;

  constructor(private readonly deps: SubmissionsDependencies) {
    this.images = new ImageInputsService({
      config: deps.config,
      logger: deps.logger,
      ...(deps.resolveHost ? { resolveHost: deps.resolveHost } : {}),
    });
  }

  /** An account's `image_url` downloads waiting for a slot now (nothing outside the process sees them). */
  downloadsWaiting(accountId: string): number {
    return this.images.downloadsWaiting(accountId);
  }

  /**
   * Submits one image or a batch. `onRateLimit` hears, whatever the outcome
   * (accepted, replayed or refused), where the account then stands against its
   * per-minute limit, as the limiter counted it at the submission's own clock:
   * the transports send it as the `X-RateLimit-*` headers.
   */
  async submit(
    principal: Principal,
    input: ProcessInput,
    idempotencyKey?: string,
    onRateLimit?: (state: SubmissionRateLimit) => void,
  ): Promise<SubmissionOutput> {
    const clock: { now?: number } = {};
    try {
      return await this.submitOnce(principal, input, idempotencyKey, clock);
    } finally {
      if (onRateLimit) await this.reportRateLimit(principal, clock.now ?? Date.now(), onRateLimit);
    }
  }

  /** The figures for `onRateLimit`; a database that fails here costs the headers, never the answer. */
  private async reportRateLimit(
    principal: Principal,
    now: number,
    onRateLimit: (state: SubmissionRateLimit) => void,
  ): Promise<void> {
    try {
      const rate = await this.deps.jobs.submissionRate({
        userId: principal.userId,
        now,
        windowMs: MINUTE,
        plans: PLAN_LIMITS_FOR_STORE,
      });
      if (!rate) return;
      onRateLimit({
        limit: rate.limit,
        remaining: Math.max(0, rate.limit - rate.used),
        resetSeconds: rate.waitMs === 0 ? 0 : retryAfterSeconds(rate.waitMs),
      });
    } catch (error) {
      this.deps.logger.warn({ userId: principal.userId, reason: (error as Error).message }, "rate-limit figures unavailable");
    }
  }

  private async submitOnce(
    principal: Principal,
    input: ProcessInput,
    idempotencyKey: string | undefined,
    clock: { now?: number },
  ): Promise<SubmissionOutput> {
    if (!principal.emailVerified) throw new RetouchError("email_unverified");
    if (idempotencyKey !== undefined && !IDEMPOTENCY_KEY.test(idempotencyKey)) {
      throw new RetouchError("invalid_request", "Idempotency-Key must be 1 to 255 printable ASCII characters (a UUID is ideal).");
    }
    const isBatch = input.images !== undefined;

    const hash = idempotencyKey === undefined ? undefined : requestHash(input);
    if (idempotencyKey !== undefined && hash !== undefined) {
      // Fast path for a retry: no decoding, no blobs.
      const previous = await this.deps.jobs.findIdempotencyKey(principal.userId, idempotencyKey);
      if (previous && previous.requestHash !== hash) throw new RetouchError("idempotency_key_reused");
      if (previous) return previous.response as SubmissionOutput;
    }

    const items = isBatch ? (input.images ?? []) : [input];
    // A single image was validated with the request (the procedure's input schema); batch items arrive unchecked.
    // pMap keeps the items' order, and its first failure rejects and starts no further task.
    const prepared = await pMap(items, (item, index) => this.prepare(item, index, !isBatch), {
      concurrency: IMAGE_FETCH_CONCURRENCY,
    });
    const firstRejected = prepared.find((item): item is RejectedItem => "error" in item);
    if (!isBatch && firstRejected) throw new RetouchError(firstRejected.code, firstRejected.error);
    const toFetch = prepared.filter((item): item is PreparedItem => !("error" in item));

    // Whose limits apply, and when: the same for the pre-check and the submission itself.
    const limitsFor = () => {
      // The last clock the limiter was asked at is the one its figures are reported at.
      clock.now = Date.now();
      return {
        userId: principal.userId,
        ...(idempotencyKey !== undefined && hash !== undefined
          ? { idempotency: { key: idempotencyKey, requestHash: hash } }
          : {}),
        now: clock.now,
        windowMs: MINUTE,
        plans: PLAN_LIMITS_FOR_STORE,
      };
    };

    // The plan's limits and the balance, before any download: a doomed request fetches nothing. Read-only and
    // counted as if every remaining item were accepted; retouch_submit checks again, under the account's lock.
    if (toFetch.some((item) => item.image === undefined || (item.hasMask && item.mask === undefined))) {
      const precheck = await this.deps.jobs.precheck({
        ...limitsFor(),
        ...(isBatch ? { batchSize: items.length } : {}),
        count: toFetch.length,
      });
      if (precheck.state === "refused")
        throw refusalError(precheck.refusal, toFetch.length, items.length, topUpHint(this.deps.config));
      if (precheck.state === "replay") return precheck.response as SubmissionOutput;
    }

    // Fetching image_urls happens here: after the idempotency fast path and the limits, before any money moves.
    // A host failing sinks the whole request (502, nothing saved under the key), so a retry with the key can succeed.
    const session = this.images.newSession(principal.userId);
    let checked: Array<AcceptedItem | RejectedItem>;
    try {
      checked = await pMap(prepared, (item) => ("error" in item ? item : this.complete(item, session)), {
        concurrency: this.images.requestConcurrency,
      });
    } catch (error) {
      session.controller.abort();
      throw error;
    }
    const accepted = checked.filter((item): item is AcceptedItem => !("error" in item));
    const rejected = checked.filter((item): item is RejectedItem => "error" in item);
    if (!isBatch && rejected[0]) throw new RetouchError(rejected[0].code, rejected[0].error);

    const written = await this.writeBlobs(accepted);
    const batchId = isBatch ? newId("bat") : null;
    try {
      const outcome = await this.deps.jobs.submit({
        ...limitsFor(),
        queue: this.deps.queue,
        ...(batchId ? { batch: { id: batchId, size: items.length } } : {}),
        jobs: [
          ...accepted.map((item) => this.pendingJob(batchId, item, written)),
          ...rejected.map((item) => this.rejectedJob(batchId, item)),
        ],
        response: batchId
          ? {
              batch_id: batchId,
              jobs: checked.map((item) =>
                "error" in item
                  ? { job_id: item.jobId, status: "error", error: item.error, error_code: item.code }
                  : { job_id: item.jobId, status: "pending" },
              ),
            }
          : { job_id: accepted[0]?.jobId as string },
      });
      if (outcome.state === "refused")
        throw refusalError(outcome.refusal, accepted.length, items.length, topUpHint(this.deps.config));
      if (outcome.state === "replay") {
        await this.deleteBlobs(written);
        return outcome.response as SubmissionOutput;
      }
      this.deps.logger.info(
        { userId: principal.userId, jobs: accepted.map((item) => item.jobId), rejected: rejected.length },
        "submission accepted",
      );
      return outcome.response as SubmissionOutput;
    } catch (error) {
      await this.deleteBlobs(written);
      throw error;
    }
  }

  /**
   * Every check of one item that needs no download, its base64 decoded and
   * inspected down to the pixels' header; a problem becomes a rejection the
   * client can act on.
   */
  private async prepare(raw: unknown, index: number, validated: boolean): Promise<PreparedItem | RejectedItem> {
    const jobId = newId("job");
    const parsed = validated ? ({ success: true, data: raw as ProcessItemInput } as const) : processItemSchema.safeParse(raw);
    const loose = (raw && typeof raw === "object" ? raw : {}) as Partial<ProcessItemInput>;
    if (!parsed.success) {
      const reason = parsed.error.issues.map((issue) => `${issue.path.join(".") || "item"}: ${issue.message}`).join("; ");
      return { index, jobId, input: loose, error: reason, code: "invalid_request" };
    }
    const input = parsed.data;
    try {
      if ((input.image === undefined) === (input.image_url === undefined)) {
        throw new RetouchError(
          "invalid_request",
          input.image === undefined
            ? "image: is required: send image (base64) or image_url"
            : "image and image_url: send one of them, not both",
        );
      }
      if (input.mask !== undefined && input.mask_url !== undefined) {
        throw new RetouchError("invalid_request", "mask and mask_url: send one of them, not both");
      }
      if (input.webhook_url !== undefined) {
        const verdict = await checkOutboundUrl(input.webhook_url, {
          allowInsecure: this.deps.config.webhookAllowInsecure,
          ...(this.deps.resolveHost ? { resolve: this.deps.resolveHost } : {}),
        });
        if (!verdict.ok) throw new RetouchError("invalid_request", `webhook_url: ${verdict.reason}`);
      }
      const hasMask = input.mask !== undefined || input.mask_url !== undefined;
      // A prompt nobody here can carry out is refused now, before any money moves (no job, no charge). The plan
      // accepted is the one the worker executes: it is stored with the job, never made again from the worker's settings.
      const plan = planEdit(
        { prompt: input.prompt, ...(input.detect !== undefined ? { detect: input.detect } : {}), hasMask },
        {
          provider: this.deps.config.generativeProvider !== undefined,
          openVocabulary: (await this.deps.openVocabulary?.()) === true,
        },
      );
      if (!plan.ok) throw new RetouchError("unsupported_instruction", plan.message);
      let image: PreparedItem["image"];
      if (input.image !== undefined) {
        const bytes = this.images.decodeBase64(input.image, "image");
        const info = await this.inspect(bytes, "image");
        image = { bytes, width: info.width, height: info.height };
      }
      const mask =
        input.mask !== undefined ? await this.checkMask(this.images.decodeBase64(input.mask, "mask"), "mask") : undefined;
      const outputFormat: ImageFormat = outputFormatFor(plan.workflow, input.format);
      return { index, jobId, input, plan: plannedEdit(plan), outputFormat, image, mask, hasMask };
    } catch (error) {
      if (error instanceof RetouchError) return { index, jobId, input, error: error.message, code: error.code };
      throw error;
    }
  }

  /** Fetches a prepared item's `image_url` and `mask_url`, if any, and inspects them as `prepare` does base64. */
  private async complete(item: PreparedItem, session: FetchSession): Promise<AcceptedItem | RejectedItem> {
    const { index, jobId, input } = item;
    try {
      let image = item.image;
      if (!image) {
        const bytes = await this.images.fetch(input.image_url as string, "image_url", session);
        const info = await this.inspect(bytes, "image_url");
        image = { bytes, width: info.width, height: info.height };
      }
      let mask = item.mask;
      if (item.hasMask && !mask) {
        mask = await this.checkMask(await this.images.fetch(input.mask_url as string, "mask_url", session), "mask_url");
      }
      return {
        index,
        jobId,
        input,
        image: image.bytes,
        mask,
        plan: item.plan,
        outputFormat: item.outputFormat,
        width: image.width,
        height: image.height,
      };
    } catch (error) {
      if (error instanceof RetouchError && !(error instanceof RequestLevelError)) {
        return { index, jobId, input, error: error.message, code: error.code };
      }
      throw error;
    }
  }

  /** A mask must be a PNG. */
  private async checkMask(mask: Buffer, field: string): Promise<Buffer> {
    const info = await this.inspect(mask, field);
    if (info.format !== "png") throw new RetouchError("invalid_request", `${field}: must be a PNG (got ${info.format})`);
    return mask;
  }

  private async inspect(bytes: Buffer, field: string) {
    try {
      return await inspectImage(bytes, this.deps.config.maxImagePixels);
    } catch (error) {
      if (error instanceof EngineError) throw new RetouchError("invalid_request", `${field}: ${error.message}`);
      throw error;
    }
  }

  private async writeBlobs(items: AcceptedItem[]): Promise<Map<string, { input: string; mask: string | null }>> {
    const written = new Map<string, { input: string; mask: string | null }>();
    const outcomes = await Promise.allSettled(
      items.map(async (item) => {
        const input = `inputs/${item.jobId}`;
        const mask = item.mask ? `masks/${item.jobId}` : null;
        written.set(item.jobId, { input, mask });
        await this.deps.blobs.put(input, item.image);
        if (mask && item.mask) await this.deps.blobs.put(mask, item.mask, { contentType: "image/png" });
      }),
    );
    const failed = outcomes.find((outcome): outcome is PromiseRejectedResult => outcome.status === "rejected");
    if (failed) {
      // Nothing was charged; the store's failure (BlobStoreError) becomes a 503 with Retry-After at the edge.
      await this.deleteBlobs(written);
      throw failed.reason;
    }
    return written;
  }

  /** Best effort: a store that fails here too leaves objects no row names, which is only space. */
  private async deleteBlobs(written: Map<string, { input: string; mask: string | null }>): Promise<void> {
    const keys = [...written.values()].flatMap(({ input, mask }) => [input, mask].filter((key): key is string => key !== null));
    try {
      await this.deps.blobs.deleteMany(keys);
    } catch (error) {
      this.deps.logger.warn({ err: error, keys: keys.length }, "could not delete a refused submission's uploads");
    }
  }

  private pendingJob(
    batchId: string | null,
    item: AcceptedItem,
    written: Map<string, { input: string; mask: string | null }>,
  ): NewJob {
    const blobs = written.get(item.jobId);
    return {
      id: item.jobId,
      batchId,
      batchIndex: batchId ? item.index : null,
      status: "pending",
      workflow: item.plan.workflow,
      plan: item.plan,
      prompt: item.input.prompt,
      negativePrompt: item.input.negative_prompt ?? null,
      detect: item.input.detect ?? null,
      outputFormat: item.outputFormat,
      quality: item.input.quality ?? null,
      webhookUrl: item.input.webhook_url ?? null,
      inputBlob: blobs?.input ?? null,
      maskBlob: blobs?.mask ?? null,
      inputWidth: item.width,
      inputHeight: item.height,
      rejection: null,
    };
  }

  private rejectedJob(batchId: string | null, item: RejectedItem): NewJob {
    const format = item.input.format;
    return {
      id: item.jobId,
      batchId,
      batchIndex: item.index,
      status: "error",
      workflow: "generative_edit",
      plan: null,
      prompt: typeof item.input.prompt === "string" ? item.input.prompt.slice(0, 2000) : "",
      negativePrompt: null,
      detect: null,
      outputFormat: isOutputFormat(format) ? format : "jpeg",
      quality: null,
      webhookUrl: null,
      inputBlob: null,
      maskBlob: null,
      inputWidth: null,
      inputHeight: null,
      rejection: item.error,
    };
  }
}
