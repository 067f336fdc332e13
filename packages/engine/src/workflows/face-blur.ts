import sharp from "sharp";
import type { Box, RgbaImage } from "../engine.ports";
import { clamp } from "../pixels/mask-ops";

/**
 * Makes faces unrecognisable and leaves every other pixel as it was, bit for
 * bit. Each face's region is an ellipse around the detector's box (which runs
 * from about the brows to the chin), grown to take in the forehead, hair line
 * and ears, with a feathered rim so no hard edge shows; inside it the picture
 * is blurred (a Gaussian blur whose radius scales with the face) or
 * pixelated (blocks an eighth of the face wide).
 */
export type FaceBlurStyle = "blur" | "pixelate";

/** The region blurred for a face box: centre and radii in pixels. */
export interface FaceEllipse {
  cx: number;
  cy: number;
  rx: number;
  ry: number;
}

/** The ellipse blurred for a face box: half again as wide, 1.7 times as tall, raised to cover the forehead. */
export function faceEllipse(box: Box): FaceEllipse {
  return {
    cx: box.x + box.width / 2,
    cy: box.y + box.height * 0.4,
    rx: box.width * 0.75,
    ry: box.height * 0.85,
  };
}

/** Within this share of the radius the face is fully replaced; beyond it the blur fades out to the rim. */
const SOLID = 0.8;

/** Blur sigma per pixel of face width, at strength 1: the eyes and mouth (a tenth of the face each) are smeared well past each other. */
const SIGMA_PER_FACE_WIDTH = 0.14;
/** Pixelation blocks across the face box, at strength 1. */
const BLOCKS_PER_FACE = 8;

export async function blurFaces(image: RgbaImage, boxes: Box[], style: FaceBlurStyle, strength: number): Promise<RgbaImage> {
  const data = new Uint8Array(image.data);
  const output: RgbaImage = { data, width: image.width, height: image.height };
  for (const box of boxes) {
    const ellipse = faceEllipse(box);
    const size = Math.max(box.width, box.height);
    const replaced =
      style === "blur"
        ? await blurredRegion(output, ellipse, Math.max(2, SIGMA_PER_FACE_WIDTH * size * strength))
        : pixelatedRegion(output, ellipse, Math.max(2, size / (BLOCKS_PER_FACE / strength)));
    blendEllipse(output, replaced, ellipse);
  }
  return output;
}

interface Region {
  data: Uint8Array;
  left: number;
  top: number;
  width: number;
  height: number;
}

function ellipseBounds(
  image: RgbaImage,
  ellipse: FaceEllipse,
  margin: number,
): { left: number; top: number; width: number; height: number } {
  const left = Math.max(0, Math.floor(ellipse.cx - ellipse.rx - margin));
  const top = Math.max(0, Math.floor(ellipse.cy - ellipse.ry - margin));
  const right = Math.min(image.width, Math.ceil(ellipse.cx + ellipse.rx + margin));
  const bottom = Math.min(image.height, Math.ceil(ellipse.cy + ellipse.ry + margin));
  return { left, top, width: Math.max(1, right - left), height: Math.max(1, bottom - top) };
}

function copyRegion(image: RgbaImage, bounds: { left: number; top: number; width: number; height: number }): Uint8Array {
  const data = new Uint8Array(bounds.width * bounds.height * 4);
  for (let y = 0; y < bounds.height; y++) {
    const from = ((bounds.top + y) * image.width + bounds.left) * 4;
    data.set(image.data.subarray(from, from + bounds.width * 4), y * bounds.width * 4);
  }
  return data;
}

/** The ellipse's surroundings (three sigmas more, so the blur inside sees real neighbours), blurred. */
async function blurredRegion(image: RgbaImage, ellipse: FaceEllipse, sigma: number): Promise<Region> {
  const bounds = ellipseBounds(image, ellipse, Math.ceil(3 * sigma));
  const { data } = await sharp(copyRegion(image, bounds), { raw: { width: bounds.width, height: bounds.height, channels: 4 } })
    .blur(sigma)
    .raw()
    .toBuffer({ resolveWithObject: true });
  return { data, ...bounds };
}

/** The ellipse's bounds in blocks of `block` pixels, each the mean of its pixels. */
function pixelatedRegion(image: RgbaImage, ellipse: FaceEllipse, block: number): Region {
  const bounds = ellipseBounds(image, ellipse, 0);
  const data = copyRegion(image, bounds);
  const side = Math.max(2, Math.round(block));
  for (let by = 0; by < bounds.height; by += side) {
    for (let bx = 0; bx < bounds.width; bx += side) {
      const sums = [0, 0, 0, 0];
      let count = 0;
      for (let y = by; y < Math.min(bounds.height, by + side); y++)
        for (let x = bx; x < Math.min(bounds.width, bx + side); x++) {
          const i = (y * bounds.width + x) * 4;
          for (let c = 0; c < 4; c++) sums[c] = (sums[c] ?? 0) + (data[i + c] ?? 0);
          count++;
        }
      for (let y = by; y < Math.min(bounds.height, by + side); y++)
        for (let x = bx; x < Math.min(bounds.width, bx + side); x++) {
          const i = (y * bounds.width + x) * 4;
          for (let c = 0; c < 4; c++) data[i + c] = Math.round((sums[c] ?? 0) / count);
        }
    }
  }
  return { data, ...bounds };
}

/** Writes `region` over `output` inside the ellipse, fading over its outer rim; pixels outside the ellipse are not touched. */
function blendEllipse(output: RgbaImage, region: Region, ellipse: FaceEllipse): void {
  const { cx, cy, rx, ry } = ellipse;
  for (let y = 0; y < region.height; y++) {
    const py = region.top + y + 0.5;
    const dy = (py - cy) / ry;
    for (let x = 0; x < region.width; x++) {
      const px = region.left + x + 0.5;
      const dx = (px - cx) / rx;
      const r = Math.sqrt(dx * dx + dy * dy);
      if (r >= 1) continue;
      const t = clamp((1 - r) / (1 - SOLID), 0, 1);
      // Smoothstep: no visible ring where the fade starts or ends.
      const weight = t * t * (3 - 2 * t);
      const from = (y * region.width + x) * 4;
      const to = ((region.top + y) * output.width + region.left + x) * 4;
      for (let c = 0; c < 4; c++) {
        const original = output.data[to + c] ?? 0;
        output.data[to + c] = Math.round(original + ((region.data[from + c] ?? 0) - original) * weight);
      }
    }
  }
}
