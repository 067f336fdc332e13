import type { Config } from "../config/env";
import type { Logger } from "../lib/logger";
import type { RetouchMetrics, WebhookAttemptOutcome } from "../lib/metrics";
import { OutboundRefusedError, postJson } from "../lib/outbound-http";
import { standardWebhooksSecret, webhookHeaders } from "../lib/webhook-signature";
import type { JobRow, JobsStore, SettledJob } from "../stores/jobs.store";
import type { DeliveryRow, WebhookDeliveriesStore } from "../stores/webhook-deliveries.store";
import { failureOf, type JobsService, metadataOf } from "./jobs.service";
import type { Principal } from "./principal";
import type { ProfilesService } from "./profiles.service";

const MAX_RESPONSE_BYTES = 16 * 1024;

export interface WebhooksDependencies {
  deliveries: WebhookDeliveriesStore;
  jobs: JobsStore;
  jobsService: JobsService;
  profiles: ProfilesService;
  config: Pick<Config, "webhookAllowInsecure" | "webhookRetryDelaysMs" | "webhookTimeoutMs">;
  logger: Logger;
  /** Puts an attempt on the durable queue for `at`. */
  scheduleDelivery(deliveryId: string, at: Date): Promise<void>;
  /** For tests: how receiver hosts resolve. */
  resolveHost?: (host: string) => Promise<string[]>;
  /** Counts each attempt by outcome (retouch_webhook_attempts_total). */
  metrics?: Pick<RetouchMetrics, "webhookAttempts">;
}

export interface DeliveryListing {
  id: string;
  job_id: string;
  url: string;
  status: DeliveryRow["status"];
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  last_attempt_at: string | null;
  next_attempt_at: string | null;
  created_at: string;
  delivered_at: string | null;
}

/**
 * Settlement callbacks. A delivery is created in the transaction that settles
 * the job; each attempt is a queue job, so retries survive restarts. A non-2xx
 * answer (3xx included), a timeout or a connection error is retried after each
 * of `webhookRetryDelaysMs`, then the delivery is marked failed.
 */
export class WebhooksService {
  constructor(private readonly deps: WebhooksDependencies) {}

  async secrets(userId: string): Promise<{ secret: string; standard_webhooks_secret: string }> {
    const secret = await this.deps.profiles.webhookSecret(userId);
    return { secret, standard_webhooks_secret: standardWebhooksSecret(secret) };
  }

  /** After a job settles: sends its callback now, if the settlement wrote one (JobsStore.settleDone, settleFailed). */
  async afterSettle(job: SettledJob): Promise<void> {
    if (job.webhookDeliveryId !== null) await this.deps.scheduleDelivery(job.webhookDeliveryId, new Date());
  }

  /** One attempt. Safe to run twice: a delivery is attempted by one worker at a time and only while pending. */
  async attempt(deliveryId: string): Promise<void> {
    const { deliveries, logger, config } = this.deps;
    const delivery = await deliveries.lockForAttempt(deliveryId, config.webhookTimeoutMs * 3);
    if (!delivery) return;
    const job = await this.deps.jobs.find(delivery.job_id);
    if (!job || job.status === "pending") {
      await deliveries.recordAttempt(delivery.id, {
        delivered: false,
        statusCode: null,
        error: "job not settled",
        nextAttemptAt: null,
      });
      this.count("skipped");
      return;
    }
    const secret = await this.deps.profiles.webhookSecret(delivery.user_id);
    // Built and signed at each attempt: a fresh timestamp, and for a done job a fresh 1-hour result link.
    const body = JSON.stringify(await this.callbackBody(job));
    let statusCode: number | null = null;
    let error: string | null = null;
    try {
      const response = await postJson(delivery.url, body, webhookHeaders(secret, delivery.id, body), {
        allowInsecure: config.webhookAllowInsecure,
        timeoutMs: config.webhookTimeoutMs,
        maxResponseBytes: MAX_RESPONSE_BYTES,
        ...(this.deps.resolveHost ? { resolve: this.deps.resolveHost } : {}),
      });
      statusCode = response.status;
      if (statusCode < 200 || statusCode >= 300)
        error = `answered ${statusCode}${statusCode >= 300 && statusCode < 400 ? " (redirects are not followed)" : ""}`;
    } catch (caught) {
      error =
        caught instanceof OutboundRefusedError
          ? `refused: ${caught.message}`
          : `${caught instanceof Error ? caught.message : String(caught)}`;
    }
    const delivered = error === null;
    const attemptNumber = delivery.attempts + 1;
    const delay = config.webhookRetryDelaysMs[attemptNumber - 1];
    const nextAttemptAt = delivered || delay === undefined ? null : new Date(Date.now() + delay);
    const recorded = await deliveries.recordAttempt(delivery.id, { delivered, statusCode, error, nextAttemptAt });
    this.count(delivered ? "delivered" : nextAttemptAt ? "retry" : "failed");
    const context = { deliveryId: delivery.id, jobId: job.id, attempt: attemptNumber, statusCode };
    if (delivered) logger.info(context, "webhook delivered");
    else if (nextAttemptAt)
      logger.warn({ ...context, error, retryAt: nextAttemptAt.toISOString() }, "webhook attempt failed; will retry");
    else logger.warn({ ...context, error }, "webhook delivery failed for good");
    if (recorded && nextAttemptAt) await this.deps.scheduleDelivery(delivery.id, nextAttemptAt);
  }

  private count(outcome: WebhookAttemptOutcome): void {
    this.deps.metrics?.webhookAttempts.inc({ outcome });
  }

  /** The spec's callback body; a failed job's also says why (`error_code`, `error_message`) beside the spec's `error`. */
  async callbackBody(job: JobRow): Promise<Record<string, unknown>> {
    const base = { job_id: job.id, status: job.status, ...metadataOf(job) };
    if (job.status === "done" && job.result_format)
      return { ...base, result_url: (await this.deps.jobsService.resultUrl(job)).url };
    return { ...base, ...failureOf(job) };
  }

  async list(principal: Principal, limit: number): Promise<DeliveryListing[]> {
    const rows = await this.deps.deliveries.listForUser(principal.userId, limit);
    return rows.map((row) => ({
      id: row.id,
      job_id: row.job_id,
      url: row.url,
      status: row.status,
      attempts: row.attempts,
      last_status_code: row.last_status_code,
      last_error: row.last_error,
      last_attempt_at: row.last_attempt_at?.toISOString() ?? null,
      next_attempt_at: row.next_attempt_at?.toISOString() ?? null,
      created_at: row.created_at.toISOString(),
      delivered_at: row.delivered_at?.toISOString() ?? null,
    }));
  }

  /** Maintenance: re-schedules deliveries whose queue entry was lost. */
  async rescheduleOverdue(graceMs: number): Promise<number> {
    const overdue = await this.deps.deliveries.overdue(graceMs);
    for (const delivery of overdue) await this.deps.scheduleDelivery(delivery.id, new Date());
    return overdue.length;
  }
}
