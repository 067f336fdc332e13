import sharp from "sharp";
import type { Box, RgbaImage, WorkContext } from "../engine.ports";
import { workerScript } from "../runtime/worker-script";
import { throwIfCancelled } from "../work-checkpoint";
import { loadHumanModel, runModelThread } from "./human-model";
import type { VisionThreadClient } from "./vision-thread";
import type { PoseThreadInput } from "./vision-thread.protocol";

/**
 * Body keypoints of a detected person, offline: MoveNet SinglePose Lightning
 * (Google, Apache-2.0; models/movenet-lightning.json and .bin, 4.6 MB, in the
 * `@vladmandic/human` npm package, MIT), run with TensorFlow.js on its
 * WebAssembly backend in the engine pool's vision thread (vision-thread.ts), or
 * without a pool in the object detector's thread, which the engine keeps open
 * after the detection when a person may be removed (`adopt`), or else in a
 * thread of its own (human-model.ts says why a thread). The object remover turns a person's confident
 * keypoints into points the segmenter must include: a box alone misses
 * outstretched arms and legs (issue 23's footballer), a wrist or an ankle
 * brings them in.
 *
 * MoveNet looks at one person: each detected person's box, squared and
 * widened a little around its centre, is its input at 192x192. It answers
 * 17 keypoints (COCO order) as (y, x, score) in that square.
 */
export const MOVENET_INPUT = 192;

/** COCO's 17 body keypoints, in MoveNet's order. */
export const BODY_PARTS = [
  "nose",
  "left_eye",
  "right_eye",
  "left_ear",
  "right_ear",
  "left_shoulder",
  "right_shoulder",
  "left_elbow",
  "right_elbow",
  "left_wrist",
  "right_wrist",
  "left_hip",
  "right_hip",
  "left_knee",
  "right_knee",
  "left_ankle",
  "right_ankle",
] as const;
export type BodyPart = (typeof BODY_PARTS)[number];

/** One keypoint in image pixels, with MoveNet's confidence (0..1). */
export interface Keypoint {
  part: BodyPart;
  x: number;
  y: number;
  score: number;
}

export interface PoseEstimator {
  /** The keypoints of the person framed by each box, in the same order. */
  keypoints(image: RgbaImage, boxes: readonly Box[], context: WorkContext): Promise<Keypoint[][]>;
  /** The removal of `image` needs no more keypoints: a thread kept open for them ends now. */
  release?(image: RgbaImage): void;
}

/**
 * A model thread already open for this removal that runs MoveNet too (the
 * object detector's, object-detector.human.ts): the second thread's start and
 * TensorFlow.js's start in it are most of what the keypoints cost.
 */
export interface PoseThread {
  keypoints(input: PoseThreadInput, transfer: ArrayBuffer[]): Promise<Float32Array[]>;
  /** Ends the thread (idempotent). */
  close(): void;
}

/** The square around a box's centre that MoveNet looks at: the box's longer side and a little more (limbs reach past boxes). */
const CROP_MARGIN = 1.2;

const thread = workerScript("pose-keypoints.worker", import.meta.url);

/** Runs MoveNet on each crop in the calling thread (pose-keypoints.worker.ts calls it): 17 x (y, x, score) per crop. */
export async function runMoveNet({ crops }: PoseThreadInput): Promise<Float32Array[]> {
  const { tf, model } = await loadHumanModel("movenet-lightning", "pose model");
  const answers: Float32Array[] = [];
  for (const pixels of crops) {
    const output = tf.tidy(() => {
      const input = tf.tensor4d(Int32Array.from(pixels), [1, MOVENET_INPUT, MOVENET_INPUT, 3], "int32");
      return model.execute(input) as import("@tensorflow/tfjs-core").Tensor;
    });
    answers.push((await output.data()) as Float32Array);
    output.dispose();
  }
  return answers;
}

