import sharp from "sharp";
import type { GreyImage, RgbaImage } from "../engine.ports";
import { EngineError } from "../engine-error";
import { asBuffer, decodeImage, hasTransparency } from "../pixels/image-codec";
import { blendInside } from "../pixels/mask-ops";
import type { ProviderEditTask } from "./generative-provider";

/**
 * What every adapter does to pictures on the way to a vendor and back: the
 * input scaled to a size the vendor takes, the mask in the vendor's encoding,
 * and the answer brought back to the input's exact size, with the pixels
 * outside the mask the input's own.
 */

/** About one megapixel: what the image models work at, and what their base price covers. */
export const UPLOAD_PIXELS = 1024 * 1024;

export interface Size {
  width: number;
  height: number;
}

/** The input's aspect at about `pixels`, both sides multiples of `multiple`, the aspect clamped to [minAspect, maxAspect]. */
export function sizeNear(
  source: Size,
  options: { pixels?: number; multiple?: number; minAspect?: number; maxAspect?: number } = {},
): Size {
  const { pixels = UPLOAD_PIXELS, multiple = 16, minAspect = 0, maxAspect = Number.POSITIVE_INFINITY } = options;
  const aspect = Math.min(maxAspect, Math.max(minAspect, source.width / source.height));
  const round = (value: number) => Math.max(multiple, Math.round(value / multiple) * multiple);
  return { width: round(Math.sqrt(pixels * aspect)), height: round(Math.sqrt(pixels / aspect)) };
}

/**
 * The input's own size when the vendor takes it, else the input's aspect
 * scaled down to at most `maxPixels`, or up until both sides are at least
 * `minSide` (whole pixels, so the aspect moves by the rounding only).
 */
export function sizeWithin(source: Size, limits: { maxPixels: number; minSide: number }): Size {
  let scale = Math.min(1, Math.sqrt(limits.maxPixels / (source.width * source.height)));
  scale = Math.max(scale, limits.minSide / Math.min(source.width, source.height));
  if (scale === 1) return { width: source.width, height: source.height };
  // Floor keeps a scaled-down size within the pixel limit; the minimum side wins over it (a 1:1000 strip is the vendor's to refuse).
  const side = (value: number) => Math.max(limits.minSide, Math.floor(value * scale));
  return { width: side(source.width), height: side(source.height) };
}

/** Of "W:H" ratios (or WxH sizes), the one whose aspect is nearest the picture's (on a log scale, so 2:1 and 1:2 are as far from 1:1). */
export function nearestRatio(source: Size, ratios: readonly string[]): string {
  const target = Math.log(source.width / source.height);
  let best = ratios[0] ?? "1:1";
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const ratio of ratios) {
    const [w, h] = ratio.split(/[:x]/).map(Number);
    if (!w || !h) continue;
    const distance = Math.abs(Math.log(w / h) - target);
    if (distance < bestDistance) {
      best = ratio;
      bestDistance = distance;
    }
  }
  return best;
}

export interface Upload {
  bytes: Buffer;
  mimeType: "image/jpeg" | "image/png";
  filename: string;
  width: number;
  height: number;
}

/**
 * The picture resized to `size` (stretched by at most the rounding to the
 * vendor's multiple when `size` keeps its aspect): JPEG at quality 95 when it
 * is opaque (a few hundred kB instead of megabytes of PNG), PNG when it has
 * transparency.
 */
export async function encodeUpload(image: RgbaImage, size: Size): Promise<Upload> {
  const pipeline = sharp(asBuffer(image.data), { raw: { width: image.width, height: image.height, channels: 4 } }).resize(
    size.width,
    size.height,
    { fit: "fill" },
  );
  if (hasTransparency(image)) {
    const bytes = await pipeline.png().toBuffer();
    return { bytes, mimeType: "image/png", filename: "image.png", ...size };
  }
  const bytes = await pipeline.removeAlpha().jpeg({ quality: 95 }).toBuffer();
  return { bytes, mimeType: "image/jpeg", filename: "image.jpg", ...size };
}

export function dataUri(upload: Upload): string {
  return `data:${upload.mimeType};base64,${upload.bytes.toString("base64")}`;
}

/** OpenAI's mask: a PNG of the upload's size whose transparent pixels mark where to edit. */
export async function transparentWhereMasked(mask: GreyImage, size: Size): Promise<Buffer> {
  const rgba = new Uint8Array(mask.width * mask.height * 4);
  for (let i = 0; i < mask.data.length; i++) {
    rgba[i * 4] = 0;
    rgba[i * 4 + 1] = 0;
    rgba[i * 4 + 2] = 0;
    rgba[i * 4 + 3] = 255 - (mask.data[i] ?? 0);
  }
  return sharp(rgba, { raw: { width: mask.width, height: mask.height, channels: 4 } })
    .resize(size.width, size.height, { fit: "fill" })
    .png()
    .toBuffer();
}

/** The usual mask: a greyscale PNG of the upload's size, white where to edit. */
export async function whiteWhereMasked(mask: GreyImage, size: Size): Promise<Buffer> {
  return sharp(asBuffer(mask.data), { raw: { width: mask.width, height: mask.height, channels: 1 } })
    .resize(size.width, size.height, { fit: "fill", kernel: "linear" })
    .toColourspace("b-w")
    .png()
    .toBuffer();
}

/**
 * The prompt, with the negative prompt appended for vendors that have no
 * parameter for it: "make it snowy. Avoid: people." (one line: multipart
 * bodies would turn a newline into CRLF).
 */
export function promptWithAvoid(prompt: string, negativePrompt: string | undefined): string {
  const text = prompt.trim();
  const avoid = negativePrompt?.trim();
  if (!avoid) return text;
  return `${text}${/[.!?]$/.test(text) ? "" : "."} Avoid: ${avoid}${/[.!?]$/.test(avoid) ? "" : "."}`;
}

/** The vendor's answer decoded; an undecodable one is the vendor's failure (upstream_failed). */
export async function decodeAnswer(vendor: string, bytes: Buffer, maxPixels: number): Promise<RgbaImage> {
  try {
    return await decodeImage(bytes, maxPixels);
  } catch (error) {
    throw new EngineError(
      "upstream_failed",
      `The image provider (${vendor}) answered with an image that could not be decoded; try again later.`,
      { cause: error instanceof EngineError ? undefined : error },
    );
  }
}

/**
 * The vendor's answer as the edit's result: decoded, brought to the input's
 * exact size (scaled to cover it and centred, so an answer in a nearby
 * aspect loses a sliver at two edges rather than being distorted), and with
 * a mask, the input's own pixels outside it (feathered by 2 px).
 */
export async function finishAnswer(vendor: string, bytes: Buffer, task: ProviderEditTask): Promise<RgbaImage> {
  let answer = await decodeAnswer(vendor, bytes, task.maxPixels);
  const { width, height } = task.image;
  if (answer.width !== width || answer.height !== height) {
    const { data, info } = await sharp(asBuffer(answer.data), {
      raw: { width: answer.width, height: answer.height, channels: 4 },
    })
      .resize(width, height, { fit: "cover", position: "centre" })
      .raw()
      .toBuffer({ resolveWithObject: true });
    answer = { data, width: info.width, height: info.height };
  }
  return task.mask ? blendInside(task.image, answer, task.mask) : answer;
}
