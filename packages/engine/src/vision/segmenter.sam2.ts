import type { Box, RgbaImage, WorkContext } from "../engine.ports";
import { EngineError } from "../engine-error";
import type { FloatTensor, OnnxModelSpec, OnnxRunner, Tensor } from "../models/onnx-runner";
import { sharedOnnxRunner } from "../models/onnx-runner";
import { throwIfCancelled } from "../work-checkpoint";
import {
  checkFinite,
  ENCODER_SIDE,
  encoderInputSize,
  type ImageEmbedding,
  MinisamSegmenter,
  type MinisamSegmenterOptions,
  noMaskPrompt,
  PIXEL_MEAN,
  PIXEL_STD,
  type PromptedMask,
  type PromptPoint,
  promptFeeds,
} from "./segmenter.minisam";

/**
 * SAM 2.1 (catalog entry `sam2.1-tiny`), as vietanhdev's samexporter exports it
 * (`export_sam2.py`, `sam2_onnx.py`; docs/engine.md says what was checked):
 *
 * - the encoder takes `image` float32 [1,3,1024,1024]: the picture *stretched*
 *   to the square (not padded), with ImageNet's mean and std; it gives
 *   `image_embed` [1,256,64,64] and two high-resolution feature maps,
 *   `high_res_feats_0` [1,32,256,256] and `high_res_feats_1` [1,64,128,128],
 *   which the decoder takes back beside the prompts;
 * - the decoder takes the points in the stretched 1024 frame (the box as two
 *   corners labelled 2 and 3, as SAM 1), adds its own padding point, and gives
 *   `masks` [1,3,256,256] (logits over the stretched frame) with
 *   `iou_predictions` [1,3]; there is no `orig_im_size`.
 *
 * The rest (what a prompt is, the mask at the encoder's scale, the predicted
 * IoU) is the same as for SAM 1, so the remover and click-to-select use it
 * unchanged.
 */

/** The encoder's outputs the decoder takes back besides the embedding (export_sam2.py's names). */
const FEATURE_NAMES = ["high_res_feats_0", "high_res_feats_1"] as const;

export interface Sam2SegmenterOptions extends MinisamSegmenterOptions {
  encoderPath: string;
  decoderPath: string;
}

export class Sam2Segmenter extends MinisamSegmenter {
  /** Every output kept: the embedding and the two feature maps. */
  override readonly encoder: OnnxModelSpec;
  private readonly models: OnnxRunner;

  constructor(options: Sam2SegmenterOptions) {
    // As it is: SAM 2.1 (a download) could not be fetched here to measure it on 8-bit integers.
    super({ int8Encoder: false, ...options });
    this.encoder = { path: options.encoderPath, memoryPattern: true, allOutputs: true };
    this.models = options.runner ?? sharedOnnxRunner();
  }

  /** The picture stretched to the encoder's square, as SAM 2's own transforms resize it. */
  override inputFrame(): { width: number; height: number } {
    return { width: ENCODER_SIDE, height: ENCODER_SIDE };
  }

  override async embedScaled(
    scaled: RgbaImage,
    size: { width: number; height: number },
    context: WorkContext,
  ): Promise<ImageEmbedding> {
    throwIfCancelled(context.signal);
    if (scaled.width !== ENCODER_SIDE || scaled.height !== ENCODER_SIDE) {
      throw new EngineError("internal_error", "The segmenter's input is not at the encoder's size.");
    }
    const plane = ENCODER_SIDE * ENCODER_SIDE;
    const input = new Float32Array(3 * plane);
    for (let c = 0; c < 3; c++) {
      const mean = PIXEL_MEAN[c] ?? 0;
      const std = PIXEL_STD[c] ?? 1;
      for (let i = 0; i < plane; i++) input[c * plane + i] = ((scaled.data[4 * i + c] ?? 0) - mean) / std;
    }
    const outputs = await this.models.runOutputs(
      this.encoder,
      { image: { data: input, dims: [1, 3, ENCODER_SIDE, ENCODER_SIDE] } },
      context.signal,
    );
    const embed = floatOutput(outputs, "image_embed");
    checkFinite(embed, this.encoder.path);
    const features = Object.fromEntries(FEATURE_NAMES.map((name) => [name, floatOutput(outputs, name)]));
    // The masks come out at the picture's aspect at the encoder's scale, as SAM 1's do (see `segment`).
    const { scale, scaledWidth, scaledHeight } = encoderInputSize(size.width, size.height);
    return { ...embed, features, scale, width: size.width, height: size.height, scaledWidth, scaledHeight };
  }

