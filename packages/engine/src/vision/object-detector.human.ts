import sharp from "sharp";
import type { Detection, ObjectDetector, RgbaImage, WorkContext } from "../engine.ports";
import { EngineError } from "../engine-error";
import { COCO_LABELS } from "../prompts/detection-vocabulary";
import { workerScript } from "../runtime/worker-script";
import { throwIfCancelled } from "../work-checkpoint";
import { loadHumanModel, type ModelThread, openModelThread } from "./human-model";
import { type PoseThread, prepareMoveNet, runMoveNet } from "./pose-keypoints";
import type { VisionThreadClient } from "./vision-thread";
import type { DetectorThreadInput, HumanThreadInput, HumanThreadOutput } from "./vision-thread.protocol";

/**
 * COCO object detection, offline: the CenterNet (MobileNet-v3 backbone) model
 * that ships inside the `@vladmandic/human` npm package (models/centernet.json
 * and .bin, 4 MB, float16 weights), run with TensorFlow.js on its WebAssembly
 * backend, whose .wasm binaries ship inside `@tensorflow/tfjs-backend-wasm`.
 * Only the weights of Human are used, not its runtime.
 *
 * The graph takes a 1x512x512x3 float image (0..255) and returns up to 100
 * detections [x1, y1, x2, y2, score, class] in input pixels, already decoded
 * from CenterNet's heat maps; this module keeps those above `minScore` and
 * removes overlapping duplicates per class.
 *
 * In the engine pool the model runs in the pool's vision thread, shared by its
 * engine threads and kept between edits (vision-thread.ts). Without a pool it
 * runs in a thread of its own, started for each detection and ended after it
 * (object-detector.worker.ts), or, when a person may be removed, after the same
 * thread has run MoveNet for the people's body keypoints
 * (`detectKeepingThread`): one thread per removal, not two. A WebAssembly memory never shrinks:
 * one pass at 512x512 grows TensorFlow.js's to 65 MB, and with the loaded
 * model the thread holds about 115 MB, which every engine thread would
 * otherwise keep from its first removal on. Starting the thread and loading
 * the model, and a first pass slower than later ones in the same thread, cost
 * about 0.5 to 1 s per detection (docs/engine.md).
 */
export interface HumanObjectDetectorOptions {
  /** Detections below this score are ignored. Default 0.2 (Human's own default). */
  minScore?: number;
  /** Overlap (IoU) above which two boxes of a class are one object. Default 0.4. */
  overlap?: number;
  /** The engine pool's vision thread (vision-thread.ts): detections run there instead of in a thread each. */
  shared?: VisionThreadClient;
}

const INPUT_SIZE = 512;
const OUTPUT_NODE = "tower_0/detections";

const thread = workerScript("object-detector.worker", import.meta.url);

/** The entry of the detector's thread (object-detector.worker.ts): the detection first, then any pose input. */
export async function runHumanThread(input: HumanThreadInput): Promise<HumanThreadOutput> {
  if ("pixels" in input) return runCenterNet(input);
  if ("crops" in input) return runMoveNet(input);
  await prepareMoveNet();
  return null;
}

/**
 * Loads the model and runs it once on `pixels` (512x512 RGB), in the calling
 * thread: object-detector.worker.ts calls it. TensorFlow.js keeps one global
 * backend per thread, which is one more reason for a thread of its own.
 */
export async function runCenterNet({ pixels }: DetectorThreadInput): Promise<Float32Array> {
  const { tf, model } = await loadHumanModel("centernet", "object detector");
  const rows = tf.tidy(() => {
    const input = tf.tensor4d(Float32Array.from(pixels), [1, INPUT_SIZE, INPUT_SIZE, 3]);
    return model.execute(input, OUTPUT_NODE) as import("@tensorflow/tfjs-core").Tensor;
  });
  const values = (await rows.data()) as Float32Array;
  rows.dispose();
  return values;
}

export class HumanObjectDetector implements ObjectDetector {
  readonly labels: readonly string[] = COCO_LABELS;
  readonly inputSize = INPUT_SIZE;
  private readonly minScore: number;
  private readonly overlap: number;
  private readonly shared: VisionThreadClient | undefined;

  constructor(options: HumanObjectDetectorOptions = {}) {
    this.minScore = options.minScore ?? 0.2;
    this.overlap = options.overlap ?? 0.4;
    this.shared = options.shared;
  }

  async detect(image: RgbaImage, context: WorkContext): Promise<Detection[]> {
    throwIfCancelled(context.signal);
    const opened = this.open(await pixelsOf(image), context);
    try {
      return this.read((await opened.first) as Float32Array, image);
    } finally {
      opened.close();
    }
  }

