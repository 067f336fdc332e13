import type { RgbaImage } from "../engine.ports";

/**
 * CIELAB (D65) for the segmenter: Euclidean distance in Lab (delta E 1976)
 * follows perceived colour difference far better than RGB, so one threshold
 * works for dark and light backgrounds alike.
 */

const SRGB_TO_LINEAR = new Float32Array(256);
for (let value = 0; value < 256; value++) {
  const c = value / 255;
  SRGB_TO_LINEAR[value] = c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
}

// Reference white D65.
const XN = 0.95047;
const YN = 1.0;
const ZN = 1.08883;
const EPSILON = 216 / 24389;
const KAPPA = 24389 / 27;

function labF(t: number): number {
  return t > EPSILON ? Math.cbrt(t) : (KAPPA * t + 16) / 116;
}

/** Lab of one 8-bit sRGB colour, written into `out` at `offset`. */
export function rgbToLab(r: number, g: number, b: number, out: Float32Array, offset: number): void {
  const rl = SRGB_TO_LINEAR[r] ?? 0;
  const gl = SRGB_TO_LINEAR[g] ?? 0;
  const bl = SRGB_TO_LINEAR[b] ?? 0;
  const fx = labF((0.4124564 * rl + 0.3575761 * gl + 0.1804375 * bl) / XN);
  const fy = labF((0.2126729 * rl + 0.7151522 * gl + 0.072175 * bl) / YN);
  const fz = labF((0.0193339 * rl + 0.119192 * gl + 0.9503041 * bl) / ZN);
  out[offset] = 116 * fy - 16;
  out[offset + 1] = 500 * (fx - fy);
  out[offset + 2] = 200 * (fy - fz);
}

/** L, a, b interleaved, three floats per pixel. */
export function imageToLab(image: RgbaImage): Float32Array {
  const pixels = image.width * image.height;
  const lab = new Float32Array(pixels * 3);
  const { data } = image;
  for (let i = 0; i < pixels; i++) {
    rgbToLab(data[i * 4] ?? 0, data[i * 4 + 1] ?? 0, data[i * 4 + 2] ?? 0, lab, i * 3);
  }
  return lab;
}
