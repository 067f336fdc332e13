import type { ImageEngine } from "@retouch/engine";
import type { Services } from "../services/services";
import { ImageProcessor } from "./image-processor";
import type { QueueHandlers } from "./job-queue";
import { runMaintenance } from "./maintenance";

export interface QueueWorker {
  /** Edits this process's jobs (the host reports its workerId and counts). */
  processor: ImageProcessor;
  /** What the queue runs (JobQueue.work): edits, webhook attempts, the maintenance sweep. */
  handlers: QueueHandlers;
}

/**
 * Everything a worker process runs, wired from the services: the host gives
 * its engine and the queue's id of this process, and hands `handlers` to
 * JobQueue.work. The stores stay inside core; a settled job's webhook goes
 * out through WebhooksService.afterSettle, with the delivery its settlement wrote.
 */
export function createQueueWorker(services: Services, options: { engine: ImageEngine; workerId: string }): QueueWorker {
  const { stores, blobs, config, logger, metrics, webhooks } = services;
  const processor = new ImageProcessor({
    jobs: stores.jobs,
    blobs,
    engine: options.engine,
    config,
    logger,
    onSettled: (job) => webhooks.afterSettle(job),
    workerId: options.workerId,
    metrics,
  });
  return {
    processor,
    handlers: {
      processImage: (jobId, keepAlive) => processor.process(jobId, keepAlive),
      deliverWebhook: (deliveryId) => webhooks.attempt(deliveryId),
      maintenance: () => runServiceMaintenance(services),
    },
  };
}

/** The once-a-minute sweep (runMaintenance) on these services, as of `now` (ms; default: now). */
export function runServiceMaintenance(services: Services, now?: number): Promise<void> {
  const { stores, blobs, config, logger, webhooks, queue } = services;
  return runMaintenance({
    jobs: stores.jobs,
    rateLimits: stores.rateLimits,
    oauthGrants: stores.oauthGrants,
    blobs,
    config,
    logger,
    enqueueOnce: (jobId) => queue.enqueueOnce(jobId),
    onSettled: (job) => webhooks.afterSettle(job),
    rescheduleWebhooks: (graceMs) => webhooks.rescheduleOverdue(graceMs),
    ...(now !== undefined ? { now } : {}),
  });
}
