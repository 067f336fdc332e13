import { hostname } from "node:os";
import type { ImageEngine } from "@retouch/engine";
import { isEngineError } from "@retouch/engine";
import type { BlobStore } from "../blobs/blob-store";
import type { Config } from "../config/env";
import type { ImageFormat } from "../db/schema";
import { type JobFailure, jobFailure, jobFailureFromError } from "../errors/job-failure-codes";
import type { Logger } from "../lib/logger";
import type { RetouchMetrics } from "../lib/metrics";
import { randomHex } from "../lib/secrets";
import type { JobRow, JobsStore, SettledJob } from "../stores/jobs.store";

/** A job that crashed its worker this many times is failed and refunded rather than retried again. */
export const MAX_ATTEMPTS = 3;

export interface ImageProcessorDependencies {
  jobs: JobsStore;
  blobs: BlobStore;
  engine: ImageEngine;
  config: Pick<Config, "jobLockLifetimeMs" | "jobTimeoutMs" | "retentionMs">;
  logger: Logger;
  /** Called once a job reaches `done` or `error` (after the refund): webhooks go out from here. */
  onSettled(job: SettledJob): Promise<void>;
  /** The queue's id of this process (JobQueue.workerId): claims of a dead worker are then freed with its queue locks. */
  workerId?: string;
  /**
   * Times each job this worker settles, by workflow and outcome (retouch_job_duration_seconds), and the
   * stages of each done one's edit (retouch_job_stage_seconds).
   */
  metrics?: Pick<RetouchMetrics, "jobDuration" | "jobStageDuration">;
}

/**
 * Runs one job on this worker: claim it, edit, store the result, settle.
 * Safe to call twice for the same job, from any number of workers: only the
 * holder of the claim edits it, and only a pending job is settled.
 */
export class ImageProcessor {
  /** Names this process in claims: a second process never mistakes another's claim for its own. */
  readonly workerId: string;

  constructor(private readonly deps: ImageProcessorDependencies) {
    this.workerId = deps.workerId ?? `${hostname()}:${process.pid}:${randomHex(4)}`;
  }

