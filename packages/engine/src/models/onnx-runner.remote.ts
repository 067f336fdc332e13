import type { MessagePort } from "node:worker_threads";
import { EngineError, type EngineFailureReason, isEngineError } from "../engine-error";
import type { FeedTensor, FloatTensor, OnnxModelInfo, OnnxModelSpec, OnnxRunner, Tensor } from "./onnx-runner";

/**
 * An OnnxRunner in another thread, reached through a MessagePort: the engine
 * pool's threads all use the one runner of its inference thread, so a model is
 * loaded once per process. Tensors move across (transferred, not copied).
 */
type Request =
  | { kind: "load"; id: number; spec: OnnxModelSpec }
  | { kind: "run"; id: number; spec: OnnxModelSpec; input: FloatTensor }
  | { kind: "feeds"; id: number; spec: OnnxModelSpec; feeds: Record<string, FeedTensor> }
  | { kind: "outputs"; id: number; spec: OnnxModelSpec; feeds: Record<string, FeedTensor> }
  | { kind: "cancel"; id: number }
  | { kind: "retain"; keep: OnnxModelSpec[] }
  | { kind: "release"; models: OnnxModelSpec[] };
type Call =
  | { kind: "load"; spec: OnnxModelSpec }
  | { kind: "run"; spec: OnnxModelSpec; input: FloatTensor }
  | { kind: "feeds"; spec: OnnxModelSpec; feeds: Record<string, FeedTensor> }
  | { kind: "outputs"; spec: OnnxModelSpec; feeds: Record<string, FeedTensor> };
type Reply =
  | { id: number; ok: true; info?: OnnxModelInfo; output?: Tensor; outputs?: Record<string, Tensor> }
  | { id: number; ok: false; error: { message: string; reason?: EngineFailureReason } };

interface Pending {
  resolve(reply: Extract<Reply, { ok: true }>): void;
  reject(error: Error): void;
}

/** The engine thread's side. Requests wait until `connect` gives it a port; a new port replaces a dead one. */
export class RemoteOnnxRunner implements OnnxRunner {
  private port: MessagePort | undefined;
  private readonly pending = new Map<number, Pending>();
  private readonly unsent: { message: Request; transfer: ArrayBuffer[] }[] = [];
  private nextId = 1;

  connect(port: MessagePort): void {
    this.port?.close();
    this.port = port;
    port.on("message", (reply: Reply) => {
      const waiter = this.pending.get(reply.id);
      if (!waiter) return;
      this.pending.delete(reply.id);
      if (reply.ok) waiter.resolve(reply);
      else
        waiter.reject(
          reply.error.reason ? new EngineError(reply.error.reason, reply.error.message) : new Error(reply.error.message),
        );
    });
    port.on("close", () => {
      if (this.port !== port) return;
      this.port = undefined;
      for (const waiter of this.pending.values()) {
        waiter.reject(new EngineError("model_failed", "The model runner stopped during the edit (out of memory?)."));
      }
      this.pending.clear();
    });
    for (const { message, transfer } of this.unsent.splice(0)) port.postMessage(message, transfer);
  }

  async load(spec: OnnxModelSpec): Promise<OnnxModelInfo> {
    const reply = await this.request({ kind: "load", spec }, []);
    return reply.info ?? { inputSize: undefined, inputs: [], outputs: [] };
  }

  async run(spec: OnnxModelSpec, input: FloatTensor, signal?: AbortSignal): Promise<FloatTensor> {
    const data = movable(input.data);
    const reply = await this.request(
      { kind: "run", spec, input: { data, dims: input.dims } },
      [data.buffer as ArrayBuffer],
      signal,
    );
    if (!(reply.output?.data instanceof Float32Array))
      throw new EngineError("model_failed", "The model runner returned no output.");
    return { data: reply.output.data, dims: reply.output.dims };
  }

  async runFeeds(spec: OnnxModelSpec, feeds: Readonly<Record<string, FeedTensor>>, signal?: AbortSignal): Promise<Tensor> {
    const { moved, transfer } = movableFeeds(feeds);
    const reply = await this.request({ kind: "feeds", spec, feeds: moved }, transfer, signal);
    if (!reply.output) throw new EngineError("model_failed", "The model runner returned no output.");
    return reply.output;
  }

