import {
  type FeedTensor,
  type FloatTensor,
  LocalOnnxRunner,
  type OnnxModelInfo,
  type OnnxModelSpec,
  type OnnxRunner,
  type Tensor,
} from "../src/models/onnx-runner";

/** One forward pass: which model, through which call, and a copy of what it was fed (`run`'s one input as `input`). */
export interface RecordedPass {
  path: string;
  call: "run" | "runFeeds" | "runOutputs";
  feeds: Record<string, FeedTensor>;
}

/**
 * The real runner (one thread), keeping a copy of what each forward pass was
 * fed, the files sessions were loaded from and released, in order; `onFeed`
 * is called after each pass is recorded (a test may cancel there).
 */
export class RecordingRunner implements OnnxRunner {
  readonly passes: RecordedPass[] = [];
  readonly loaded: string[] = [];
  readonly released: string[] = [];
  onFeed: (() => void) | undefined;
  private readonly inner = new LocalOnnxRunner({ threads: 1, onLoaded: (file) => this.loaded.push(file) });

  /** The feeds of each pass of the model at `path`, in order. */
  fedTo(path: string): Record<string, FeedTensor>[] {
    return this.passes.filter((pass) => pass.path === path).map((pass) => pass.feeds);
  }

  release(models: readonly OnnxModelSpec[]): void {
    this.released.push(...models.map((model) => model.path));
    this.inner.release(models);
  }

  load(spec: OnnxModelSpec): Promise<OnnxModelInfo> {
    return this.inner.load(spec);
  }

  run(spec: OnnxModelSpec, input: FloatTensor, signal?: AbortSignal): Promise<FloatTensor> {
    this.record(spec, "run", { input });
    return this.inner.run(spec, input, signal);
  }

  runFeeds(spec: OnnxModelSpec, feeds: Readonly<Record<string, FeedTensor>>, signal?: AbortSignal): Promise<Tensor> {
    this.record(spec, "runFeeds", feeds);
    return this.inner.runFeeds(spec, feeds, signal);
  }

  runOutputs(
    spec: OnnxModelSpec,
    feeds: Readonly<Record<string, FeedTensor>>,
    signal?: AbortSignal,
  ): Promise<Record<string, Tensor>> {
    this.record(spec, "runOutputs", feeds);
    return this.inner.runOutputs(spec, feeds, signal);
  }

  private record(spec: OnnxModelSpec, call: RecordedPass["call"], feeds: Readonly<Record<string, FeedTensor>>): void {
    // Copied before the runner may move the buffers to its thread.
    const copies = Object.entries(feeds).map(([name, tensor]) => [name, { data: tensor.data.slice(), dims: tensor.dims }]);
    this.passes.push({ path: spec.path, call, feeds: Object.fromEntries(copies) });
    this.onFeed?.();
  }
}