  override async segment(
    embedding: ImageEmbedding,
    box: Box | undefined,
    points: readonly PromptPoint[],
    context: WorkContext,
  ): Promise<PromptedMask> {
    throwIfCancelled(context.signal);
    const features = embedding.features ?? {};
    const feeds: Record<string, Tensor> = {
      // Copies: the runner may move the buffers to its thread, and the embedding serves every prompt.
      image_embed: { data: embedding.data.slice(), dims: embedding.dims },
      ...Object.fromEntries(
        FEATURE_NAMES.map((name) => {
          const feature = features[name];
          if (!feature) throw new EngineError("internal_error", `The embedding lacks SAM 2's ${name}.`);
          return [name, { data: feature.data.slice(), dims: feature.dims }];
        }),
      ),
      // The stretched frame: each axis scaled on its own. No padding point: the graph appends one itself.
      ...promptFeeds(box, points, { x: ENCODER_SIDE / embedding.width, y: ENCODER_SIDE / embedding.height }, false),
      ...noMaskPrompt(),
    };
    const outputs = await this.models.runOutputs(this.decoder, feeds, context.signal);
    const masks = outputs.masks;
    const iou = outputs.iou_predictions;
    const count = masks?.dims[1] ?? 0;
    const side = masks?.dims[2] ?? 0;
    if (!masks || !(masks.data instanceof Float32Array) || count === 0 || side === 0 || masks.dims[3] !== side || !iou) {
      throw new EngineError("model_failed", "The segmenter's decoder did not return masks and their predicted IoU.");
    }
    // Three candidate masks (the export's multimask output): the one the decoder rates best, as SAM 2's examples keep.
    let best = 0;
    for (let k = 1; k < count; k++) if ((iou.data[k] ?? 0) > (iou.data[best] ?? 0)) best = k;
    const logits = masks.data.subarray(best * side * side, (best + 1) * side * side);
    const width = embedding.scaledWidth;
    const height = embedding.scaledHeight;
    const data = thresholdResized(logits, side, width, height);
    return { mask: { data, width, height }, scale: width / embedding.width, predictedIou: iou.data[best] ?? 0 };
  }
}

function floatOutput(outputs: Record<string, Tensor>, name: string): FloatTensor {
  const output = outputs[name];
  if (!output || !(output.data instanceof Float32Array)) {
    throw new EngineError(
      "model_failed",
      `The segmenter's encoder gave no ${name}: it is not SAM 2.1 as samexporter exports it.`,
    );
  }
  return { data: output.data, dims: output.dims };
}

/**
 * The square `side`² logits over the stretched frame, resized bilinearly to `width` x `height` (the picture's own
 * aspect) and thresholded at 0: as SAM 2 upsamples its logits before the threshold, so the outline stays smooth.
 */
function thresholdResized(logits: Float32Array, side: number, width: number, height: number): Uint8Array {
  const mask = new Uint8Array(width * height);
  const sample = (position: number, span: number) => {
    const at = Math.min(side - 1, Math.max(0, ((position + 0.5) * side) / span - 0.5));
    const low = Math.floor(at);
    return { low, high: Math.min(side - 1, low + 1), weight: at - low };
  };
  const columns = Array.from({ length: width }, (_, x) => sample(x, width));
  for (let y = 0; y < height; y++) {
    const row = sample(y, height);
    const top = row.low * side;
    const bottom = row.high * side;
    for (let x = 0; x < width; x++) {
      const { low, high, weight } = columns[x] as { low: number; high: number; weight: number };
      const upper = (logits[top + low] ?? 0) * (1 - weight) + (logits[top + high] ?? 0) * weight;
      const lower = (logits[bottom + low] ?? 0) * (1 - weight) + (logits[bottom + high] ?? 0) * weight;
      if (upper * (1 - row.weight) + lower * row.weight > 0) mask[y * width + x] = 255;
    }
  }
  return mask;
}