  async runOutputs(
    spec: OnnxModelSpec,
    feeds: Readonly<Record<string, FeedTensor>>,
    signal?: AbortSignal,
  ): Promise<Record<string, Tensor>> {
    const { moved, transfer } = movableFeeds(feeds);
    const reply = await this.request({ kind: "outputs", spec, feeds: moved }, transfer, signal);
    if (!reply.outputs) throw new EngineError("model_failed", "The model runner returned no output.");
    return reply.outputs;
  }

  retain(keep: readonly OnnxModelSpec[]): void {
    this.send({ kind: "retain", keep: [...keep] }, []);
  }

  release(models: readonly OnnxModelSpec[]): void {
    this.send({ kind: "release", models: [...models] }, []);
  }

  private request(message: Call, transfer: ArrayBuffer[], signal?: AbortSignal): Promise<Extract<Reply, { ok: true }>> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.send({ ...message, id } as Request, transfer);
      signal?.addEventListener("abort", () => this.send({ kind: "cancel", id }, []), { once: true });
    });
  }

  private send(message: Request, transfer: ArrayBuffer[]): void {
    if (this.port) this.port.postMessage(message, transfer);
    else this.unsent.push({ message, transfer });
  }
}

/** The array itself when it owns its whole buffer (which can then be moved), else a copy that does. */
function movable<T extends Float32Array | Uint8Array | BigInt64Array>(data: T): T {
  return data.byteOffset === 0 && data.byteLength === data.buffer.byteLength ? data : (data.slice() as T);
}

/** The feeds with buffers of their own, and those buffers, to move them across. */
function movableFeeds(feeds: Readonly<Record<string, FeedTensor>>): {
  moved: Record<string, FeedTensor>;
  transfer: ArrayBuffer[];
} {
  const moved = Object.fromEntries(
    Object.entries(feeds).map(([name, tensor]) => [name, { data: movable(tensor.data), dims: tensor.dims }]),
  );
  return { moved, transfer: Object.values(moved).map((tensor) => tensor.data.buffer as ArrayBuffer) };
}

/** A copy of its own: onnxruntime's output may be a view on memory it manages, which cannot be moved. */
function owned(tensor: Tensor): Tensor {
  return {
    data: tensor.data instanceof Uint8Array ? new Uint8Array(tensor.data) : new Float32Array(tensor.data),
    dims: tensor.dims,
  };
}

/** The inference thread's side: answers one engine thread's port from `runner`. */
export function serveOnnxRunner(port: MessagePort, runner: OnnxRunner): void {
  const cancels = new Map<number, AbortController>();
  const fail = (id: number, error: unknown) =>
    port.postMessage({
      id,
      ok: false,
      error: isEngineError(error)
        ? { message: error.message, reason: error.reason }
        : { message: error instanceof Error ? error.message : String(error) },
    } satisfies Reply);
  port.on("message", async (message: Request) => {
    if (message.kind === "cancel") {
      cancels.get(message.id)?.abort();
      return;
    }
    if (message.kind === "retain") {
      runner.retain?.(message.keep);
      return;
    }
    if (message.kind === "release") {
      runner.release?.(message.models);
      return;
    }
    try {
      if (message.kind === "load") {
        port.postMessage({ id: message.id, ok: true, info: await runner.load(message.spec) } satisfies Reply);
        return;
      }
      const controller = new AbortController();
      cancels.set(message.id, controller);
      if (message.kind === "outputs") {
        const outputs = await runner.runOutputs(message.spec, message.feeds, controller.signal);
        const copies = Object.fromEntries(Object.entries(outputs).map(([name, tensor]) => [name, owned(tensor)]));
        const buffers = Object.values(copies).map((tensor) => tensor.data.buffer as ArrayBuffer);
        port.postMessage({ id: message.id, ok: true, outputs: copies } satisfies Reply, buffers);
        return;
      }
      const output =
        message.kind === "run"
          ? await runner.run(message.spec, message.input, controller.signal)
          : await runner.runFeeds(message.spec, message.feeds, controller.signal);
      // A copy of its own: onnxruntime's output may be a view on memory it manages, which cannot be moved.
      const data = output.data instanceof Uint8Array ? new Uint8Array(output.data) : new Float32Array(output.data);
      port.postMessage({ id: message.id, ok: true, output: { data, dims: output.dims } } satisfies Reply, [data.buffer]);
    } catch (error) {
      fail(message.id, error);
    } finally {
      cancels.delete(message.id);
    }
  });
}
