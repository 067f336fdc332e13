import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { PostgresBackend } from "@agendajs/postgres-backend";
import { Agenda, type Job } from "agenda";
import type pg from "pg";
import type { Config } from "../config/env";
import type { Logger } from "../lib/logger";
import { DELIVER_WEBHOOK, QueueWorkersStore, WORKER_ID_PREFIX } from "../stores/queue-workers.store";
import { QUEUE_CHANNEL, stateChannelOf, stateNotification } from "./agenda-formats";

export const PROCESS_IMAGE = "process-image";
// Submissions write their queue entry and NOTIFY in the database, in the transaction that creates the job
// (`retouch_submit`), so QUEUE_CHANNEL (agenda-formats.ts) and PROCESS_IMAGE travel to it.
const QUEUE_STATE_CHANNEL = stateChannelOf(QUEUE_CHANNEL);
/** The state events that announce a settled Retouch job (not a queue entry: `jobId` is the job's own id). */
const JOB_SETTLED = "retouch-job-settled";
const MAINTENANCE = "maintenance";

/**
 * The NOTIFY that announces a settled job to every process (the host waiting
 * on it may not be the worker that settled it). Sent by the settling
 * transaction, so PostgreSQL delivers it at commit and never for a rollback;
 * the payload is a state event as @agendajs/postgres-backend writes one, so
 * the queue's own LISTEN connection carries it.
 */
export function settlementNotice(jobId: string): { channel: string; payload: string } {
  return { channel: QUEUE_STATE_CHANNEL, payload: stateNotification({ type: "complete", jobId, jobName: JOB_SETTLED }) };
}

export interface QueueHandlers {
  /** Edits one image. `keepAlive` renews the queue lock; call it while working. */
  processImage(jobId: string, keepAlive: () => Promise<void>): Promise<void>;
  /** One attempt of a settlement callback. */
  deliverWebhook(deliveryId: string): Promise<void>;
  /** Re-enqueues lost jobs, fails timed-out ones, deletes expired files. Runs on one worker at a time. */
  maintenance(): Promise<void>;
}

/**
 * The durable queue: Agenda on PostgreSQL. A submission's transaction inserts
 * the queue entry and NOTIFYs (`retouch_submit`); a worker LISTENing picks it up within milliseconds (polling is
 * only the fallback). Each worker beats a heartbeat (queue_workers) and its
 * locks carry its id (Agenda's `name`, written to last_modified_by); a worker
 * that dies is found by the next heartbeat of another (or of its own
 * successor) once silent for three periods, and its locks are freed then,
 * not when they expire (`jobLockLifetimeMs`, 60 s for webhook attempts).
 */
export interface JobQueueOptions {
  pool: pg.Pool;
  config: Pick<Config, "workerConcurrency" | "jobLockLifetimeMs" | "queuePollIntervalMs" | "workerHeartbeatMs">;
  logger: Logger;
}

