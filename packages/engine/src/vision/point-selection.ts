import sharp from "sharp";
import { EngineError } from "../engine-error";
import { DEFAULT_MAX_PIXELS } from "../pixels/image-codec";
import type { ImageEmbedding, MinisamSegmenter, PromptPoint } from "./segmenter.minisam";

/**
 * Click-to-select: a picture is encoded once (the segmenter's encoder, about
 * a second), then each click runs only the decoder (tens of milliseconds) on
 * that embedding with every point so far, and answers the object's mask.
 * The caller keeps the embedding between clicks; nothing here holds state.
 */

/** More clicks than this add nothing SAM can use; a request with more is refused. */
export const MAX_SELECTION_POINTS = 24;

/** One click's answer: the object's mask at the encoder's scale, as a PNG (white = object). */
export interface PointSelection {
  /** A PNG, white on black, at `width` x `height`: the picture's aspect at the encoder's scale (resized to the picture as any `mask` is). */
  png: Buffer;
  width: number;
  height: number;
  /** The decoder's own estimate, 0..1, of how well the mask covers the object clicked. */
  predictedIou: number;
  /** Share of the picture the mask covers, 0..1. */
  coverage: number;
}

export class PointSelector {
  constructor(
    private readonly segmenter: MinisamSegmenter,
    private readonly maxPixels: number = DEFAULT_MAX_PIXELS,
  ) {}

  /**
   * Encodes the picture. Bytes that are not a JPEG, PNG or WebP, or over the
   * pixel limit, fail as `unsupported_image` / `image_too_large` like a job's input.
   */
  async embed(bytes: Buffer, signal?: AbortSignal): Promise<ImageEmbedding> {
    return this.segmenter.embedEncoded(bytes, this.maxPixels, { signal });
  }

  /** The object the points describe. Points must lie inside the picture; at least one must be `include`. */
  async select(embedding: ImageEmbedding, points: readonly PromptPoint[], signal?: AbortSignal): Promise<PointSelection> {
    checkPoints(points, embedding.width, embedding.height);
    const { mask, predictedIou } = await this.segmenter.segment(embedding, undefined, points, { signal });
    let covered = 0;
    for (let i = 0; i < mask.data.length; i++) if (mask.data[i]) covered++;
    const png = await sharp(mask.data, { raw: { width: mask.width, height: mask.height, channels: 1 } })
      .png({ compressionLevel: 9, palette: false })
      .toBuffer();
    return {
      png,
      width: mask.width,
      height: mask.height,
      predictedIou,
      coverage: covered / Math.max(1, mask.data.length),
    };
  }
}

function checkPoints(points: readonly PromptPoint[], width: number, height: number): void {
  if (points.length === 0 || !points.some((point) => point.include)) {
    throw new EngineError("invalid_request", "Click on the object at least once: every point so far leaves something out.");
  }
  if (points.length > MAX_SELECTION_POINTS) {
    throw new EngineError(
      "invalid_request",
      `A selection takes at most ${MAX_SELECTION_POINTS} points (got ${points.length}): undo some, or clear and start again.`,
    );
  }
  points.forEach((point, index) => {
    if (
      !(
        Number.isFinite(point.x) &&
        Number.isFinite(point.y) &&
        point.x >= 0 &&
        point.y >= 0 &&
        point.x < width &&
        point.y < height
      )
    ) {
      throw new EngineError(
        "invalid_request",
        `Point ${index + 1} (${point.x}, ${point.y}) is outside the picture, which is ${width} x ${height} pixels.`,
      );
    }
  });
}
