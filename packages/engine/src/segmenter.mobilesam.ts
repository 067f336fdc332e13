import sharp from "sharp";
import type { RgbaImage, WorkContext } from "./engine.ports";
import { type OnnxRunner, sharedOnnxRunner } from "./onnx-runner";
import { type ImageEmbedding, MinisamSegmenter } from "./segmenter.minisam";
import { throwIfCancelled } from "./work-checkpoint";

/**
 * MobileSAM (catalog entry `mobilesam`): the TinyViT encoder distilled from
 * SAM's, with SAM's own prompt decoder. Only the encoder's input differs from
 * minisam's: Acly's export takes float32 [H, W, 3], RGB 0..255, already
 * resized so that the longer side is 1024, and normalises and pads inside the
 * graph. Its decoder is SAM's ONNX export, so prompts, masks and the predicted
 * IoU are read as for minisam.
 */

/** SAM's encoder side: the longer side of the picture is scaled to it. */
const ENCODER_SIDE = 1024;

export interface MobileSamSegmenterOptions {
  encoderPath: string;
  decoderPath: string;
  runner?: OnnxRunner;
}

export class MobileSamSegmenter extends MinisamSegmenter {
  private readonly encoderRunner: OnnxRunner;

  constructor(options: MobileSamSegmenterOptions) {
    super(options);
    this.encoderRunner = options.runner ?? sharedOnnxRunner();
  }

  override async embed(image: RgbaImage, context: WorkContext): Promise<ImageEmbedding> {
    throwIfCancelled(context.signal);
    const scale = ENCODER_SIDE / Math.max(image.width, image.height);
    const scaledWidth = Math.max(1, Math.round(image.width * scale));
    const scaledHeight = Math.max(1, Math.round(image.height * scale));
    const rgb = await sharp(image.data, { raw: { width: image.width, height: image.height, channels: 4 } })
      .removeAlpha()
      .resize(scaledWidth, scaledHeight, { fit: "fill" })
      .raw()
      .toBuffer();
    const input = Float32Array.from(rgb);
    const output = await this.encoderRunner.run(
      this.encoder,
      { data: input, dims: [scaledHeight, scaledWidth, 3] },
      context.signal,
    );
    return { data: output.data, dims: output.dims, scale, width: image.width, height: image.height, scaledWidth, scaledHeight };
  }
}
