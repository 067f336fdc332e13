import sharp from "sharp";
import type { RgbaImage } from "../engine.ports";
import { assertWithinPixelLimit } from "../pixels/image-codec";
import { clamp } from "../pixels/mask-ops";
import type { Rgb } from "../prompts/prompt-text";

/**
 * Effects drawn from a picture's opaque shape (a cut-out's subject, or the
 * whole rectangle of an opaque picture): a drop shadow and an outline. Both
 * grow the canvas, transparent, just enough that nothing is clipped, and put
 * the picture over what they draw, so the subject's own pixels stay as they
 * were.
 */

/** The smallest rectangle holding every pixel that is not fully transparent; undefined when there is none. */
export function opaqueBounds(image: RgbaImage): { left: number; top: number; right: number; bottom: number } | undefined {
  let left = image.width;
  let top = image.height;
  let right = -1;
  let bottom = -1;
  for (let y = 0; y < image.height; y++) {
    for (let x = 0; x < image.width; x++) {
      if ((image.data[(y * image.width + x) * 4 + 3] ?? 0) === 0) continue;
      if (x < left) left = x;
      if (x > right) right = x;
      if (y < top) top = y;
      if (y > bottom) bottom = y;
    }
  }
  return right < 0 ? undefined : { left, top, right: right + 1, bottom: bottom + 1 };
}

interface Margins {
  left: number;
  top: number;
  right: number;
  bottom: number;
}

/** `image` on a larger transparent canvas, `margins` pixels more on each side. */
function extendCanvas(image: RgbaImage, margins: Margins): RgbaImage {
  const width = image.width + margins.left + margins.right;
  const height = image.height + margins.top + margins.bottom;
  const data = new Uint8Array(width * height * 4);
  for (let y = 0; y < image.height; y++) {
    const from = y * image.width * 4;
    data.set(image.data.subarray(from, from + image.width * 4), ((y + margins.top) * width + margins.left) * 4);
  }
  return { data, width, height };
}

/**
 * `over` composited onto a layer of one colour whose coverage is `coverage`
 * (0..1 per pixel, same size): Porter-Duff "over" in straight alpha.
 */
function overColourLayer(over: RgbaImage, colour: Rgb, coverage: Float32Array): RgbaImage {
  const data = new Uint8Array(over.data.length);
  for (let i = 0; i < coverage.length; i++) {
    const a = (over.data[i * 4 + 3] ?? 0) / 255;
    const b = clamp(coverage[i] ?? 0, 0, 1);
    const out = a + b * (1 - a);
    if (out <= 0) continue;
    for (let c = 0; c < 3; c++) {
      const top = over.data[i * 4 + c] ?? 0;
      data[i * 4 + c] = Math.round((top * a + (colour[c] ?? 0) * b * (1 - a)) / out);
    }
    data[i * 4 + 3] = Math.round(out * 255);
  }
  return { data, width: over.width, height: over.height };
}

export interface DropShadow {
  /** Offset down and to the right, as a share of the shape's longer side. */
  distance: number;
  /** Blur sigma, as a share of the shape's longer side. */
  softness: number;
  /** 0..1 at the shadow's densest. */
  opacity: number;
  colour: Rgb;
}

/** The picture over a blurred, offset copy of its own alpha in `colour`. */
export async function dropShadow(image: RgbaImage, shadow: DropShadow, maxPixels: number): Promise<RgbaImage> {
  const bounds = opaqueBounds(image);
  if (!bounds) return image;
  const extent = Math.max(bounds.right - bounds.left, bounds.bottom - bounds.top);
  const offset = Math.max(1, Math.round(shadow.distance * extent));
  const sigma = Math.max(0.5, shadow.softness * extent);
  const reach = Math.ceil(3 * sigma);
  // The shadow's extent is the shape's, moved by the offset and widened by the blur; the canvas takes it whole.
  const margins: Margins = {
    left: Math.max(0, reach - offset - bounds.left),
    top: Math.max(0, reach - offset - bounds.top),
    right: Math.max(0, bounds.right + offset + reach - image.width),
    bottom: Math.max(0, bounds.bottom + offset + reach - image.height),
  };
  const width = image.width + margins.left + margins.right;
  const height = image.height + margins.top + margins.bottom;
  assertWithinPixelLimit(width, height, maxPixels, "The picture with its shadow");
  const canvas = extendCanvas(image, margins);
  const alpha = new Uint8Array(width * height);
  for (let y = 0; y < image.height; y++) {
    const ty = y + margins.top + offset;
    if (ty >= height) break;
    for (let x = 0; x < image.width; x++) {
      const tx = x + margins.left + offset;
      if (tx >= width) break;
      alpha[ty * width + tx] = image.data[(y * image.width + x) * 4 + 3] ?? 0;
    }
  }
  // libvips answers a one-band raw input in sRGB (three bands) unless told to keep one.
  const blurred = await sharp(alpha, { raw: { width, height, channels: 1 } })
    .blur(sigma)
    .extractChannel(0)
    .raw()
    .toBuffer();
  const coverage = new Float32Array(width * height);
  for (let i = 0; i < coverage.length; i++) coverage[i] = ((blurred[i] ?? 0) / 255) * shadow.opacity;
  return overColourLayer(canvas, shadow.colour, coverage);
}