export class JobQueue {
  private readonly agenda: Agenda;
  private working = false;
  /** Handlers running now; shutdown waits for them (Agenda's own drain can miss a completion). */
  private readonly running = new Set<Promise<void>>();
  /** Who waits for which job to settle (`watchSettlement`). */
  private readonly settlementWatchers = new Map<string, Set<() => void>>();
  /** This process in the queue: the holder named in its locks and its heartbeat row. Never reused. */
  readonly workerId = `${WORKER_ID_PREFIX}${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly workers: QueueWorkersStore;
  private heartbeat: NodeJS.Timeout | undefined;
  /** Set by `stop`: from then on the LISTEN connection must stay closed. */
  private stopped = false;

  constructor(private readonly options: JobQueueOptions) {
    const { config, logger } = options;
    const backend = new PostgresBackend({ pool: options.pool, ensureSchema: false, channelName: QUEUE_CHANNEL });
    // The LISTEN connection re-emits its errors on the channel (the backend reconnects by itself);
    // unheard, one of them (PostgreSQL shutting down: 57P01) would end the process.
    backend.notificationChannel?.on("error", (error: unknown) =>
      logger.warn({ err: error }, "queue notification connection lost; reconnecting"),
    );
    // A reconnect in flight when `stop` disconnected the channel (the database had cut its connection, and the
    // backend retries with growing delays) finishes after it: it would check a pooled connection out for ever, and
    // closing the pool waits on every connection checked out. Seen as a shutdown that hung under load, once a
    // database had refused connections for a while (operations.test.ts). So a channel that comes back after `stop`
    // is disconnected again.
    const channel = backend.notificationChannel;
    channel?.on("stateChange", (state: unknown) => {
      if (this.stopped && state !== "disconnected") channel.disconnect().catch(() => undefined);
    });
    backend.notificationChannel?.subscribeState?.((event) => {
      if (event.jobName !== JOB_SETTLED) return;
      for (const wake of this.settlementWatchers.get(String(event.jobId)) ?? []) wake();
    });
    this.workers = new QueueWorkersStore(options.pool);
    this.agenda = new Agenda({
      // The table is created by our migrations (0003-queue), never by the backend.
      backend,
      // Written to each lock this process takes (last_modified_by): who to ask whether the holder is alive.
      name: this.workerId,
      processEvery: config.queuePollIntervalMs,
      maxConcurrency: config.workerConcurrency + 1,
      defaultLockLifetime: config.jobLockLifetimeMs,
      removeOnComplete: true,
      logging: false,
    });
    this.agenda.on("error", (error) => logger.error({ err: error }, "queue error"));
  }

  /** Makes this process a worker: it will run the queue's jobs once started. */
  work(handlers: QueueHandlers): void {
    const { config } = this.options;
    const track = (work: Promise<void>): Promise<void> => {
      this.running.add(work);
      return work.finally(() => this.running.delete(work));
    };
    this.agenda.define<{ jobId: string }>(
      PROCESS_IMAGE,
      (job: Job<{ jobId: string }>) => track(handlers.processImage(job.attrs.data.jobId, () => job.touch())),
      { concurrency: config.workerConcurrency, lockLifetime: config.jobLockLifetimeMs, lockLimit: config.workerConcurrency },
    );
    this.agenda.define<{ deliveryId: string }>(
      DELIVER_WEBHOOK,
      // Tracked like edits: a shutdown that cut an attempt between the receiver's answer and
      // the next attempt's scheduling would leave the retry to the maintenance sweep, minutes later.
      (job) => track(handlers.deliverWebhook(job.attrs.data.deliveryId)),
      {
        concurrency: 10,
        lockLifetime: 60_000,
      },
    );
    this.agenda.define(MAINTENANCE, () => track(handlers.maintenance()), { concurrency: 1, lockLifetime: 5 * 60_000 });
    this.working = true;
  }

  /**
   * Connects LISTEN/NOTIFY and, for a worker, starts taking jobs. A process
   * that only enqueues (role api) must start too, or its NOTIFY is never sent.
   */
  async start(): Promise<void> {
    if (this.working) {
      // The row comes before any lock (see releaseDead); a predecessor's locks are freed before jobs are taken.
      await this.workers.beat(this.workerId, this.options.config.workerHeartbeatMs);
      await this.releaseDeadWorkersLocks();
      this.heartbeat = setInterval(() => void this.beat(), this.options.config.workerHeartbeatMs);
      this.heartbeat.unref();
    }
    await this.agenda.start();
  }

  private async beat(): Promise<void> {
    try {
      await this.workers.beat(this.workerId, this.options.config.workerHeartbeatMs);
      await this.releaseDeadWorkersLocks();
    } catch (error) {
      // The database is away for now: the next beat tries again (the locks still expire on their own).
      this.options.logger.warn({ err: error }, "queue heartbeat failed");
    }
  }

  private async releaseDeadWorkersLocks(): Promise<void> {
    const released = await this.workers.releaseDead(QUEUE_CHANNEL);
    if (released.length > 0) {
      const heldBy = [...new Set(released.map((lock) => lock.heldBy))];
      this.options.logger.warn(
        { workers: heldBy, jobs: released.map((lock) => `${lock.name}:${lock.id}`) },
        "freed the queue locks of stopped workers; their jobs run again now",
      );
    }
  }

  /**
   * For a worker: (re)schedules the repeating maintenance job. Separate from
   * `start` so a process can call it once it serves requests: its first date
   * computation loads the ICU locale data, some 50 ms, and it is due only a
   * minute later anyway.
   */
  async scheduleMaintenance(): Promise<void> {
    if (this.working) await this.agenda.every("1 minute", MAINTENANCE);
  }

  /** Enqueues unless a queue entry for the job is already waiting (used by the reconciler). */
  async enqueueOnce(jobId: string): Promise<void> {
    await this.agenda.create(PROCESS_IMAGE, { jobId }).unique({ "data.jobId": jobId }, { insertOnly: true }).save();
  }

  /**
   * Calls `onSettled` when the job settles, in whichever process (see
   * `settlementNotice`); returns the function that stops watching. Heard only
   * once `start` has connected, and not while the LISTEN connection is
   * reconnecting: a waiter reads the job's state itself before and after.
   */
  watchSettlement(jobId: string, onSettled: () => void): () => void {
    let watchers = this.settlementWatchers.get(jobId);
    if (!watchers) {
      watchers = new Set();
      this.settlementWatchers.set(jobId, watchers);
    }
    watchers.add(onSettled);
    return () => {
      watchers.delete(onSettled);
      if (watchers.size === 0 && this.settlementWatchers.get(jobId) === watchers) this.settlementWatchers.delete(jobId);
    };
  }

  /** Schedules a webhook attempt; the queue keeps it across restarts. */
  async scheduleDelivery(deliveryId: string, at: Date): Promise<void> {
    await this.agenda.schedule(at, DELIVER_WEBHOOK, { deliveryId });
  }

  /**
   * Stops taking jobs (queued ones are unlocked for other workers) and waits,
   * up to `timeoutMs`, for the running ones; any still running are picked up
   * elsewhere at another worker's next heartbeat (this one's row is removed).
   */
  async stop(timeoutMs: number): Promise<void> {
    this.stopped = true;
    clearInterval(this.heartbeat);
    await this.agenda.stop(false);
    if (this.running.size > 0) await this.waitForRunning(timeoutMs);
    // Gone for good: what it still holds (jobs cut by the timeout) is anyone's at the next heartbeat elsewhere.
    if (this.heartbeat) {
      this.heartbeat = undefined;
      await this.workers
        .remove(this.workerId)
        .catch((error: unknown) => this.options.logger.warn({ err: error }, "could not remove the queue heartbeat"));
    }
  }

  private async waitForRunning(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      Promise.allSettled([...this.running]).then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), timeoutMs);
      }),
    ]);
    clearTimeout(timer);
    if (timedOut)
      this.options.logger.warn({ running: this.running.size }, "shutdown timeout: unfinished jobs will be picked up again");
  }
}
