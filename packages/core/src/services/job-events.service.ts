import type { Config } from "../config/env";
import { RetouchError } from "../errors/retouch-error";
import { statusInputSchema } from "../schemas/process.schemas";
import type { JobsService, SettlementWatch } from "./jobs.service";
import type { Principal } from "./principal";

/**
 * A slow re-read of the state while a stream waits: only a safety net for a
 * notice lost while the queue's LISTEN connection was reconnecting; the
 * settlement notice is what wakes a stream.
 */
const SAFETY_REREAD_MS = 30_000;

/** What a progress stream follows: one job, or every job of a batch. */
export type EventTarget = { jobId: string } | { batchId: string };

/**
 * One event of a progress stream: `data` is exactly what the status endpoint
 * answers at that moment (JobsService's jobStatus or batchStatus), `id` the
 * position in the target's progress: for a job "0" while pending and "1" once
 * terminal, for a batch how many of its jobs are terminal. Positions only
 * grow, so a client resuming with `Last-Event-ID` gets what came after it.
 */
export interface ProgressEvent {
  id: string;
  data: unknown;
  /** The last event: the job (or every job of the batch) is terminal. */
  terminal: boolean;
}

/** A stream opened for an account: its events until terminal, then it ends (or `signal` aborts it). */
export interface ProgressStream {
  events(signal: AbortSignal): AsyncGenerator<ProgressEvent, void, undefined>;
  /** Gives the account's slot back; called once, when the response is over. */
  release(): void;
}

interface Snapshot {
  event: ProgressEvent;
  /** The jobs not yet terminal: the ones whose settlement wakes the stream. */
  pendingJobIds: string[];
}

/**
 * The progress streams behind `GET /api/process/events`: driven by the queue's
 * settlement notice (heard by every process on its LISTEN connection), never
 * by polling per client, and bounded per account. Each event is re-read from
 * the status service, so its body never drifts from the status endpoint's.
 */
export class JobEventsService {
  /** Open streams per account, in this process. */
  private readonly open = new Map<string, number>();
  /** Aborted on shutdown, so open streams end instead of holding the drain up. */
  private readonly shutdown = new AbortController();

  constructor(
    private readonly jobs: Pick<JobsService, "jobStatus" | "batchStatus">,
    private readonly settlements: SettlementWatch | undefined,
    private readonly config: Pick<Config, "eventStreamsPerAccount">,
  ) {}

  /**
   * Opens a stream: the target must be the account's (404 otherwise, as the
   * status endpoint answers) and the account below its bound (429
   * `too_many_in_flight`: streams, like jobs, are things in flight that free a
   * place when one ends, unlike the per-minute `rate_limited`). `query` is
   * the status endpoint's input; `lastEventId` the header a reconnecting
   * client sends (anything but a position of ours is ignored).
   */
  async openStream(principal: Principal, query: unknown, lastEventId?: string): Promise<ProgressStream> {
    // The status endpoint's own input: exactly one of job_id and batch_id (400 `invalid_request` otherwise).
    const input = statusInputSchema.parse(query);
    const target: EventTarget = input.batch_id !== undefined ? { batchId: input.batch_id } : { jobId: input.job_id as string };
    // Checked before taking a slot: an unknown id costs the account no place.
    await this.read(principal, target);
    const held = this.open.get(principal.userId) ?? 0;
    const limit = this.config.eventStreamsPerAccount;
    if (held >= limit) {
      throw new RetouchError(
        "too_many_in_flight",
        `Your account already has ${limit} progress streams open; close one, or wait for one to end, before opening another.`,
        { retryAfterSeconds: 5 },
      );
    }
    this.open.set(principal.userId, held + 1);
    let released = false;
    const resumeAfter = lastEventId !== undefined && /^\d{1,9}$/.test(lastEventId) ? Number(lastEventId) : -1;
    return {
      events: (signal) => this.follow(principal, target, resumeAfter, signal),
      release: () => {
        if (released) return;
        released = true;
        const left = (this.open.get(principal.userId) ?? 1) - 1;
        if (left > 0) this.open.set(principal.userId, left);
        else this.open.delete(principal.userId);
      },
    };
  }

  /** Ends every open stream (the server is shutting down); clients resume elsewhere with Last-Event-ID. */
  closeAll(): void {
    this.shutdown.abort();
  }

  private async *follow(
    principal: Principal,
    target: EventTarget,
    resumeAfter: number,
    signal: AbortSignal,
  ): AsyncGenerator<ProgressEvent, void, undefined> {
    let sent = resumeAfter;
    let wake: () => void = () => {};
    let woken = false;
    const notify = () => {
      woken = true;
      wake();
    };
    const watched = new Map<string, () => void>();
    const stopped = AbortSignal.any([signal, this.shutdown.signal]);
    stopped.addEventListener("abort", notify, { once: true });
    try {
      while (!stopped.aborted) {
        woken = false;
        const snapshot = await this.read(principal, target);
        // A job newly watched may have settled between the read and the watch: read once more before waiting.
        let newlyWatched = false;
        for (const jobId of snapshot.pendingJobIds) {
          if (watched.has(jobId)) continue;
          watched.set(jobId, this.settlements?.watchSettlement(jobId, notify) ?? (() => {}));
          newlyWatched = true;
        }
        const position = Number(snapshot.event.id);
        // A terminal target always answers its terminal event (a resumed stream of a finished job included).
        if (position > sent || snapshot.event.terminal) {
          sent = position;
          yield snapshot.event;
        }
        if (snapshot.event.terminal) return;
        if (woken || newlyWatched || stopped.aborted) continue;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, SAFETY_REREAD_MS);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = () => {};
      }
    } finally {
      stopped.removeEventListener("abort", notify);
      for (const stop of watched.values()) stop();
    }
  }

  private async read(principal: Principal, target: EventTarget): Promise<Snapshot> {
    if ("jobId" in target) {
      const status = await this.jobs.jobStatus(principal, target.jobId);
      const terminal = status.status !== "pending";
      return { event: { id: terminal ? "1" : "0", data: status, terminal }, pendingJobIds: terminal ? [] : [target.jobId] };
    }
    const status = await this.jobs.batchStatus(principal, target.batchId);
    const pendingJobIds = status.jobs.filter((job) => job.status === "pending").map((job) => job.job_id);
    const settled = status.jobs.length - pendingJobIds.length;
    return { event: { id: String(settled), data: status, terminal: pendingJobIds.length === 0 }, pendingJobIds };
  }
}
