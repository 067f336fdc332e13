import os from "node:os";
import type { InferenceSession } from "onnxruntime-node";
import { EngineError } from "../engine-error";
import { collectGarbage } from "../runtime/garbage-collection";
import { throwIfCancelled } from "../work-checkpoint";
import { type ModelPreparation, preparedModel } from "./prepared-model";

/**
 * Which model to run: a file, and how it is prepared before it loads (prepared-model.ts: the square input size of a
 * fixed-size model, every output kept for `runOutputs`, its products on 8-bit integers), and how its passes run.
 */
export interface OnnxModelSpec extends ModelPreparation {
  /**
   * Plan the pass's intermediate tensors into one block that they share (onnxruntime's memory pattern), instead of
   * allocating each: for a model that is run often at one size. Under `pnpm start`'s glibc settings every block of
   * 128 KiB or more is mapped afresh and faulted in on each use: the segmenter's encoder took 1.29 s a pass that way
   * against 0.79 s with glibc's defaults, and 0.76 s with its pattern (docs/engine.md). Not for IS-Net: its pattern
   * took the 12 MP memory bench's peak from about 1 GiB to 1192 MiB.
   */
  memoryPattern?: boolean;
}

export interface FloatTensor {
  data: Float32Array;
  dims: readonly number[];
}

/** A tensor of either element type the engine's models take or give (inpainting models take bytes). */
export interface Tensor {
  data: Float32Array | Uint8Array;
  dims: readonly number[];
}

/** What a model may be fed: a Tensor, or int64 values (a tokenizer's ids, Grounding DINO's pixel mask). */
export interface FeedTensor {
  data: Float32Array | Uint8Array | BigInt64Array;
  dims: readonly number[];
}

/** What a model declares of one of its inputs or outputs. */
export interface TensorInfo {
  name: string;
  /** onnxruntime's element type ("float32", "uint8", ...), or "none" for a value that is not a tensor. */
  type: string;
  /** Numbers for fixed dimensions, names for symbolic ones; empty when the model declares none. */
  shape: readonly (number | string)[];
}

export interface OnnxModelInfo {
  /** The first input's height and width, or undefined when they are symbolic (any size). */
  inputSize: { width: number; height: number } | undefined;
  inputs: TensorInfo[];
  outputs: TensorInfo[];
}

/**
 * Where ONNX models run. The engine's model users (background removal, the
 * object remover's segmentation) ask this for a forward pass and never hold a
 * session themselves, so that one process keeps one copy of each model: the
 * engine pool runs a single runner in a thread of its own and lends it to
 * every engine thread (onnx-runner.remote.ts).
 */
export interface OnnxRunner {
  /** Loads the model (once); says what input it takes. */
  load(spec: OnnxModelSpec): Promise<OnnxModelInfo>;
  /** Runs the model on one float input and returns its first output. */
  run(spec: OnnxModelSpec, input: FloatTensor, signal?: AbortSignal): Promise<FloatTensor>;
  /** Runs the model on named inputs (float32 or uint8) and returns its first output, float32 or uint8. */
  runFeeds(spec: OnnxModelSpec, feeds: Readonly<Record<string, FeedTensor>>, signal?: AbortSignal): Promise<Tensor>;
  /**
   * Runs a model loaded with `allOutputs` and returns every output by name (the SAM decoder's
   * masks and its predicted IoU, which says whether the prompt found an object at all).
   */
  runOutputs(
    spec: OnnxModelSpec,
    feeds: Readonly<Record<string, FeedTensor>>,
    signal?: AbortSignal,
  ): Promise<Record<string, Tensor>>;
  /** Drops the sessions of every model not in `keep`. */
  retain?(keep: readonly OnnxModelSpec[]): void;
  /** Drops the session of each of these models, after the runs queued on it; the next run loads it again. */
  release?(models: readonly OnnxModelSpec[]): void;
}

export interface LocalOnnxRunnerOptions {
  /** onnxruntime intra-op threads per run. Default: the cores this process may use. */
  threads?: number;
  /** Told of each session made: the model's file and the seconds its load took (the operator's metrics). */
  onLoaded?: (file: string, seconds: number) => void;
}