/**
 * A stroke `size` pixels wide around the picture's shape (pixels at least
 * half opaque), antialiased; the picture is drawn over it, so its soft edge
 * blends into the stroke rather than into transparency.
 */
export function outline(image: RgbaImage, size: number, colour: Rgb, maxPixels: number): RgbaImage {
  const bounds = opaqueBounds(image);
  if (!bounds) return image;
  const reach = Math.ceil(size) + 1;
  const margins: Margins = {
    left: Math.max(0, reach - bounds.left),
    top: Math.max(0, reach - bounds.top),
    right: Math.max(0, bounds.right + reach - image.width),
    bottom: Math.max(0, bounds.bottom + reach - image.height),
  };
  const width = image.width + margins.left + margins.right;
  const height = image.height + margins.top + margins.bottom;
  assertWithinPixelLimit(width, height, maxPixels, "The outlined picture");
  const canvas = extendCanvas(image, margins);
  const inside = new Uint8Array(width * height);
  for (let i = 0; i < inside.length; i++) inside[i] = (canvas.data[i * 4 + 3] ?? 0) >= 128 ? 1 : 0;
  const distance = distanceToShape(inside, width, height);
  const coverage = new Float32Array(width * height);
  for (let i = 0; i < coverage.length; i++) coverage[i] = clamp(size + 0.5 - (distance[i] ?? 0), 0, 1);
  return overColourLayer(canvas, colour, coverage);
}

/**
 * Euclidean distance from each pixel to the nearest pixel of the shape
 * (Felzenszwalb and Huttenlocher's exact transform: one pass over columns,
 * one over rows, each a lower envelope of parabolas).
 */
export function distanceToShape(inside: Uint8Array, width: number, height: number): Float32Array {
  const far = (width + height) ** 2;
  const squared = new Float64Array(width * height);
  for (let i = 0; i < squared.length; i++) squared[i] = inside[i] ? 0 : far;
  const line = new Float64Array(Math.max(width, height));
  const result = new Float64Array(Math.max(width, height));
  const vertices = new Int32Array(Math.max(width, height));
  const bounds = new Float64Array(Math.max(width, height) + 1);
  const transform = (length: number) => {
    let k = 0;
    vertices[0] = 0;
    bounds[0] = Number.NEGATIVE_INFINITY;
    bounds[1] = Number.POSITIVE_INFINITY;
    const meet = (q: number, v: number) => ((line[q] ?? 0) + q * q - ((line[v] ?? 0) + v * v)) / (2 * q - 2 * v);
    for (let q = 1; q < length; q++) {
      let s = meet(q, vertices[k] ?? 0);
      // bounds[0] is minus infinity: k never drops below 0.
      while (s <= (bounds[k] ?? 0)) {
        k--;
        s = meet(q, vertices[k] ?? 0);
      }
      k++;
      vertices[k] = q;
      bounds[k] = s;
      bounds[k + 1] = Number.POSITIVE_INFINITY;
    }
    k = 0;
    for (let q = 0; q < length; q++) {
      while ((bounds[k + 1] ?? 0) < q) k++;
      const v = vertices[k] ?? 0;
      result[q] = (q - v) * (q - v) + (line[v] ?? 0);
    }
  };
  for (let x = 0; x < width; x++) {
    for (let y = 0; y < height; y++) line[y] = squared[y * width + x] ?? far;
    transform(height);
    for (let y = 0; y < height; y++) squared[y * width + x] = result[y] ?? far;
  }
  const distance = new Float32Array(width * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) line[x] = squared[y * width + x] ?? far;
    transform(width);
    for (let x = 0; x < width; x++) distance[y * width + x] = Math.sqrt(result[x] ?? far);
  }
  return distance;
}
