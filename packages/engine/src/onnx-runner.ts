import { readFile } from "node:fs/promises";
import os from "node:os";
import type { InferenceSession } from "onnxruntime-node";
import { EngineError } from "./engine-error";
import { collectGarbage } from "./garbage-collection";
import { declaredInputSize, resizeModelInput } from "./models/model-input-size";
import { throwIfCancelled } from "./work-checkpoint";

/** Which model to run: a file, and for a fixed-size model, the square input size to resize it to (default: as declared). */
export interface OnnxModelSpec {
  path: string;
  inputSize?: number;
}

export interface FloatTensor {
  data: Float32Array;
  dims: readonly number[];
}

export interface OnnxModelInfo {
  /** The input's height and width, or undefined when they are symbolic (any size). */
  inputSize: { width: number; height: number } | undefined;
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
  /** Drops the sessions of every model not in `keep`. */
  retain?(keep: readonly OnnxModelSpec[]): void;
}

export interface LocalOnnxRunnerOptions {
  /** onnxruntime intra-op threads per run. Default: the cores this process may use. */
  threads?: number;
}

const keyOf = (spec: OnnxModelSpec) => `${spec.inputSize ?? "declared"}:${spec.path}`;

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

  constructor(options: LocalOnnxRunnerOptions = {}) {
    this.threads = options.threads ?? os.availableParallelism();
  }

  async load(spec: OnnxModelSpec): Promise<OnnxModelInfo> {
    const session = await this.session(spec);
    const metadata = session.inputMetadata[0];
    const shape = metadata?.isTensor ? metadata.shape : [];
    const [height, width] = [shape[2], shape[3]];
    return {
      inputSize:
        typeof height === "number" && typeof width === "number" && height > 0 && width > 0 ? { width, height } : undefined,
    };
  }

  run(spec: OnnxModelSpec, input: FloatTensor, signal?: AbortSignal): Promise<FloatTensor> {
    const result = this.queue.then(async () => {
      // Waiting in line may outlast the edit that asked.
      throwIfCancelled(signal);
      const session = await this.session(spec);
      const ort = await import("onnxruntime-node");
      const inputName = session.inputNames[0];
      const outputName = session.outputNames[0];
      if (!inputName || !outputName) throw new EngineError("model_failed", `The model ${spec.path} has no input or no output.`);
      try {
        // Only the first output is wanted. Exports such as IS-Net's also return the decoder's side
        // outputs (up to 64x512x512 floats each); fetching just the one saves copying them out.
        const outputs = await session.run({ [inputName]: new ort.Tensor("float32", input.data, [...input.dims]) }, [outputName]);
        const output = outputs[outputName];
        if (!(output?.data instanceof Float32Array)) {
          throw new EngineError("model_failed", `The model ${spec.path} did not return float values.`);
        }
        return { data: output.data, dims: output.dims };
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
    for (const [key, session] of this.sessions) {
      if (wanted.has(key)) continue;
      this.sessions.delete(key);
      // After the runs queued on it; a session's native memory goes when it is released.
      const release = this.queue.then(() => session).then((loaded) => loaded.release());
      this.queue = release.catch(() => {});
    }
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
        enableMemPattern: false,
        // Warnings only: a resized graph makes onnxruntime say, per tensor, that it re-inferred a shape.
        logSeverityLevel: 3,
      };
      const source = await this.modelSource(spec);
      const session =
        typeof source === "string"
          ? await ort.InferenceSession.create(source, options)
          : await ort.InferenceSession.create(source, options);
      // The model's bytes, read and resized here, are garbage now: a few hundred MB that V8 would keep
      // until some later collection, through the forward passes, since those allocate almost no JavaScript.
      collectGarbage();
      return session;
    } catch (error) {
      throw new EngineError("model_failed", `The model ${spec.path} could not be loaded: ${describe(error)}`, { cause: error });
    }
  }

  /** A path for onnxruntime to read, or for a fixed-size model resized to `inputSize`, the new bytes. */
  private async modelSource(spec: OnnxModelSpec): Promise<string | Uint8Array> {
    if (!spec.inputSize) return spec.path;
    const file = new Uint8Array(await readFile(spec.path));
    // A model with symbolic height and width takes any size as it is.
    return declaredInputSize(file) ? resizeModelInput(file, spec.inputSize) : spec.path;
  }
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
