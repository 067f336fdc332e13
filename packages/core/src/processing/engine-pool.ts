import { Worker } from "node:worker_threads";
import type { EditRequest, EditResult, ImageEngine } from "../engine/engine.ports";
import { EngineError, type EngineFailureReason } from "../engine/engine-error";
import { workerScript } from "../engine/worker-script";
import type { Logger } from "../lib/logger";
import type { EngineWorkerOptions } from "./engine.worker";

/** What crosses the thread boundary: plain data, the bytes as transferable arrays. */
export type WorkerRequest = Omit<EditRequest, "image" | "mask" | "signal"> & { image: Uint8Array; mask?: Uint8Array };
export type WorkerMessage =
  | { kind: "edit"; id: number; request: WorkerRequest }
  | { kind: "cancel"; id: number }
  | { kind: "configure"; options: EngineWorkerOptions };
export type WorkerReply =
  | { kind: "edited"; id: number; ok: true; result: Omit<EditResult, "image"> & { image: Uint8Array } }
  | { kind: "edited"; id: number; ok: false; error: { message: string; reason?: EngineFailureReason } }
  | { kind: "configured"; ok: boolean; error?: string };

interface Task {
  id: number;
  request: WorkerRequest;
  signal: AbortSignal | undefined;
  resolve(result: EditResult): void;
  reject(error: unknown): void;
}

interface Slot {
  worker: Worker;
  task: Task | undefined;
  /** Waiting for the thread to confirm new options, in the order they were sent. */
  configuring: { resolve(): void; reject(error: Error): void }[];
}

const script = workerScript("engine.worker", import.meta.url);
/** How long a cancelled edit may take to notice before its thread is terminated. */
const CANCEL_GRACE_MS = 5_000;

function toTransferable(bytes: Buffer): Uint8Array {
  // A Buffer may be a view on a shared pool: copy into an array of its own, which can be moved.
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return copy;
}

/**
 * The engine's pixel loops are synchronous JavaScript. Run on the main thread
 * they would stall HTTP and the queue's lock renewal; here each edit runs in
 * a worker thread, `size` at a time, and a stuck edit can be terminated.
 */
export class EnginePool implements ImageEngine {
  private readonly slots: Slot[] = [];
  private readonly waiting: Task[] = [];
  private nextId = 1;
  private closed = false;

  constructor(
    private readonly size: number,
    private options: EngineWorkerOptions,
    private readonly logger: Logger,
  ) {}

  /**
   * Switches every thread to new engine options (a model that became
   * available). Each thread loads the new engine beside the old one and swaps
   * when it is ready, so no edit waits for the load; threads started later get
   * the new options. If a thread cannot load it, all go back to the old
   * options and the promise rejects.
   */
  async reconfigure(options: EngineWorkerOptions): Promise<void> {
    const previous = this.options;
    this.options = options;
    const results = await Promise.allSettled(this.slots.map((slot) => this.configure(slot, options)));
    const failure = results.find((result) => result.status === "rejected");
    if (failure) {
      this.options = previous;
      for (const slot of this.slots) this.configure(slot, previous).catch(() => {});
      throw failure.reason;
    }
  }

  edit(request: EditRequest): Promise<EditResult> {
    if (this.closed) return Promise.reject(new Error("the engine pool is closed"));
    const { image, mask, signal, ...rest } = request;
    return new Promise<EditResult>((resolve, reject) => {
      const task: Task = {
        id: this.nextId++,
        request: { ...rest, image: toTransferable(image), ...(mask ? { mask: toTransferable(mask) } : {}) },
        signal,
        resolve,
        reject,
      };
      if (signal?.aborted) {
        reject(new EngineError("cancelled", "The edit was cancelled before it started."));
        return;
      }
      this.waiting.push(task);
      this.dispatch();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const task of this.waiting.splice(0)) task.reject(new Error("the engine pool is closed"));
    await Promise.all(this.slots.splice(0).map((slot) => slot.worker.terminate()));
  }

  private dispatch(): void {
    while (this.waiting.length > 0) {
      let slot = this.slots.find((candidate) => candidate.task === undefined);
      if (!slot && this.slots.length < this.size) slot = this.spawn();
      if (!slot) return;
      const task = this.waiting.shift() as Task;
      this.run(slot, task);
    }
  }

  private spawn(): Slot {
    const worker = new Worker(script.url, { workerData: this.options, execArgv: script.execArgv });
    const slot: Slot = { worker, task: undefined, configuring: [] };
    worker.on("message", (reply: WorkerReply) => {
      if (reply.kind === "edited") this.settle(slot, reply);
      else if (reply.ok) slot.configuring.shift()?.resolve();
      else slot.configuring.shift()?.reject(new Error(reply.error ?? "the engine thread could not load the new options"));
    });
    worker.on("error", (error) => this.fail(slot, error));
    worker.on("exit", (code) => {
      if (slot.task) this.fail(slot, new Error(`the engine thread exited (code ${code}) during an edit`));
      // A thread that is gone needs no new options: its replacement starts with them.
      for (const waiter of slot.configuring.splice(0)) waiter.resolve();
      this.remove(slot);
    });
    this.slots.push(slot);
    return slot;
  }

  private configure(slot: Slot, options: EngineWorkerOptions): Promise<void> {
    return new Promise((resolve, reject) => {
      slot.configuring.push({ resolve, reject });
      slot.worker.postMessage({ kind: "configure", options } satisfies WorkerMessage);
    });
  }

  private run(slot: Slot, task: Task): void {
    slot.task = task;
    const transfer = [task.request.image.buffer, ...(task.request.mask ? [task.request.mask.buffer] : [])] as ArrayBuffer[];
    slot.worker.postMessage({ kind: "edit", id: task.id, request: task.request } satisfies WorkerMessage, transfer);
    task.signal?.addEventListener(
      "abort",
      () => {
        if (slot.task !== task) return;
        slot.worker.postMessage({ kind: "cancel", id: task.id } satisfies WorkerMessage);
        // An edit deep in a pixel loop may not look at its signal soon: end the thread.
        setTimeout(() => {
          if (slot.task === task) {
            this.logger.warn({ taskId: task.id }, "engine thread ignored cancellation; terminating it");
            this.fail(slot, new EngineError("cancelled", "The edit was cancelled."));
            void slot.worker.terminate();
          }
        }, CANCEL_GRACE_MS).unref();
      },
      { once: true },
    );
  }

  private settle(slot: Slot, reply: Extract<WorkerReply, { kind: "edited" }>): void {
    const task = slot.task;
    if (!task || task.id !== reply.id) return;
    slot.task = undefined;
    if (reply.ok)
      task.resolve({
        ...reply.result,
        image: Buffer.from(reply.result.image.buffer, reply.result.image.byteOffset, reply.result.image.byteLength),
      });
    else
      task.reject(reply.error.reason ? new EngineError(reply.error.reason, reply.error.message) : new Error(reply.error.message));
    this.dispatch();
  }

  private fail(slot: Slot, error: unknown): void {
    const task = slot.task;
    slot.task = undefined;
    task?.reject(error);
    this.remove(slot);
    this.dispatch();
  }

  private remove(slot: Slot): void {
    const index = this.slots.indexOf(slot);
    if (index >= 0) this.slots.splice(index, 1);
  }
}
