import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { Worker } from "node:worker_threads";
import type { GraphModel } from "@tensorflow/tfjs-converter";
import { EngineError } from "../engine-error";

/**
 * The TensorFlow.js graph models that ship inside the `@vladmandic/human` npm
 * package (its `models/` folder), run on TensorFlow.js's WebAssembly backend,
 * whose .wasm binaries ship inside `@tensorflow/tfjs-backend-wasm`. Only the
 * weights of Human are used, not its runtime.
 *
 * Each detection runs in a thread of its own, started for it and ended after
 * it: a WebAssembly memory never shrinks, and TensorFlow.js keeps one global
 * backend per thread, so an engine thread that ran a model itself would keep
 * its memory (about 115 MB for CenterNet) from then on. A person removal asks
 * the same thread for body keypoints before it ends (object-detector.human.ts):
 * starting a thread and TensorFlow.js in it is most of what a model costs.
 */
export type HumanModelName = "centernet" | "blazeface" | "movenet-lightning";

export type TensorFlow = typeof import("@tensorflow/tfjs-core");

export interface LoadedHumanModel {
  tf: TensorFlow;
  model: GraphModel;
}

const loaded = new Map<HumanModelName, Promise<LoadedHumanModel>>();

/** One of Human's models in the calling thread's TensorFlow.js, on the WebAssembly backend: loaded once per thread. */
export function loadHumanModel(name: HumanModelName, what: string): Promise<LoadedHumanModel> {
  let model = loaded.get(name);
  if (!model) {
    model = load(name, what);
    loaded.set(name, model);
  }
  return model;
}

async function load(name: HumanModelName, what: string): Promise<LoadedHumanModel> {
  try {
    const require = createRequire(import.meta.url);
    const tf = await import("@tensorflow/tfjs-core");
    const wasm = await import("@tensorflow/tfjs-backend-wasm");
    const converter = await import("@tensorflow/tfjs-converter");
    wasm.setWasmPaths(`${path.dirname(require.resolve("@tensorflow/tfjs-backend-wasm"))}${path.sep}`);
    if (!(await tf.setBackend("wasm"))) throw new Error("the TensorFlow.js WebAssembly backend did not start");
    await tf.ready();
    const modelDirectory = path.join(path.dirname(require.resolve("@vladmandic/human")), "..", "models");
    const manifest = JSON.parse(await readFile(path.join(modelDirectory, `${name}.json`), "utf8"));
    const weights = await readFile(path.join(modelDirectory, `${name}.bin`));
    const model = await converter.loadGraphModel(
      tf.io.fromMemory({
        modelTopology: manifest.modelTopology,
        weightSpecs: manifest.weightsManifest[0].weights,
        weightData: weights.buffer.slice(weights.byteOffset, weights.byteOffset + weights.byteLength),
        format: manifest.format,
        generatedBy: manifest.generatedBy,
        convertedBy: manifest.convertedBy,
      }),
    );
    return { tf, model };
  } catch (error) {
    throw new EngineError("model_failed", `The ${what} could not be loaded.`, { cause: error });
  }
}

const started = new Map<string, number>();

/**
 * How many model threads this thread has started, by script (its file name): tests check that a
 * person removal starts one, not one for the detector and another for the pose model.
 */
export function modelThreadStarts(): Record<string, number> {
  return Object.fromEntries(started);
}

let running = 0;

/** How many model threads started by this thread have not exited yet: none outlives its edit. */
export function modelThreadsRunning(): number {
  return running;
}

/** What a model's thread answers to each input: its output, or why it could not run. */
export type ModelThreadReply<Output> = { ok: true; output: Output } | { ok: false; message: string };

/** A model thread's failure in one line for the thread that asked: the error's message and its cause's. */
export function describeFailure(error: unknown): string {
  return error instanceof Error
    ? `${error.message}${error.cause instanceof Error ? ` (${error.cause.message})` : ""}`
    : String(error);
}

