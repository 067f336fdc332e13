import { MessageChannel, type MessagePort, Worker } from "node:worker_threads";
import { EngineError } from "../engine-error";
import { workerScript } from "../runtime/worker-script";
import type { ModelThread, ModelThreadReply } from "./human-model";
import type { HumanThreadInput, HumanThreadOutput } from "./vision-thread.protocol";

/**
 * The engine pool's vision thread: one TensorFlow.js thread per process that
 * runs the built-in object detector (CenterNet) and the pose model (MoveNet)
 * for every engine thread, one pass at a time, and stays up between edits.
 *
 * Without it each removal started a thread, TensorFlow.js's WebAssembly in
 * it and the model: on two cores 0.2 to 0.4 s of a 2 s removal, beside the
 * segmenter's encoder (docs/engine.md), and two removals side by side held
 * two such threads (about 115 MB each). Shared, the process holds one while
 * removals come, and none after VISION_IDLE_MS without one: a WebAssembly
 * memory never shrinks, so ending the thread is how it is given back.
 *
 * Engine threads reach it through a port each, and the pool relays: the pool
 * sees every request, so it alone decides when the thread is idle and ends it,
 * and a request never meets a thread that is going away.
 */
export const VISION_IDLE_MS = 30_000;

const script = workerScript("vision.worker", import.meta.url);

/**
 * A model thread (about 115 MB) is never kept beside the frame of a picture larger than this.
 * While such an edit runs, the pool's vision thread is ended as soon as it has answered (after the
 * detection, after the keypoints: VisionThreadHost.track), and without a pool the detector's thread
 * is not kept open for the keypoints, which start a thread of their own. Kept, the thread lived beside a 12 MP
 * frame's decode and fill: the memory bench at concurrency 2 with IS-Net and the segmenter
 * peaked at 1084-1109 MiB with it (the vision thread kept: 1097 MiB), against 999-1034 MiB
 * without (docs/engine.md), where its start is a small part of a 12 MP edit. At 1 MP the frame
 * is 4 MB and the thread's start and model load a fifth of the removal.
 */
export const VISION_KEEP_MAX_PIXELS = 4_000_000;

/** A pass asked of the thread (what an engine thread sends), and the answer it gets back under the same id. */
export interface VisionTask {
  id: number;
  input: HumanThreadInput;
}
export type VisionReply = { id: number } & ModelThreadReply<HumanThreadOutput>;

interface Route {
  port: MessagePort;
  id: number;
  worker: Worker;
}

/** The pool's side: starts the thread at the first request, relays, and ends it when idle or dead. */
export class VisionThreadHost {
  private worker: Worker | undefined;
  private readonly routes = new Map<number, Route>();
  private readonly ports = new Set<MessagePort>();
  private idleTimer: NodeJS.Timeout | undefined;
  private nextId = 1;
  private startCount = 0;
  /** Edits in flight whose picture is over VISION_KEEP_MAX_PIXELS (see `track`). */
  private largeEdits = 0;

  constructor(private readonly idleMs = VISION_IDLE_MS) {}

  /** How many times the thread was started, and whether it runs now (tests and metrics). */
  get stats(): { starts: number; running: boolean } {
    return { starts: this.startCount, running: this.worker !== undefined };
  }

  /** A port for one engine thread (its VisionThreadClient connects to it). */
  connect(): MessagePort {
    const { port1, port2 } = new MessageChannel();
    port2.on("message", (request: VisionTask) => this.forward(port2, request));
    port2.on("close", () => this.ports.delete(port2));
    // An engine thread's port must not keep the process alive; the engine thread itself does while it edits.
    port2.unref();
    this.ports.add(port2);
    return port1;
  }

  /**
   * An edit the pool runs, by its picture's pixels (undefined where they cannot be read); call the answer when it
   * ends. While an edit over VISION_KEEP_MAX_PIXELS runs, the thread is never kept idle: it is ended as soon as it
   * has answered what it was asked, and the pose model is not loaded ahead of the keypoints. Beside a 12 MP frame's
   * decode and fill it is 115 MB the worker's budget has not got (the mixed-size memory bench, docs/engine.md);
   * a small removal then pays for its start, once for the detection and once for the keypoints.
   */
  track(pixels: Promise<number | undefined>): () => void {
    let counted = false;
    let ended = false;
    void pixels.then((count) => {
      if (ended || count === undefined || count <= VISION_KEEP_MAX_PIXELS) return;
      counted = true;
      this.largeEdits++;
      if (this.routes.size === 0) this.endIdle();
    });
    return () => {
      if (ended) return;
      ended = true;
      if (counted) this.largeEdits--;
    };
  }

  close(): Promise<void> {
    clearTimeout(this.idleTimer);
    for (const port of this.ports) port.close();
    this.ports.clear();
    const worker = this.worker;
    this.worker = undefined;
    return worker ? worker.terminate().then(() => undefined) : Promise.resolve();
  }

