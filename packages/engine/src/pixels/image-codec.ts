import { crc32 } from "node:zlib";
import sharp, { type Metadata, type Sharp } from "sharp";
import { type GreyImage, OUTPUT_FORMATS, type OutputFormat, type RgbaImage } from "../engine.ports";
import { EngineError } from "../engine-error";

/**
 * 40 megapixels: every current camera up to 7360x5460 passes. Decoding works
 * on 4 bytes per pixel, so this bounds the raw frame at 160 MB; the heavy
 * steps of every workflow run at a reduced resolution on top of it.
 */
export const DEFAULT_MAX_PIXELS = 40_000_000;

// libvips keeps the results of recent operations for reuse (by default up to 50 MB, per process):
// an edit never decodes or resizes the same picture twice, so the cache only held memory beside
// the 12 MP frames (docs/engine.md, Memory at concurrency 2).
sharp.cache(false);

/** JPEG and WebP quality when the request names none. */
export const DEFAULT_QUALITY = 90;

/** The formats a submitted image (or mask) may be in: the ones the engine writes, and no other is decoded. */
export const INPUT_FORMATS: readonly OutputFormat[] = OUTPUT_FORMATS;
const INPUT_FORMAT_SET = new Set<string>(INPUT_FORMATS);

interface Dimensions {
  width: number;
  height: number;
}

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

/** The format named by the first bytes (magic numbers), whatever a file name or a Content-Type claims. */
export function sniffImageFormat(bytes: Uint8Array): OutputFormat | undefined {
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return "jpeg";
  if (bytes.length >= 8 && PNG_SIGNATURE.every((byte, i) => bytes[i] === byte)) return "png";
  if (bytes.length >= 12 && ascii(bytes, 0, 4) === "RIFF" && ascii(bytes, 8, 4) === "WEBP") return "webp";
  return undefined;
}

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] as const;

function ascii(bytes: Uint8Array, offset: number, length: number): string {
  return String.fromCharCode(...bytes.subarray(offset, offset + length));
}

function damaged(what: string): EngineError {
  return new EngineError("unsupported_image", `The image is damaged: ${what}. Send the complete, unmodified file.`);
}

function truncated(format: string): EngineError {
  return new EngineError("unsupported_image", `The ${format} file is truncated (it ends early). Send the complete file.`);
}

/**
 * JPEG: walks the marker segments from SOI, skips each by its length, steps
 * through every scan's entropy-coded data to the marker after it, and wants
 * a frame header, a scan and an EOI. Bytes after the EOI (camera trailers,
 * MPF pictures) are allowed.
 */
function checkJpegStructure(bytes: Buffer): Dimensions | undefined {
  const end = bytes.length;
  let pos = 2;
  let frame = false;
  let scan = false;
  let size: Dimensions | undefined;
  let orientation = 1;
  for (;;) {
    if (pos >= end) throw truncated("JPEG");
    if (bytes[pos] !== 0xff) throw damaged(`no JPEG marker at byte ${pos}`);
    while (pos < end && bytes[pos] === 0xff) pos++; // fill bytes
    if (pos >= end) throw truncated("JPEG");
    const marker = bytes[pos++] as number;
    if (marker === 0xd9) {
      if (!scan) throw damaged("the JPEG ends before any image data");
      // EXIF orientations 5 to 8 turn the picture a quarter: what the client sees is the other way round.
      return size && orientation >= 5 && orientation <= 8 ? { width: size.height, height: size.width } : size;
    }
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) continue; // stand-alone markers
    if (marker === 0x00 || marker === 0xd8) throw damaged(`unexpected JPEG marker 0xFF${marker.toString(16)} at byte ${pos - 2}`);
    if (pos + 2 > end) throw truncated("JPEG");
    const length = ((bytes[pos] as number) << 8) | (bytes[pos + 1] as number);
    if (length < 2) throw damaged(`a JPEG segment with length ${length} at byte ${pos}`);
    if (pos + length > end) throw truncated("JPEG");
    // SOF0-SOF15, except DHT (C4), JPG (C8) and DAC (CC).
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc && length >= 7) {
      frame = true;
      const height = bytes.readUInt16BE(pos + 3);
      const width = bytes.readUInt16BE(pos + 5);
      // A height of 0 is announced later (DNL): the header reader is asked instead.
      if (!size && width > 0 && height > 0) size = { width, height };
    }
    if (marker === 0xe1 && !frame) orientation = exifOrientation(bytes.subarray(pos + 2, pos + length)) ?? orientation;
    pos += length;
    if (marker !== 0xda) continue;
    if (!frame) throw damaged("a JPEG scan comes before its frame header");
    scan = true;
    // Entropy-coded data ends at the first 0xFF that is not stuffing (FF 00), a restart marker or fill.
    for (;;) {
      // Buffer#indexOf (memchr) is several times faster here than a loop in JavaScript.
      const at = bytes.indexOf(0xff, pos);
      if (at < 0 || at + 1 >= end) throw truncated("JPEG");
      const next = bytes[at + 1] as number;
      if (next === 0x00 || (next >= 0xd0 && next <= 0xd7)) pos = at + 2;
      else if (next === 0xff) pos = at + 1;
      else {
        pos = at;
        break;
      }
    }
  }
}