  async process(jobId: string, keepAlive: () => Promise<void> = async () => {}): Promise<void> {
    const { jobs, blobs, engine, config, logger } = this.deps;
    const lease = config.jobLockLifetimeMs;
    const job = await jobs.claim(jobId, this.workerId, lease);
    if (!job) {
      logger.debug({ jobId }, "job not claimable (settled, or held by another worker)");
      return;
    }
    if (job.attempts > MAX_ATTEMPTS) {
      const reason = `gave up after ${MAX_ATTEMPTS} attempts: the worker processing it stopped each time`;
      logger.warn({ jobId, code: "worker_crashed", reason }, "job failed");
      await this.fail(job, jobFailure("worker_crashed", reason), null);
      return;
    }
    logger.info({ jobId, workflow: job.workflow, attempt: job.attempts }, "processing job");
    const started = performance.now();
    const controller = new AbortController();
    let timedOut = false;
    // The engine then answers `cancelled`, which this job reports as its timeout.
    const timeout = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, config.jobTimeoutMs);
    let stage: "edit" | "store" | "settle" = "edit";
    // Renew both locks well before they lapse; losing the claim means another worker took over.
    const heartbeat = setInterval(
      () => {
        Promise.all([jobs.renewClaim(jobId, this.workerId, lease), keepAlive()])
          .then(([held]) => {
            if (!held) controller.abort();
          })
          .catch((error: unknown) => logger.warn({ err: error, jobId }, "could not renew the job's lock"));
      },
      Math.max(250, Math.floor(lease / 3)),
    );
    try {
      if (!job.input_blob) throw new Error("the job has no input image");
      const [image, mask] = await Promise.all([blobs.get(job.input_blob), job.mask_blob ? blobs.get(job.mask_blob) : undefined]);
      const result = await engine.edit({
        image,
        prompt: job.prompt,
        ...(job.negative_prompt !== null ? { negativePrompt: job.negative_prompt } : {}),
        format: job.output_format,
        ...(job.quality !== null ? { quality: job.quality } : {}),
        ...(mask ? { mask } : {}),
        ...(job.detect !== null ? { detect: job.detect } : {}),
        // The plan the submission accepted, executed as stored; a job queued before plans were stored has none.
        ...(job.plan !== null ? { plan: job.plan } : {}),
        signal: controller.signal,
      });
      const resultBlob = `results/${jobId}.${result.format}`;
      stage = "store";
      await blobs.put(resultBlob, result.image, { contentType: `image/${result.format}` });
      stage = "settle";
      const settled = await jobs.settleDone(jobId, this.workerId, {
        resultBlob,
        format: result.format as ImageFormat,
        width: result.width,
        height: result.height,
        processingTimeMs: Math.round(performance.now() - started),
        resultExpiresAt: new Date(Date.now() + config.retentionMs),
        ...(result.provider ? { provider: result.provider } : {}),
      });
      if (!settled) {
        // Timed out by the reconciler, or taken over: the other outcome stands.
        await blobs.delete(resultBlob);
        logger.warn({ jobId }, "job was settled elsewhere while it ran; result discarded");
        return;
      }
      logger.info(
        {
          jobId,
          ms: settled.processing_time_ms,
          width: result.width,
          height: result.height,
          ...(result.provider ? { provider: result.provider.name, model: result.provider.model } : {}),
          // What the engine left out on its own judgement (a detection the segmenter did not confirm).
          ...(result.notes?.length ? { notes: result.notes } : {}),
          // Where the edit's time went, in ms by stage (EditResult.stages).
          ...(result.stages ? { stages: Object.fromEntries(result.stages.map(({ stage, ms }) => [stage, ms])) } : {}),
        },
        "job done",
      );
      this.observe(job, "done", started);
      for (const { stage, ms } of result.stages ?? []) {
        this.deps.metrics?.jobStageDuration.observe({ workflow: job.workflow, stage }, ms / 1000);
      }
      await this.afterSettle(settled);
    } catch (error) {
      const failure = jobFailureFromError(error, { timedOut, stage });
      // The whole story (and, for anything unexpected, the stack) goes to the operator; the client gets code and sentence.
      logger.warn(
        { jobId, code: failure.code, reason: failure.reason, ...(isEngineError(error) ? {} : { err: error }) },
        "job failed",
      );
      if (await this.fail(job, failure, Math.round(performance.now() - started))) this.observe(job, "error", started);
    } finally {
      clearTimeout(timeout);
      clearInterval(heartbeat);
    }
  }

  /** Fails a job this worker holds, with its refund; false when it was settled elsewhere meanwhile. */
  private async fail(job: JobRow, failure: JobFailure, processingTimeMs: number | null): Promise<boolean> {
    const settled = await this.deps.jobs.settleFailed(job.id, failure, { workerId: this.workerId, processingTimeMs });
    if (settled) await this.afterSettle(settled);
    return settled !== undefined;
  }

  /** Only jobs this worker settled: one settled elsewhere is counted by the worker that settled it. */
  private observe(job: JobRow, outcome: "done" | "error", started: number): void {
    this.deps.metrics?.jobDuration.observe({ workflow: job.workflow, outcome }, (performance.now() - started) / 1000);
  }

  private async afterSettle(job: SettledJob): Promise<void> {
    const inputs = [job.input_blob, job.mask_blob].filter((key): key is string => key !== null);
    try {
      await this.deps.blobs.deleteMany(inputs);
      if (inputs.length > 0) await this.deps.jobs.clearInputBlobs(job.id);
    } catch (error) {
      // The job has settled: its webhook must still go out. The row still names the inputs, so the
      // maintenance sweep deletes them once the store answers again.
      this.deps.logger.warn({ jobId: job.id, err: error }, "could not delete a settled job's inputs; the sweep will");
    }
    await this.deps.onSettled(job);
  }
}