/** Loads MoveNet and runs it once on a black crop, so that the first person's pass is not the slow first one. */
export function prepareMoveNet(): Promise<void> {
  // Once per thread: the pool's vision thread is asked again by every person removal.
  prepared ??= runMoveNet({ crops: [new Uint8Array(MOVENET_INPUT * MOVENET_INPUT * 3)] }).then(
    () => undefined,
    (error: unknown) => {
      prepared = undefined;
      throw error;
    },
  );
  return prepared;
}
let prepared: Promise<void> | undefined;

export class MoveNetPoseEstimator implements PoseEstimator {
  /** Threads kept open for a removal's keypoints, by the picture being edited. */
  private readonly adopted = new WeakMap<RgbaImage, PoseThread>();

  /** With the pool's vision thread (vision-thread.ts), keypoints not asked of an adopted thread are asked of it. */
  constructor(private readonly shared?: VisionThreadClient) {}

  /** The keypoints of `image` are asked of `thread` (then closed by `release`) instead of a thread of their own. */
  adopt(image: RgbaImage, thread: PoseThread): void {
    this.adopted.set(image, thread);
  }

  release(image: RgbaImage): void {
    this.adopted.get(image)?.close();
    this.adopted.delete(image);
  }

  async keypoints(image: RgbaImage, boxes: readonly Box[], context: WorkContext): Promise<Keypoint[][]> {
    throwIfCancelled(context.signal);
    if (boxes.length === 0) return [];
    const squares = boxes.map((box) => squareAround(box));
    const crops = await Promise.all(squares.map((square) => cropOf(image, square)));
    const transfer = crops.map((crop) => crop.buffer as ArrayBuffer);
    const open = this.adopted.get(image);
    const ask = { signal: context.signal, what: "pose model", transfer };
    const answers = open
      ? await open.keypoints({ crops }, transfer)
      : this.shared
        ? ((await this.shared.ask({ crops }, ask)) as Float32Array[])
        : await runModelThread<PoseThreadInput, Float32Array[]>(thread, { crops }, ask);
    return answers.map((values, n) => {
      const square = squares[n] as Square;
      return BODY_PARTS.map((part, k) => ({
        part,
        y: square.y + (values[3 * k] ?? 0) * square.side,
        x: square.x + (values[3 * k + 1] ?? 0) * square.side,
        score: values[3 * k + 2] ?? 0,
      }));
    });
  }
}

interface Square {
  x: number;
  y: number;
  side: number;
}

function squareAround(box: Box): Square {
  const side = Math.max(1, Math.round(CROP_MARGIN * Math.max(box.width, box.height)));
  return {
    x: Math.round(box.x + box.width / 2 - side / 2),
    y: Math.round(box.y + box.height / 2 - side / 2),
    side,
  };
}

/** The square at MoveNet's size, RGB, black where it lies beyond the picture (as MoveNet's own cropping pads). */
async function cropOf(image: RgbaImage, square: Square): Promise<Uint8Array> {
  const left = Math.max(0, square.x);
  const top = Math.max(0, square.y);
  const right = Math.min(image.width, square.x + square.side);
  const bottom = Math.min(image.height, square.y + square.side);
  // Two passes: sharp resizes before it extends, whatever the order of the calls.
  const padded = await sharp(image.data, { raw: { width: image.width, height: image.height, channels: 4 } })
    .removeAlpha()
    .extract({ left, top, width: Math.max(1, right - left), height: Math.max(1, bottom - top) })
    .extend({
      left: left - square.x,
      top: top - square.y,
      right: square.x + square.side - right,
      bottom: square.y + square.side - bottom,
      background: { r: 0, g: 0, b: 0 },
    })
    .raw()
    .toBuffer({ resolveWithObject: true });
  const data = await sharp(padded.data, { raw: { width: padded.info.width, height: padded.info.height, channels: 3 } })
    .resize(MOVENET_INPUT, MOVENET_INPUT, { fit: "fill" })
    .raw()
    .toBuffer();
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength).slice();
}