/** PNG: walks the chunks, checks every chunk's CRC, and wants IHDR first, IDAT, and IEND. */
function checkPngStructure(bytes: Buffer): Dimensions | undefined {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const end = bytes.length;
  let pos = 8;
  let data = false;
  let size: Dimensions | undefined;
  for (let index = 0; ; index++) {
    if (pos + 8 > end) throw truncated("PNG");
    const length = view.getUint32(pos);
    const type = ascii(bytes, pos + 4, 4);
    if (length > 0x7fffffff || !/^[A-Za-z]{4}$/.test(type)) throw damaged(`an invalid PNG chunk at byte ${pos}`);
    if (pos + 12 + length > end) throw truncated("PNG");
    if (crc32(bytes.subarray(pos + 4, pos + 8 + length)) !== view.getUint32(pos + 8 + length)) {
      throw damaged(`the PNG chunk ${type} at byte ${pos} fails its checksum`);
    }
    if (index === 0 && type !== "IHDR") throw damaged("the PNG does not start with IHDR");
    if (index === 0 && length >= 8) size = { width: view.getUint32(pos + 8), height: view.getUint32(pos + 12) };
    // An eXIf chunk may turn the picture: the header reader, which applies it, is asked instead.
    if (type === "eXIf") size = undefined;
    if (type === "IDAT") data = true;
    if (type === "IEND") {
      if (!data) throw damaged("the PNG has no image data (IDAT)");
      return size;
    }
    pos += 12 + length;
  }
}

/** WebP: the RIFF length must fit the file, its chunks must fill it exactly, and one must hold the picture. */
function checkWebpStructure(bytes: Buffer): Dimensions | undefined {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const riffEnd = 8 + view.getUint32(4, true);
  if (riffEnd > bytes.length) throw truncated("WebP");
  let pos = 12;
  let picture = false;
  let size: Dimensions | undefined;
  let exif = false;
  while (pos < riffEnd) {
    if (pos + 8 > riffEnd) throw damaged(`a WebP chunk header overruns the file at byte ${pos}`);
    const type = ascii(bytes, pos, 4);
    const chunkSize = view.getUint32(pos + 4, true);
    // Chunks are padded to an even size; a missing pad byte after the last one is tolerated.
    if (pos + 8 + chunkSize > riffEnd) throw damaged(`the WebP chunk ${type.trim()} at byte ${pos} overruns the file`);
    if (type === "VP8 " || type === "VP8L" || type === "ANMF") picture = true;
    size ??= webpChunkSize(bytes, type, pos + 8, chunkSize);
    if (type === "EXIF") exif = true;
    pos += 8 + chunkSize + (chunkSize % 2);
  }
  if (!picture) throw damaged("the WebP holds no picture");
  // EXIF may turn the picture: the header reader, which applies it, is asked instead.
  return exif ? undefined : size;
}

/** The canvas size a WebP chunk announces (VP8X, VP8 key frame, VP8L), if it is one of those. */
function webpChunkSize(bytes: Buffer, type: string, data: number, length: number): Dimensions | undefined {
  if (type === "VP8X" && length >= 10) {
    return { width: bytes.readUIntLE(data + 4, 3) + 1, height: bytes.readUIntLE(data + 7, 3) + 1 };
  }
  if (type === "VP8 " && length >= 10 && bytes[data + 3] === 0x9d && bytes[data + 4] === 0x01 && bytes[data + 5] === 0x2a) {
    return { width: bytes.readUInt16LE(data + 6) & 0x3fff, height: bytes.readUInt16LE(data + 8) & 0x3fff };
  }
  if (type === "VP8L" && length >= 5 && bytes[data] === 0x2f) {
    const bits = bytes.readUInt32LE(data + 1);
    return { width: (bits & 0x3fff) + 1, height: ((bits >> 14) & 0x3fff) + 1 };
  }
  return undefined;
}

/** The orientation tag (0x0112) of an APP1 Exif segment's first IFD, if there is one. */
function exifOrientation(segment: Buffer): number | undefined {
  if (segment.length < 14 || ascii(segment, 0, 6) !== "Exif\0\0") return undefined;
  const tiff = segment.subarray(6);
  const little = ascii(tiff, 0, 2) === "II";
  if (!little && ascii(tiff, 0, 2) !== "MM") return undefined;
  const u16 = (at: number) => (little ? tiff.readUInt16LE(at) : tiff.readUInt16BE(at));
  const u32 = (at: number) => (little ? tiff.readUInt32LE(at) : tiff.readUInt32BE(at));
  const ifd = u32(4);
  if (ifd + 2 > tiff.length) return undefined;
  const entries = u16(ifd);
  for (let index = 0; index < entries; index++) {
    const entry = ifd + 2 + index * 12;
    if (entry + 12 > tiff.length) return undefined;
    if (u16(entry) === 0x0112) return u16(entry + 8);
  }
  return undefined;
}