/**
 * The entry of a model's thread: answers `work` on each input, the first one
 * given as the thread's data and any further one as a message, one at a time.
 */
export function serveModelThread<Input, Output>(
  port: import("node:worker_threads").MessagePort,
  first: Input,
  work: (input: Input) => Promise<Output>,
): void {
  const answer = (input: Input) =>
    work(input).then(
      (output) => port.postMessage({ ok: true, output } satisfies ModelThreadReply<Output>),
      (error: unknown) => port.postMessage({ ok: false, message: describeFailure(error) } satisfies ModelThreadReply<Output>),
    );
  let queue = answer(first);
  port.on("message", (input: Input) => {
    queue = queue.then(() => answer(input));
  });
}

/** A model's thread for one detection: its answer to the first input, further inputs one at a time, then close it. */
export interface ModelThread<Input, Output> {
  first: Promise<Output>;
  ask(input: Input, transfer?: ArrayBuffer[]): Promise<Output>;
  /** Ends the thread (its memory with it). */
  close(): void;
}

/**
 * Starts the thread `script` with its first input. The thread ends on
 * `close()`, on a failure, or at once when the edit is cancelled. `transfer`
 * moves large buffers into the thread instead of copying them.
 */
export function openModelThread<Input, Output>(
  script: { url: URL; execArgv: string[] },
  first: Input,
  options: { signal: AbortSignal | undefined; what: string; transfer?: ArrayBuffer[] },
): ModelThread<Input, Output> {
  const { signal, what } = options;
  const name = path.basename(script.url.pathname);
  started.set(name, (started.get(name) ?? 0) + 1);
  const worker = new Worker(script.url, {
    workerData: first,
    execArgv: script.execArgv,
    ...(options.transfer ? { transferList: options.transfer } : {}),
  });
  running++;
  worker.once("exit", () => running--);
  let ended: EngineError | undefined;
  const waiting: { resolve(output: Output): void; reject(error: EngineError): void }[] = [];
  const wait = () => new Promise<Output>((resolve, reject) => (ended ? reject(ended) : waiting.push({ resolve, reject })));
  const end = (error: EngineError): void => {
    if (ended) return;
    ended = error;
    signal?.removeEventListener("abort", onAbort);
    void worker.terminate();
    for (const waiter of waiting.splice(0)) waiter.reject(error);
  };
  const onAbort = () => end(new EngineError("cancelled", "The edit was cancelled.", { cause: signal?.reason }));
  signal?.addEventListener("abort", onAbort, { once: true });
  // A signal aborted before this (while the caller prepared the input) fires no event any more.
  if (signal?.aborted) onAbort();
  worker.on("message", (reply: ModelThreadReply<Output>) => {
    if (reply.ok) waiting.shift()?.resolve(reply.output);
    else end(new EngineError("model_failed", `The ${what} failed: ${reply.message}`));
  });
  worker.once("error", (error) => end(new EngineError("model_failed", `The ${what} failed.`, { cause: error })));
  worker.once("exit", (code) =>
    end(new EngineError("model_failed", `The ${what}'s thread exited (code ${code}) without an answer.`)),
  );
  return {
    first: wait(),
    ask(input, transfer) {
      const answer = wait();
      if (!ended) worker.postMessage(input, transfer ?? []);
      return answer;
    },
    close() {
      end(new EngineError("cancelled", `The ${what}'s thread was closed.`));
    },
  };
}

/** One input, one answer, and the thread ends. */
export async function runModelThread<Input, Output>(
  script: { url: URL; execArgv: string[] },
  input: Input,
  options: { signal: AbortSignal | undefined; what: string; transfer?: ArrayBuffer[] },
): Promise<Output> {
  const thread = openModelThread<Input, Output>(script, input, options);
  try {
    return await thread.first;
  } finally {
    thread.close();
  }
}
