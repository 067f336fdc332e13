import os from "node:os";
import { MessageChannel, Worker } from "node:worker_threads";
import sharp from "sharp";
import type { EditRequest, EditResult, ImageEngine } from "../engine.ports";
import { EngineError } from "../engine-error";
import type { OnnxModelSpec } from "../models/onnx-runner";
import { RemoteOnnxRunner } from "../models/onnx-runner.remote";
import { PointSelector } from "../vision/point-selection";
import { promptableSegmenter, promptableSegmenterSpecs } from "../vision/segmenter-choice";
import { VisionThreadHost } from "../vision/vision-thread";
import type {
  EngineWorkerOptions,
  InferenceMessage,
  InferenceReply,
  WorkerMessage,
  WorkerReply,
  WorkerRequest,
} from "./engine-worker.protocol";
import type { InferenceWorkerOptions } from "./inference.worker";
import { workerScript } from "./worker-script";

/** Where the pool reports a thread it had to terminate or restart (a pino logger fits). */
export interface PoolLogger {
  warn(details: Record<string, unknown>, message: string): void;
}

export interface EnginePoolOptions {
  /** onnxruntime threads of the one inference thread. Default: the cores this process may use. */
  inferenceThreads?: number;
  /** How long the vision thread (detector, pose model) stays up after its last pass. Default VISION_IDLE_MS. */
  visionIdleMs?: number;
  /** Told of each model session the inference thread makes (at a model's first use): its file and load time. */
  onModelLoaded?: (file: string, seconds: number) => void;
}

interface Task {
  id: number;
  request: WorkerRequest;
  /** The picture's pixels, from its header (undefined where it cannot be read: the edit says why). */
  pixels: Promise<number | undefined>;
  /** Ends the vision thread's count of this edit (VisionThreadHost.track), once it runs. */
  untrack?: () => void;
  signal: AbortSignal | undefined;
  resolve(result: EditResult): void;
  reject(error: unknown): void;
}

interface Slot {
  worker: Worker;
  task: Task | undefined;
  /** Waiting for the thread to confirm new options, in the order they were sent. */
  configuring: { resolve(): void; reject(error: Error): void }[];
  /** Has a port to the current inference thread. */
  connected: boolean;
}

const engineScript = workerScript("engine.worker", import.meta.url);
const inferenceScript = workerScript("inference.worker", import.meta.url);
/** How long a cancelled edit may take to notice before its thread is terminated. */
const CANCEL_GRACE_MS = 5_000;

function toTransferable(bytes: Buffer): Uint8Array {
  // A Buffer may be a view on a shared pool: copy into an array of its own, which can be moved.
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return copy;
}

/** The picture's pixels from its header (libvips reads no more); undefined where it cannot be read. */
function pixelsOf(bytes: Buffer): Promise<number | undefined> {
  return sharp(bytes, { limitInputPixels: false })
    .metadata()
    .then(
      ({ width, height }) => (width && height ? width * height : undefined),
      () => undefined,
    );
}

function usesModels(options: EngineWorkerOptions): boolean {
  return modelSpecs(options).length > 0;
}

/** The models the options name, as the inference thread keys their sessions. */
function modelSpecs(options: EngineWorkerOptions): OnnxModelSpec[] {
  const model = options.backgroundModel ?? (options.backgroundModelPath ? { path: options.backgroundModelPath } : undefined);
  return [
    ...(model ? [{ path: model.path, ...(model.inputSize ? { inputSize: model.inputSize } : {}) }] : []),
    ...(options.inpaintingModel ? [{ path: options.inpaintingModel.path }] : []),
    ...segmenterSpecs(options),
  ];
}

/** The promptable segmenter's two models and the open-vocabulary detector's, keyed as their users ask for them. */
function segmenterSpecs(options: EngineWorkerOptions): OnnxModelSpec[] {
  return [
    ...promptableSegmenterSpecs(options),
    ...(options.objectDetector ? [{ path: options.objectDetector.modelPath, allOutputs: true }] : []),
  ];
}

/**
 * The engine's pixel loops are synchronous JavaScript. Run on the main thread
 * they would stall HTTP and the queue's lock renewal; here each edit runs in
 * a worker thread, `size` at a time, and a stuck edit can be terminated.
 *
 * Learned models run in one more thread, the inference thread, which every
 * engine thread reaches through a port of its own: one session per model in
 * the process however many edits run, and one forward pass at a time using
 * every core (onnx-runner.ts says why). It starts when the options first name
 * a model, and is restarted if it dies (an edit waiting on it fails). The
 * built-in detector and the pose model run in a third kind, the vision thread
 * (vision-thread.ts): one for the pool, up while removals come.
 */
export class EnginePool implements ImageEngine {
  private readonly slots: Slot[] = [];
  private readonly waiting: Task[] = [];
  private nextId = 1;
  private closed = false;
  private inference: Worker | undefined;
  /** This thread's port to the inference thread, for click-to-select; opened at the first selection. */
  private selectionRunner: RemoteOnnxRunner | undefined;
  private selector: PointSelector | undefined;
  private readonly vision: VisionThreadHost;

  constructor(
    private readonly size: number,
    private options: EngineWorkerOptions,
    private readonly logger: PoolLogger,
    private readonly poolOptions: EnginePoolOptions = {},
  ) {
    this.vision = new VisionThreadHost(poolOptions.visionIdleMs);
  }

