import type { BlobStore } from "../blobs/blob-store";
import type { Config } from "../config/env";
import { jobFailure } from "../errors/job-failure-codes";
import type { Logger } from "../lib/logger";
import type { JobsStore, SettledJob } from "../stores/jobs.store";
import type { OAuthGrantsStore } from "../stores/oauth-grants.store";
import type { RateLimitsStore } from "../stores/rate-limits.store";

/** Idempotency keys are kept at least 24 hours (the spec's promise); we keep them two days. */
export const IDEMPOTENCY_RETENTION_MS = 48 * 3_600_000;
/**
 * OAuth tokens are deleted a day after they expire: an access token made from a
 * refresh token may outlive it by its own lifetime (an hour), and deleting the
 * refresh token deletes it too.
 */
const EXPIRED_TOKEN_RETENTION_MS = 24 * 3_600_000;

export interface MaintenanceDependencies {
  jobs: JobsStore;
  rateLimits: RateLimitsStore;
  oauthGrants: OAuthGrantsStore;
  blobs: BlobStore;
  config: Pick<Config, "jobLockLifetimeMs" | "jobTimeoutMs">;
  logger: Logger;
  enqueueOnce(jobId: string): Promise<void>;
  onSettled(job: SettledJob): Promise<void>;
  /** Re-schedules webhook attempts whose queue entry was lost. */
  rescheduleWebhooks(graceMs: number): Promise<number>;
  /** For tests: the time to sweep as of. */
  now?: number;
}

/**
 * The once-a-minute sweep that keeps promises: no job stays pending forever,
 * no file outlives its retention, no expired token piles up.
 */
export async function runMaintenance(deps: MaintenanceDependencies): Promise<void> {
  const { jobs, blobs, config, logger } = deps;
  const now = deps.now ?? Date.now();

  // Committed but never enqueued (a crash between the two), or its queue entry lost.
  for (const jobId of await jobs.unclaimedPending(new Date(now - 2 * config.jobLockLifetimeMs))) {
    await deps.enqueueOnce(jobId);
  }

  for (const jobId of await jobs.pendingCreatedBefore(new Date(now - config.jobTimeoutMs))) {
    const failed = await jobs.settleFailed(
      jobId,
      jobFailure("job_timeout", `timed out: still pending after ${config.jobTimeoutMs} ms`),
    );
    if (failed) {
      logger.warn({ jobId }, "job timed out and was refunded");
      await deps.onSettled(failed);
    }
  }

  await deps.rescheduleWebhooks(2 * 60_000);

  // In batches (one DeleteObjects request per 1000 keys on S3); a row forgets its blob only once the
  // blob is gone, so a store that fails here leaves the rest for the next sweep, and nothing is orphaned.
  const expired = await jobs.expiredResults(new Date(now));
  await blobs.deleteMany(expired.map(({ resultBlob }) => resultBlob));
  for (const { id } of expired) await jobs.forgetResult(id);
  const leftovers = await jobs.leftoverInputs(new Date(now - 60_000));
  await blobs.deleteMany(leftovers.flatMap(({ blobs: keys }) => keys));
  for (const { id } of leftovers) await jobs.clearInputBlobs(id);
  await jobs.deleteIdempotencyKeysBefore(new Date(now - IDEMPOTENCY_RETENTION_MS));
  await deps.rateLimits.deleteOlderThan(new Date(now - 24 * 3_600_000));
  await deps.oauthGrants.deleteExpiredTokens(new Date(now - EXPIRED_TOKEN_RETENTION_MS));
}
