import sharp, { type Metadata, type Sharp } from "sharp";
import type { GreyImage, OutputFormat, RgbaImage } from "./engine.ports";
import { EngineError } from "./engine-error";

/**
 * 40 megapixels: every current camera up to 7360x5460 passes. Decoding works
 * on 4 bytes per pixel, so this bounds the raw frame at 160 MB; the heavy
 * steps of every workflow run at a reduced resolution on top of it.
 */
export const DEFAULT_MAX_PIXELS = 40_000_000;

/** JPEG and WebP quality when the request names none. */
export const DEFAULT_QUALITY = 90;

const INPUT_FORMATS = new Set<string>(["jpeg", "png", "webp"]);

export interface ImageInfo {
  format: OutputFormat;
  /** After EXIF orientation. */
  width: number;
  height: number;
}

function megapixels(pixels: number): string {
  return `${(pixels / 1_000_000).toFixed(1)} MP`;
}

export function assertWithinPixelLimit(width: number, height: number, maxPixels: number, what = "The image"): void {
  if (width * height > maxPixels) {
    throw new EngineError(
      "image_too_large",
      `${what} is ${width}x${height} pixels (${megapixels(width * height)}); the limit is ${megapixels(maxPixels)}. Send a smaller image.`,
    );
  }
}

/**
 * Reads the header only: refuses anything that is not JPEG, PNG or WebP, and
 * images over the pixel limit, before a single pixel is decoded (so a
 * decompression bomb costs nothing).
 */
export async function inspectImage(bytes: Buffer, maxPixels: number = DEFAULT_MAX_PIXELS): Promise<ImageInfo> {
  let metadata: Metadata;
  try {
    metadata = await sharp(bytes, { limitInputPixels: false }).metadata();
  } catch (error) {
    throw new EngineError("unsupported_image", "The image could not be read: send JPEG, PNG or WebP bytes.", { cause: error });
  }
  const format = metadata.format;
  if (!INPUT_FORMATS.has(format)) {
    throw new EngineError("unsupported_image", `The image is ${format ?? "of an unknown format"}; send JPEG, PNG or WebP.`);
  }
  const width = metadata.autoOrient?.width ?? metadata.width;
  const height = metadata.autoOrient?.height ?? metadata.height;
  if (!width || !height) throw new EngineError("unsupported_image", "The image has no dimensions.");
  assertWithinPixelLimit(width, height, maxPixels);
  return { format: format as OutputFormat, width, height };
}

function sharpInput(bytes: Buffer, maxPixels: number): Sharp {
  // libvips enforces the limit again while decoding; `failOn: "error"` accepts
  // the harmless warnings real cameras produce but not truncated files.
  return sharp(bytes, { limitInputPixels: maxPixels, failOn: "error" });
}

/** Decodes to 8-bit sRGB RGBA with the EXIF orientation applied. */
export async function decodeImage(bytes: Buffer, maxPixels: number = DEFAULT_MAX_PIXELS): Promise<RgbaImage> {
  await inspectImage(bytes, maxPixels);
  try {
    const { data, info } = await sharpInput(bytes, maxPixels)
      .autoOrient()
      .toColourspace("srgb")
      .ensureAlpha()
      .raw({ depth: "uchar" })
      .toBuffer({ resolveWithObject: true });
    return { data, width: info.width, height: info.height };
  } catch (error) {
    throw new EngineError("unsupported_image", "The image could not be decoded (truncated or corrupt file).", { cause: error });
  }
}

/**
 * Decodes a mask and resizes it to the image. White marks the area to edit;
 * transparent pixels count as black, so white strokes painted on a
 * transparent layer work too.
 */
export async function decodeMask(bytes: Buffer, width: number, height: number, maxPixels: number): Promise<GreyImage> {
  try {
    await inspectImage(bytes, maxPixels);
  } catch (error) {
    if (error instanceof EngineError) throw new EngineError("invalid_mask", `The mask is not usable: ${error.message}`);
    throw error;
  }
  const { data } = await sharpInput(bytes, maxPixels)
    .autoOrient()
    .flatten({ background: "#000000" })
    .greyscale()
    .resize(width, height, { fit: "fill", kernel: "linear" })
    .toColourspace("b-w")
    .raw({ depth: "uchar" })
    .toBuffer({ resolveWithObject: true });
  const mask = new Uint8Array(width * height);
  for (let i = 0; i < mask.length; i++) mask[i] = (data[i] ?? 0) >= 128 ? 255 : 0;
  return { data: mask, width, height };
}

/** A Buffer over the same memory (no copy, unlike `Buffer.from(typedArray)`). */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export function hasTransparency(image: RgbaImage): boolean {
  const { data } = image;
  for (let i = 3; i < data.length; i += 4) if ((data[i] ?? 255) < 255) return true;
  return false;
}

export interface EncodedImage {
  data: Buffer;
  format: OutputFormat;
  width: number;
  height: number;
}

/**
 * Encodes, then reads width, height and format back from the output itself.
 * JPEG has no alpha: transparent pixels are flattened onto white.
 */
export async function encodeImage(image: RgbaImage, format: OutputFormat, quality = DEFAULT_QUALITY): Promise<EncodedImage> {
  const transparent = hasTransparency(image);
  let pipeline = sharp(image.data, { raw: { width: image.width, height: image.height, channels: 4 } });
  if (!transparent) pipeline = pipeline.removeAlpha();
  if (format === "jpeg") {
    if (transparent) pipeline = pipeline.flatten({ background: "#ffffff" });
    pipeline = pipeline.jpeg({ quality, chromaSubsampling: quality >= 90 ? "4:4:4" : "4:2:0" });
  } else if (format === "png") {
    pipeline = pipeline.png({ compressionLevel: 6, adaptiveFiltering: false });
  } else {
    pipeline = pipeline.webp({ quality, alphaQuality: 100 });
  }
  const data = await pipeline.toBuffer();
  const metadata = await sharp(data).metadata();
  if (metadata.format !== format || !metadata.width || !metadata.height) {
    throw new Error(`The encoder produced ${metadata.format} instead of ${format}`);
  }
  return { data, format, width: metadata.width, height: metadata.height };
}

/** Resizes RGBA pixels with libvips (Lanczos down, bicubic-like up), alpha kept straight. */
export async function resizeRgba(image: RgbaImage, width: number, height: number): Promise<RgbaImage> {
  const { data, info } = await sharp(image.data, { raw: { width: image.width, height: image.height, channels: 4 } })
    .resize(width, height, { fit: "fill" })
    .raw()
    .toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

/** Resizes a one-channel image (a mask or a matte) with bilinear interpolation. */
export async function resizeGrey(image: GreyImage, width: number, height: number): Promise<GreyImage> {
  const { data, info } = await sharp(image.data, { raw: { width: image.width, height: image.height, channels: 1 } })
    .resize(width, height, { fit: "fill", kernel: "linear" })
    // Without this libvips hands one-channel input back as sRGB.
    .toColourspace("b-w")
    .raw()
    .toBuffer({ resolveWithObject: true });
  if (info.channels !== 1) throw new Error(`Expected one channel after resizing, got ${info.channels}`);
  return { data, width: info.width, height: info.height };
}
