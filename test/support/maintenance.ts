import { runMaintenance } from "@retouch/core";
import type { TestApp } from "./test-app";

/** The service's once-a-minute sweep, run now on the test app's own services, as of `now` (a time in ms; default: now). */
export function sweep(app: Pick<TestApp, "services" | "config">, now?: number): Promise<void> {
  const { services } = app;
  return runMaintenance({
    jobs: services.stores.jobs,
    rateLimits: services.stores.rateLimits,
    oauthGrants: services.stores.oauthGrants,
    blobs: services.blobs,
    config: app.config,
    logger: services.logger,
    enqueueOnce: (jobId) => services.queue.enqueueOnce(jobId),
    onSettled: (job) => services.webhooks.afterSettle(job),
    rescheduleWebhooks: (graceMs) => services.webhooks.rescheduleOverdue(graceMs),
    ...(now !== undefined ? { now } : {}),
  });
}