  /**
   * Detects, and when `keep` says the detections need body keypoints (a person to remove among
   * them), leaves the thread open for them: it loads MoveNet at once, while the caller decodes the
   * frame and prompts the segmenter, and answers the keypoints (pose-keypoints.ts, `adopt`). The
   * caller must close the thread; it ends by itself when the edit is cancelled or a model fails.
   */
  async detectKeepingThread(
    image: RgbaImage,
    context: WorkContext,
    keep: (detections: Detection[]) => boolean,
  ): Promise<{ detections: Detection[]; pose?: PoseThread }> {
    throwIfCancelled(context.signal);
    const opened = this.open(await pixelsOf(image), context);
    let detections: Detection[];
    try {
      detections = this.read((await opened.first) as Float32Array, image);
    } catch (error) {
      opened.close();
      throw error;
    }
    if (!keep(detections)) {
      opened.close();
      return { detections };
    }
    // Answered in order: a failure here ends the thread, and the keypoints then fail (the remover's fallback).
    opened.ask({ preparePose: true }).catch(() => undefined);
    return {
      detections,
      pose: {
        keypoints: (input, transfer) =>
          opened.ask(input, transfer).then(
            (output) => output as Float32Array[],
            (error: unknown) => {
              // Closed by the edit's cancellation: that stays a cancellation; anything else is the pose model's failure.
              if (context.signal?.aborted) throw error;
              const why = error instanceof Error ? error.message : String(error);
              throw new EngineError("model_failed", `The pose model failed in the object detector's thread: ${why}`, {
                cause: error,
              });
            },
          ),
        close: () => opened.close(),
      },
    };
  }

  /** The pool's vision thread, else a thread of this detection's own. */
  private open(pixels: Uint8Array, context: WorkContext): ModelThread<HumanThreadInput, HumanThreadOutput> {
    const options = { signal: context.signal, what: "object detector" };
    return this.shared
      ? this.shared.open({ pixels }, options)
      : openModelThread<HumanThreadInput, HumanThreadOutput>(thread, { pixels }, options);
  }

  private read(values: Float32Array, image: RgbaImage): Detection[] {
    const scaleX = image.width / INPUT_SIZE;
    const scaleY = image.height / INPUT_SIZE;
    const detections: Detection[] = [];
    for (let offset = 0; offset + 6 <= values.length; offset += 6) {
      const score = values[offset + 4] ?? 0;
      const label = COCO_LABELS[values[offset + 5] ?? -1];
      if (score < this.minScore || label === undefined) continue;
      const x1 = Math.max(0, (values[offset] ?? 0) * scaleX);
      const y1 = Math.max(0, (values[offset + 1] ?? 0) * scaleY);
      const x2 = Math.min(image.width, (values[offset + 2] ?? 0) * scaleX);
      const y2 = Math.min(image.height, (values[offset + 3] ?? 0) * scaleY);
      if (x2 - x1 < 1 || y2 - y1 < 1) continue;
      detections.push({ label, score, box: { x: x1, y: y1, width: x2 - x1, height: y2 - y1 } });
    }
    return suppressDuplicates(detections, this.overlap);
  }
}

/** The picture at the detector's input size, RGB. */
async function pixelsOf(image: RgbaImage): Promise<Uint8Array> {
  const { data } = await sharp(image.data, { raw: { width: image.width, height: image.height, channels: 4 } })
    .removeAlpha()
    .resize(INPUT_SIZE, INPUT_SIZE, { fit: "fill" })
    .raw()
    .toBuffer({ resolveWithObject: true });
  return data;
}

function intersectionOverUnion(a: Detection["box"], b: Detection["box"]): number {
  const x1 = Math.max(a.x, b.x);
  const y1 = Math.max(a.y, b.y);
  const x2 = Math.min(a.x + a.width, b.x + b.width);
  const y2 = Math.min(a.y + a.height, b.y + b.height);
  const intersection = Math.max(0, x2 - x1) * Math.max(0, y2 - y1);
  const union = a.width * a.height + b.width * b.height - intersection;
  return union > 0 ? intersection / union : 0;
}

/** Greedy non-maximum suppression per label, best score first. */
export function suppressDuplicates(detections: Detection[], overlap: number): Detection[] {
  const kept: Detection[] = [];
  for (const detection of [...detections].sort((a, b) => b.score - a.score)) {
    const duplicate = kept.some(
      (other) => other.label === detection.label && intersectionOverUnion(other.box, detection.box) > overlap,
    );
    if (!duplicate) kept.push(detection);
  }
  return kept;
}