  private forward(port: MessagePort, request: VisionTask): void {
    // Loading the pose model ahead is for a thread kept up until the keypoints are asked: not now.
    if (this.largeEdits > 0 && "preparePose" in request.input) {
      port.postMessage({ id: request.id, ok: true, output: null } satisfies VisionReply);
      return;
    }
    clearTimeout(this.idleTimer);
    const worker = this.worker ?? this.start();
    const id = this.nextId++;
    this.routes.set(id, { port, id: request.id, worker });
    worker.postMessage({ id, input: request.input } satisfies VisionTask);
  }

  private start(): Worker {
    const worker = new Worker(script.url, { execArgv: script.execArgv });
    // Idle, it must not keep the process alive; while it works, the engine thread waiting on it does.
    worker.unref();
    this.startCount++;
    worker.on("message", (reply: VisionReply) => this.answer(reply));
    const gone = (message: string) => {
      if (this.worker === worker) this.worker = undefined;
      for (const [id, route] of this.routes) {
        if (route.worker !== worker) continue;
        this.routes.delete(id);
        route.port.postMessage({ id: route.id, ok: false, message } satisfies VisionReply);
      }
    };
    worker.once("error", (error) => gone(`its thread failed (${error.message})`));
    worker.once("exit", (code) => gone(`its thread exited (code ${code}) without an answer`));
    this.worker = worker;
    return worker;
  }

  private answer(reply: VisionReply): void {
    const route = this.routes.get(reply.id);
    if (!route) return;
    this.routes.delete(reply.id);
    route.port.postMessage({ ...reply, id: route.id } satisfies VisionReply);
    if (this.routes.size > 0) return;
    clearTimeout(this.idleTimer);
    if (this.largeEdits > 0) {
      this.endIdle();
      return;
    }
    this.idleTimer = setTimeout(() => this.endIdle(), this.idleMs);
    this.idleTimer.unref();
  }

  private endIdle(): void {
    if (this.routes.size > 0 || !this.worker) return;
    const worker = this.worker;
    this.worker = undefined;
    void worker.terminate();
  }
}

interface Waiter {
  what: string;
  resolve(output: HumanThreadOutput): void;
  reject(error: EngineError): void;
}

/**
 * An engine thread's side. Requests made before the pool's port arrives wait
 * for it. A cancelled edit stops waiting at once; the pass it asked for still
 * finishes in the vision thread (a fraction of a second), which others share.
 */
export class VisionThreadClient {
  private port: MessagePort | undefined;
  private readonly waiting = new Map<number, Waiter>();
  private readonly unsent: { request: VisionTask; transfer: ArrayBuffer[] }[] = [];
  private nextId = 1;

  connect(port: MessagePort): void {
    this.port?.close();
    this.port = port;
    port.on("message", (reply: VisionReply) => {
      const waiter = this.waiting.get(reply.id);
      if (!waiter) return;
      this.waiting.delete(reply.id);
      if (reply.ok) waiter.resolve(reply.output);
      else waiter.reject(new EngineError("model_failed", `The ${waiter.what} failed: ${reply.message}`));
    });
    for (const { request, transfer } of this.unsent.splice(0)) port.postMessage(request, transfer);
  }

  ask(
    input: HumanThreadInput,
    options: { signal: AbortSignal | undefined; what: string; transfer?: ArrayBuffer[] },
  ): Promise<HumanThreadOutput> {
    const { signal, what } = options;
    if (signal?.aborted) return Promise.reject(new EngineError("cancelled", "The edit was cancelled."));
    const id = this.nextId++;
    const answer = new Promise<HumanThreadOutput>((resolve, reject) => {
      const onAbort = () => {
        this.waiting.delete(id);
        reject(new EngineError("cancelled", "The edit was cancelled.", { cause: signal?.reason }));
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      const settle =
        <T>(then: (value: T) => void) =>
        (value: T) => {
          signal?.removeEventListener("abort", onAbort);
          then(value);
        };
      this.waiting.set(id, { what, resolve: settle(resolve), reject: settle(reject) });
    });
    this.send({ id, input }, options.transfer ?? []);
    return answer;
  }

  private send(request: VisionTask, transfer: ArrayBuffer[]): void {
    if (this.port) this.port.postMessage(request, transfer);
    else this.unsent.push({ request, transfer });
  }

  /**
   * The shared thread as a thread of the detection's own: what the detector and
   * the pose model ask of it is the same either way; `close` leaves it running.
   */
  open(
    first: HumanThreadInput,
    options: { signal: AbortSignal | undefined; what: string },
  ): ModelThread<HumanThreadInput, HumanThreadOutput> {
    return {
      first: this.ask(first, options),
      ask: (input, transfer) => this.ask(input, { ...options, ...(transfer ? { transfer } : {}) }),
      close: () => {},
    };
  }
}