/**
 * A structural check without decoding pixels: truncation and broken container
 * structure are caught (for PNG, any changed byte, by the chunk CRCs); damage
 * inside JPEG or WebP compressed data is not, and fails the job later (refunded).
 * Returns the displayed size when the walk met it (EXIF orientation applied),
 * so that most submissions need no header read by libvips at all.
 */
export function checkImageStructure(bytes: Buffer, format: OutputFormat): Dimensions | undefined {
  if (sniffImageFormat(bytes) !== format) throw damaged(`the file does not start like a ${format.toUpperCase()}`);
  if (format === "jpeg") return checkJpegStructure(bytes);
  if (format === "png") return checkPngStructure(bytes);
  return checkWebpStructure(bytes);
}

/**
 * Reads the header only: refuses anything that is not JPEG, PNG or WebP, and
 * images over the pixel limit, before a single pixel is decoded (so a
 * decompression bomb costs nothing). It first walks the file's structure
 * (`checkImageStructure`, no pixels decoded either), so that a truncated or
 * damaged upload is refused up front rather than failing its job later.
 */
export async function inspectImage(bytes: Buffer, maxPixels: number = DEFAULT_MAX_PIXELS): Promise<ImageInfo> {
  // First, so that a damaged file is named as such rather than as unreadable.
  const sniffed = sniffImageFormat(bytes);
  const walked = sniffed ? checkImageStructure(bytes, sniffed) : undefined;
  if (sniffed && walked) {
    assertWithinPixelLimit(walked.width, walked.height, maxPixels);
    return { format: sniffed, ...walked };
  }
  let metadata: Metadata;
  try {
    metadata = await sharp(bytes, { limitInputPixels: false }).metadata();
  } catch (error) {
    throw new EngineError("unsupported_image", "The image could not be read: send JPEG, PNG or WebP bytes.", { cause: error });
  }
  const format = metadata.format;
  if (!INPUT_FORMAT_SET.has(format)) {
    throw new EngineError("unsupported_image", `The image is ${format ?? "of an unknown format"}; send JPEG, PNG or WebP.`);
  }
  const width = metadata.autoOrient?.width ?? metadata.width;
  const height = metadata.autoOrient?.height ?? metadata.height;
  if (!width || !height) throw new EngineError("unsupported_image", "The image has no dimensions.");
  assertWithinPixelLimit(width, height, maxPixels);
  if (format !== sniffed)
    throw new EngineError("unsupported_image", `The image does not start like a ${format.toUpperCase()} file.`);
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
 * Decodes straight to `side` x `side` RGBA (stretched, EXIF orientation
 * applied), with the displayed size of the whole image: what a detector that
 * looks at every picture as one square sees, without a full-size frame in
 * memory (JPEG's own downscaling does most of the work).
 */
export function decodeSquare(
  bytes: Buffer,
  side: number,
  maxPixels: number = DEFAULT_MAX_PIXELS,
): Promise<{ image: RgbaImage; width: number; height: number }> {
  return decodeScaled(bytes, () => ({ width: side, height: side }), maxPixels);
}

/**
 * Decodes straight to the size `sizeFor` picks from the displayed size (EXIF
 * orientation applied, RGBA): the segmenter's encoder input, made while the
 * detector runs, without a full-size frame in memory.
 */
export async function decodeScaled(
  bytes: Buffer,
  sizeFor: (width: number, height: number) => { width: number; height: number },
  maxPixels: number = DEFAULT_MAX_PIXELS,
): Promise<{ image: RgbaImage; width: number; height: number }> {
  const { width, height } = await inspectImage(bytes, maxPixels);
  const size = sizeFor(width, height);
  try {
    const { data, info } = await sharpInput(bytes, maxPixels)
      .autoOrient()
      .resize(size.width, size.height, { fit: "fill" })
      .toColourspace("srgb")
      .ensureAlpha()
      .raw({ depth: "uchar" })
      .toBuffer({ resolveWithObject: true });
    return { image: { data, width: info.width, height: info.height }, width, height };
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
 * Up to this size JPEG Huffman tables are optimised for the picture. That
 * takes a second pass over a buffer of every DCT coefficient of the frame,
 * about 12 bytes per pixel at 4:4:4: 150 MB for 12 MP, and 2 to 3 times the
 * encoding time, for files 2-5% smaller (measured: 3.8% at 12 MP, q90,
 * 4:4:4). Above it the standard tables are used and the encoder streams.
 */
const OPTIMISED_JPEG_MAX_PIXELS = 4_000_000;

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
    pipeline = pipeline.jpeg({
      quality,
      chromaSubsampling: quality >= 90 ? "4:4:4" : "4:2:0",
      optimiseCoding: image.width * image.height <= OPTIMISED_JPEG_MAX_PIXELS,
    });
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