  /** The vision thread's starts, and whether it runs now (vision-thread.ts). */
  get visionThread(): { starts: number; running: boolean } {
    return this.vision.stats;
  }

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
    if (usesModels(options)) for (const slot of this.slots) this.connectInference(slot);
    const results = await Promise.allSettled(this.slots.map((slot) => this.configure(slot, options)));
    const failure = results.find((result) => result.status === "rejected");
    if (failure) {
      this.options = previous;
      for (const slot of this.slots) this.configure(slot, previous).catch(() => {});
      throw failure.reason;
    }
    // The next selection prompts the segmenter now configured (a catalog one that became available).
    this.selector = undefined;
    // Sessions of models no longer configured are released.
    this.inference?.postMessage({ kind: "retain", keep: modelSpecs(options) } satisfies InferenceMessage);
  }

  edit(request: EditRequest): Promise<EditResult> {
    if (this.closed) return Promise.reject(new Error("the engine pool is closed"));
    const { image, mask, signal, ...rest } = request;
    return new Promise<EditResult>((resolve, reject) => {
      const task: Task = {
        id: this.nextId++,
        request: { ...rest, image: toTransferable(image), ...(mask ? { mask: toTransferable(mask) } : {}) },
        // From the caller's bytes, which stay here; the copy goes to the engine thread.
        pixels: pixelsOf(image),
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

  /**
   * Click-to-select's encoder and decoder, run by the inference thread like
   * every other model (one session per model in the process, one pass at a
   * time). What runs on this thread is light: the picture is decoded by
   * sharp's own threads straight to the encoder's size, and the one loop,
   * normalising 1024 x 1024 pixels, takes a few milliseconds. Undefined when
   * the segmenter is switched off (RETOUCH_OBJECT_SEGMENTER=none) or its
   * package is not installed.
   */
  pointSelector(): PointSelector | undefined {
    if (this.closed) return undefined;
    if (!this.selector) {
      const runner = this.selectionRunner ?? new RemoteOnnxRunner();
      const segmenter = promptableSegmenter(this.options, runner);
      if (!segmenter) return undefined;
      if (!this.selectionRunner) {
        this.selectionRunner = runner;
        this.connectSelection();
      }
      this.selector = new PointSelector(segmenter, this.options.maxPixels);
    }
    return this.selector;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const task of this.waiting.splice(0)) task.reject(new Error("the engine pool is closed"));
    const inference = this.inference;
    this.inference = undefined;
    await Promise.all([
      ...this.slots.splice(0).map((slot) => slot.worker.terminate()),
      inference?.terminate(),
      this.vision.close(),
    ]);
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
    const worker = new Worker(engineScript.url, { workerData: this.options, execArgv: engineScript.execArgv });
    const slot: Slot = { worker, task: undefined, configuring: [], connected: false };
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
    const vision = this.vision.connect();
    worker.postMessage({ kind: "vision", port: vision } satisfies WorkerMessage, [vision]);
    if (usesModels(this.options)) this.connectInference(slot);
    return slot;
  }

  /** Gives an engine thread a port to the inference thread, starting that thread if needed. */
  private connectInference(slot: Slot): void {
    if (slot.connected) return;
    const { port1, port2 } = new MessageChannel();
    this.inferenceThread().postMessage({ kind: "connect", port: port2 } satisfies InferenceMessage, [port2]);
    slot.worker.postMessage({ kind: "inference", port: port1 } satisfies WorkerMessage, [port1]);
    slot.connected = true;
  }

  private connectSelection(): void {
    if (!this.selectionRunner) return;
    const { port1, port2 } = new MessageChannel();
    this.inferenceThread().postMessage({ kind: "connect", port: port2 } satisfies InferenceMessage, [port2]);
    this.selectionRunner.connect(port1);
    // The HTTP server keeps the process alive; an idle selection port must not.
    port1.unref();
  }

  private inferenceThread(): Worker {
    if (this.inference) return this.inference;
    const workerData: InferenceWorkerOptions = {
      threads: this.poolOptions.inferenceThreads ?? os.availableParallelism(),
    };
    const inference = new Worker(inferenceScript.url, { workerData, execArgv: inferenceScript.execArgv });
    inference.on("error", (error) => this.logger.warn({ err: error }, "the inference thread failed"));
    inference.on("message", (reply: InferenceReply) => {
      if (reply.kind === "loaded") this.poolOptions.onModelLoaded?.(reply.file, reply.seconds);
    });
    inference.on("exit", (code) => {
      if (this.inference !== inference) return;
      this.inference = undefined;
      for (const slot of this.slots) slot.connected = false;
      if (this.closed) return;
      // Edits that were waiting on it have failed (their ports closed); later ones get a new thread.
      this.logger.warn({ code }, "the inference thread exited; starting a new one");
      if (usesModels(this.options)) for (const slot of this.slots) this.connectInference(slot);
      this.connectSelection();
    });
    this.inference = inference;
    return inference;
  }

  private configure(slot: Slot, options: EngineWorkerOptions): Promise<void> {
    return new Promise((resolve, reject) => {
      slot.configuring.push({ resolve, reject });
      slot.worker.postMessage({ kind: "configure", options } satisfies WorkerMessage);
    });
  }

  private run(slot: Slot, task: Task): void {
    slot.task = task;
    task.untrack = this.vision.track(task.pixels);
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
    task.untrack?.();
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
    task?.untrack?.();
    task?.reject(error);
    this.remove(slot);
    this.dispatch();
  }

  private remove(slot: Slot): void {
    const index = this.slots.indexOf(slot);
    if (index >= 0) this.slots.splice(index, 1);
  }
}