const keyOf = (spec: OnnxModelSpec) =>
  `${spec.inputSize ?? "declared"}:${spec.allOutputs ? "all" : "first"}:${spec.int8Weights ? "int8:" : ""}${spec.path}`;

/**
 * Sessions in this thread, one per model and size, and one run at a time.
 * onnxruntime-node runs a session synchronously on the calling thread, using
 * its own intra-op threads: two runs side by side would only share the same
 * cores and double the memory of the activations. So runs queue here, and each
 * uses every core (measured: see docs/engine.md#learned-models).
 */
export class LocalOnnxRunner implements OnnxRunner {
  private readonly sessions = new Map<string, Promise<InferenceSession>>();
  private queue: Promise<unknown> = Promise.resolve();
  private readonly threads: number;
  private readonly onLoaded: LocalOnnxRunnerOptions["onLoaded"];

  constructor(options: LocalOnnxRunnerOptions = {}) {
    this.threads = options.threads ?? os.availableParallelism();
    this.onLoaded = options.onLoaded;
  }

  async load(spec: OnnxModelSpec): Promise<OnnxModelInfo> {
    const session = await this.session(spec);
    const inputs = session.inputMetadata.map(describeValue);
    const shape = inputs[0]?.shape ?? [];
    const [height, width] = [shape[2], shape[3]];
    return {
      inputSize:
        typeof height === "number" && typeof width === "number" && height > 0 && width > 0 ? { width, height } : undefined,
      inputs,
      outputs: session.outputMetadata.map(describeValue),
    };
  }

  async run(spec: OnnxModelSpec, input: FloatTensor, signal?: AbortSignal): Promise<FloatTensor> {
    const outputs = await this.forward(spec, (session) => ({ [session.inputNames[0] ?? ""]: input }), signal);
    const output = Object.values(outputs)[0];
    if (!(output?.data instanceof Float32Array)) {
      throw new EngineError("model_failed", `The model ${spec.path} did not return float values.`);
    }
    return { data: output.data, dims: output.dims };
  }

  async runFeeds(spec: OnnxModelSpec, feeds: Readonly<Record<string, FeedTensor>>, signal?: AbortSignal): Promise<Tensor> {
    const outputs = await this.forward(spec, () => feeds, signal, false);
    const first = Object.values(outputs)[0];
    if (!first) throw new EngineError("model_failed", `The model ${spec.path} returned no output.`);
    return first;
  }

  runOutputs(
    spec: OnnxModelSpec,
    feeds: Readonly<Record<string, FeedTensor>>,
    signal?: AbortSignal,
  ): Promise<Record<string, Tensor>> {
    return this.forward(spec, () => feeds, signal, true);
  }

  /** One forward pass, in line behind the others: the first output (or every one), float32 or uint8. */
  private async forward(
    spec: OnnxModelSpec,
    feedsFor: (session: InferenceSession) => Readonly<Record<string, FeedTensor>>,
    signal: AbortSignal | undefined,
    every = false,
  ): Promise<Record<string, Tensor>> {
    const result = this.queue.then(async () => {
      // Waiting in line may outlast the edit that asked.
      throwIfCancelled(signal);
      const session = await this.session(spec);
      const ort = await import("onnxruntime-node");
      const outputName = session.outputNames[0];
      if (session.inputNames.length === 0 || !outputName) {
        throw new EngineError("model_failed", `The model ${spec.path} has no input or no output.`);
      }
      try {
        const feeds = Object.fromEntries(
          Object.entries(feedsFor(session)).map(([name, tensor]) => [
            name,
            tensor.data instanceof Uint8Array
              ? new ort.Tensor("uint8", tensor.data, [...tensor.dims])
              : tensor.data instanceof BigInt64Array
                ? new ort.Tensor("int64", tensor.data, [...tensor.dims])
                : new ort.Tensor("float32", tensor.data, [...tensor.dims]),
          ]),
        );
        // Unless the spec keeps them all, only the first output is read; the others were dropped from the graph at load (modelSource).
        const names = every ? [...session.outputNames] : [outputName];
        const outputs = await session.run(feeds, names);
        const read: Record<string, Tensor> = {};
        for (const name of names) {
          const output = outputs[name];
          if (!(output?.data instanceof Float32Array || output?.data instanceof Uint8Array)) {
            throw new EngineError("model_failed", `The model ${spec.path} returned neither float nor 8-bit values.`);
          }
          read[name] = { data: output.data, dims: output.dims };
        }
        return read;
      } catch (error) {
        if (error instanceof EngineError) throw error;
        throw new EngineError("model_failed", `The model ${spec.path} failed to run.`, { cause: error });
      }
    });
    this.queue = result.catch(() => {});
    return result;
  }

  retain(keep: readonly OnnxModelSpec[]): void {
    const wanted = new Set(keep.map(keyOf));
    for (const key of this.sessions.keys()) if (!wanted.has(key)) this.drop(key);
  }

  release(models: readonly OnnxModelSpec[]): void {
    for (const model of models) this.drop(keyOf(model));
  }

  private drop(key: string): void {
    const session = this.sessions.get(key);
    if (!session) return;
    this.sessions.delete(key);
    // After the runs queued on it; a session's native memory goes when it is released.
    const release = this.queue.then(() => session).then((loaded) => loaded.release());
    this.queue = release.catch(() => {});
  }

  private session(spec: OnnxModelSpec): Promise<InferenceSession> {
    const key = keyOf(spec);
    let session = this.sessions.get(key);
    if (!session) {
      session = this.create(spec);
      this.sessions.set(key, session);
      // A failed load is retried by the next request rather than cached.
      session.catch(() => {
        if (this.sessions.get(key) === session) this.sessions.delete(key);
      });
    }
    return session;
  }

  private async create(spec: OnnxModelSpec): Promise<InferenceSession> {
    const ort = await import("onnxruntime-node");
    const started = performance.now();
    try {
      const options: InferenceSession.SessionOptions = {
        intraOpNumThreads: this.threads,
        interOpNumThreads: 1,
        graphOptimizationLevel: "all",
        // Measured with IS-Net at 1024x1024 on a 1 MP photo, 3 runs in one process: with onnxruntime's
        // CPU arena the process stayed at 2.27 GiB after the first run and peaked at 2.4 GiB; without it
        // (and without the memory pattern) it stays at 0.56 GiB and peaks at 1.18 GiB, at the same speed.
        // The arena keeps freed blocks for reuse, which a process running a model now and then does not need.
        enableCpuMemArena: false,
        enableMemPattern: spec.memoryPattern === true,
        // onnxruntime's threads spin between the steps of a pass, waiting for work. Here they share two cores
        // with the detector's thread (which runs beside the segmenter's encoder), the other engine thread and
        // the process: a spinning thread takes the core from the one it waits for. Measured on the segmenter's
        // encoder, 6 alternating rounds on a shared machine (load 8-9): alone 3.7 s median without spinning
        // against 5.9 s with, beside the detector 4.2 s against 7.0 s; faster in each of the 12 pairs.
        extra: { session: { intra_op: { allow_spinning: "0" }, inter_op: { allow_spinning: "0" } } },
        // Warnings only: a resized graph makes onnxruntime say, per tensor, that it re-inferred a shape.
        logSeverityLevel: 3,
      };
      const source = await preparedModel(spec);
      // Whatever preparing the model left (its bytes, read and changed: a few hundred MB) is garbage now, and
      // would stay until some later collection, through the load and the forward passes, which allocate almost
      // no JavaScript.
      collectGarbage();
      const session =
        typeof source === "string"
          ? await ort.InferenceSession.create(source, options)
          : await ort.InferenceSession.create(source, options);
      this.onLoaded?.(spec.path, (performance.now() - started) / 1000);
      return session;
    } catch (error) {
      throw new EngineError("model_failed", `The model ${spec.path} could not be loaded: ${describe(error)}`, { cause: error });
    }
  }
}

function describeValue(metadata: InferenceSession.ValueMetadata): TensorInfo {
  return metadata.isTensor
    ? { name: metadata.name, type: metadata.type, shape: [...metadata.shape] }
    : { name: metadata.name, type: "none", shape: [] };
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

let shared: LocalOnnxRunner | undefined;

/** The runner of this thread, for engines created without one (direct use, tests, scripts). */
export function sharedOnnxRunner(): LocalOnnxRunner {
  shared ??= new LocalOnnxRunner();
  return shared;
}
