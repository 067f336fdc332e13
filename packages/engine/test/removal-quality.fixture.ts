/**
 * The yardstick for object removal on real photographs, shared by `pnpm quality`
 * (bench/removal.quality.ts) and removal-quality.test.ts: a photo's reference matte
 * (fixtures/mattes), dilated a little as a person drawing a mask would, is sent as the
 * user's mask through the engine as a job runs it, and the result is measured against
 * the original:
 *
 * - ghost: the correlation of luminance between result and original inside the object,
 *   each row's mean (inside the object) taken out first. A fill that keeps the object's
 *   structure (a silhouette, a face, a bulge in the horizon where a person stood)
 *   correlates with it; a fill copied from the surroundings scores near 0. Without the
 *   row means, a clean fill of a person standing across a horizon scores about 0.2:
 *   sky where the head was, grass where the legs were.
 * - tone: the fill's mean luminance minus that of a ring around the hole in the same
 *   rows (row by row, weighted by the hole's pixels in each row), so that a sky above
 *   and grass below do not count as a difference. Clean: within ±12 levels.
 * - texture: the mean luminance gradient inside the hole over that in the ring. A flat
 *   or blurred fill is about 0.5 or less; one copied from the surroundings about 1.
 * - outline: how much the hole's outline shows, which is what makes a silhouette seen
 *   even where the tone and texture figures are right (a flat grey figure against a
 *   dark doorway on one side and a light door on the other averages to the right tone).
 *   The luminance is blurred over 7x7 pixels, so that texture counts for little and a
 *   step in brightness for much; then the mean gradient of the blurred luminance on the
 *   outline (2 pixels each side of it) over that in the ring. A fill that continues its
 *   surroundings is about 1, each step along the outline adds to it.
 * - outside: the mean absolute difference (RGB levels) outside the area the engine may
 *   change (the mask as the engine widens it, and a little more): should be about 0.
 */
import { readFile } from "node:fs/promises";
import sharp from "sharp";
import type { GreyImage, ImageEngine, RgbaImage } from "../src/engine.ports";
import { EngineError } from "../src/engine-error";
import { decodeImage } from "../src/pixels/image-codec";
import { dilate, erode } from "../src/pixels/mask-ops";
import { loadMatte, loadPhoto } from "./real-photos.fixture";

const fixtures = new URL("./fixtures/", import.meta.url);

/** Photos whose matte is one person or a clear object: what a user would remove. */
export const REMOVAL_PHOTOS: readonly string[] = [
  "cameraman",
  "astronaut",
  "grace-hopper",
  "dog",
  "cat",
  "coffee",
  "apple",
  "motorcycle",
  "squirrel",
  "butterfly",
  "potted-plant",
  "boats",
];

export interface RemovalCase {
  name: string;
  /** The photo, possibly downscaled, as encoded bytes (PNG). */
  image: Buffer;
  original: RgbaImage;
  /** The reference object, 255 inside. */
  object: GreyImage;
  /** The user's mask: the object dilated a little (PNG bytes and raster). */
  maskBytes: Buffer;
  mask: GreyImage;
}

/** A user's margin around the object: 1 % of the picture's diagonal, at least 2 pixels. */
export function userMargin(width: number, height: number): number {
  return Math.max(2, Math.round(0.01 * Math.hypot(width, height)));
}

/** Loads a photo and its matte, downscaled so that the longer side is at most `maxSide` (no limit by default). */
export async function loadRemovalCase(name: string, maxSide = Number.POSITIVE_INFINITY): Promise<RemovalCase> {
  const [bytes, matte] = await Promise.all([loadPhoto(name), loadMatte(name)]);
  const scale = Math.min(1, maxSide / Math.max(matte.width, matte.height));
  const width = Math.round(matte.width * scale);
  const height = Math.round(matte.height * scale);
  const image = await sharp(bytes).resize(width, height, { fit: "fill" }).png().toBuffer();
  const matteBytes = Uint8Array.from(matte.data, (value) => value * 255);
  const objectData =
    scale === 1
      ? matteBytes
      : Uint8Array.from(
          await sharp(Buffer.from(matteBytes), { raw: { width: matte.width, height: matte.height, channels: 1 } })
            .resize(width, height, { fit: "fill" })
            .extractChannel(0)
            .raw()
            .toBuffer(),
          (value) => (value >= 128 ? 255 : 0),
        );
  const object = { data: objectData, width, height };
  const mask = { data: dilate(object.data, width, height, userMargin(width, height)), width, height };
  const maskBytes = await sharp(Buffer.from(mask.data), { raw: { width, height, channels: 1 } })
    .png()
    .toBuffer();
  return { name, image, original: await decodeImage(image), object, maskBytes, mask };
}

export interface RemovalOutcome {
  /** The result decoded; undefined when the engine refused. */
  result: RgbaImage | undefined;
  refusal: string | undefined;
  milliseconds: number;
}

/** "Remove the marked object" with the case's mask, through the engine, as PNG so that the codec adds nothing. */
export async function removeMarked(engine: ImageEngine, removal: RemovalCase): Promise<RemovalOutcome> {
  const started = performance.now();
  try {
    const edited = await engine.edit({
      image: removal.image,
      prompt: "Remove the marked object",
      mask: removal.maskBytes,
      format: "png",
    });
    return { result: await decodeImage(edited.image), refusal: undefined, milliseconds: performance.now() - started };
  } catch (error) {
    if (!(error instanceof EngineError)) throw error;
    return { result: undefined, refusal: error.reason, milliseconds: performance.now() - started };
  }
}

export interface RemovalScore {
  /** Share of the picture the user's mask covers. */
  masked: number;
  /** Luminance correlation of result and original inside the object; about 0 when nothing of it is left. */
  ghost: number;
  /** Fill minus ring, in luminance levels, row by row. */
  tone: number;
  /** Mean gradient inside the hole over that in the ring. */
  texture: number;
  /** Mean gradient of the 7x7-blurred luminance on the hole's outline over that in the ring; about 1 when it does not show. */
  outline: number;
  /** Mean absolute RGB difference outside what the engine may change. */
  outside: number;
}

function luma(image: RgbaImage): Float32Array {
  const out = new Float32Array(image.width * image.height);
  for (let i = 0; i < out.length; i++) {
    out[i] = 0.299 * (image.data[i * 4] ?? 0) + 0.587 * (image.data[i * 4 + 1] ?? 0) + 0.114 * (image.data[i * 4 + 2] ?? 0);
  }
  return out;
}

/**
 * The luminance inside `inside` less the mean of its row inside it: what is left is
 * the object's structure across each row (a silhouette, a face), not the scene's
 * top-to-bottom change (sky above, grass below), which a clean fill rightly keeps.
 */
function rowDetrended(values: Float32Array, inside: Uint8Array, width: number): Float32Array {
  const out = new Float32Array(values.length);
  for (let row = 0; row < values.length; row += width) {
    let sum = 0;
    let count = 0;
    for (let i = row; i < row + width; i++) {
      if (!inside[i]) continue;
      sum += values[i] ?? 0;
      count++;
    }
    const mean = count ? sum / count : 0;
    for (let i = row; i < row + width; i++) if (inside[i]) out[i] = (values[i] ?? 0) - mean;
  }
  return out;
}

function pearson(a: Float32Array, b: Float32Array, inside: Uint8Array): number {
  let n = 0;
  let sa = 0;
  let sb = 0;
  for (let i = 0; i < inside.length; i++) {
    if (!inside[i]) continue;
    n++;
    sa += a[i] ?? 0;
    sb += b[i] ?? 0;
  }
  if (n < 2) return 0;
  const ma = sa / n;
  const mb = sb / n;
  let cov = 0;
  let va = 0;
  let vb = 0;
  for (let i = 0; i < inside.length; i++) {
    if (!inside[i]) continue;
    const da = (a[i] ?? 0) - ma;
    const db = (b[i] ?? 0) - mb;
    cov += da * db;
    va += da * da;
    vb += db * db;
  }
  return va > 0 && vb > 0 ? cov / Math.sqrt(va * vb) : 0;
}

/** Mean of |dx| + |dy| of the luminance over the pixels of `region` whose right and lower neighbours are in it too. */
function meanGradient(values: Float32Array, region: Uint8Array, width: number, height: number): number {
  let sum = 0;
  let count = 0;
  for (let y = 0; y < height - 1; y++) {
    for (let x = 0; x < width - 1; x++) {
      const i = y * width + x;
      if (!region[i] || !region[i + 1] || !region[i + width]) continue;
      sum += Math.abs((values[i + 1] ?? 0) - (values[i] ?? 0)) + Math.abs((values[i + width] ?? 0) - (values[i] ?? 0));
      count++;
    }
  }
  return count === 0 ? 0 : sum / count;
}

/** The mean of each pixel's (2r+1)^2 window, clipped to the picture: a separable box. */
function boxBlur(values: Float32Array, width: number, height: number, radius: number): Float32Array {
  return boxAlong(boxAlong(values, width, height, radius, false), width, height, radius, true);
}

/** The mean of each pixel's 2r+1 neighbours along its row (or column), clipped to the picture. */
function boxAlong(values: Float32Array, width: number, height: number, radius: number, vertical: boolean): Float32Array {
  const out = new Float32Array(values.length);
  const length = vertical ? height : width;
  const stride = vertical ? width : 1;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = y * width + x;
      const at = vertical ? y : x;
      let sum = 0;
      let count = 0;
      for (let k = Math.max(0, at - radius); k <= Math.min(length - 1, at + radius); k++, count++)
        sum += values[i + (k - at) * stride] ?? 0;
      out[i] = sum / count;
    }
  }
  return out;
}

/** Mean of |dx| + |dy| (central differences) over the pixels of `region`, away from the picture's edge. */
function meanCentralGradient(values: Float32Array, region: Uint8Array, width: number, height: number): number {
  let sum = 0;
  let count = 0;
  for (let y = 1; y < height - 1; y++) {
    for (let x = 1; x < width - 1; x++) {
      const i = y * width + x;
      if (!region[i]) continue;
      sum +=
        Math.abs((values[i + 1] ?? 0) - (values[i - 1] ?? 0)) / 2 +
        Math.abs((values[i + width] ?? 0) - (values[i - width] ?? 0)) / 2;
      count++;
    }
  }
  return count === 0 ? 0 : sum / count;
}

/**
 * Scores a removal. `hole` is what the engine fills (the user's mask as the engine
 * widens it); the ring is as wide as a tenth of the object's size, at least 6 pixels.
 */
export function scoreRemoval(original: RgbaImage, result: RgbaImage, object: GreyImage, hole: GreyImage): RemovalScore {
  const { width, height } = original;
  const before = luma(original);
  const after = luma(result);
  let objectArea = 0;
  let holeArea = 0;
  for (let i = 0; i < hole.data.length; i++) {
    if (object.data[i]) objectArea++;
    if (hole.data[i]) holeArea++;
  }
  const ringWidth = Math.max(6, Math.round(0.1 * Math.sqrt(objectArea)));
  const grown = dilate(hole.data, width, height, ringWidth);
  // Two pixels between hole and ring: the seam itself is neither.
  const seam = dilate(hole.data, width, height, 2);
  const ring = grown.map((value, i) => (value && !seam[i] ? 255 : 0));

  // Tone, row by row: rows without ring pixels on them do not count.
  let weighted = 0;
  let weights = 0;
  for (let y = 0; y < height; y++) {
    let fill = 0;
    let fillCount = 0;
    let around = 0;
    let aroundCount = 0;
    for (let x = 0; x < width; x++) {
      const i = y * width + x;
      if (hole.data[i]) {
        fill += after[i] ?? 0;
        fillCount++;
      } else if (ring[i]) {
        around += after[i] ?? 0;
        aroundCount++;
      }
    }
    if (fillCount === 0 || aroundCount === 0) continue;
    weighted += fillCount * (fill / fillCount - around / aroundCount);
    weights += fillCount;
  }

  // Outside: beyond the hole and any margin the fill may add around it (a tenth of the ring's width, at least 4 pixels).
  const reach = dilate(hole.data, width, height, Math.max(4, Math.round(0.02 * Math.sqrt(objectArea)) + 2));
  let outsideSum = 0;
  let outsideCount = 0;
  for (let i = 0; i < reach.length; i++) {
    if (reach[i]) continue;
    for (let c = 0; c < 3; c++) outsideSum += Math.abs((result.data[i * 4 + c] ?? 0) - (original.data[i * 4 + c] ?? 0));
    outsideCount++;
  }

  const ringGradient = meanGradient(after, ring, width, height);
  // The outline: 2 pixels each side of the hole's edge; against the same ring, both on the blurred luminance.
  const blurred = boxBlur(after, width, height, 3);
  const inner = erode(hole.data, width, height, 2);
  const outlineBand = seam.map((value, i) => (value && !inner[i] ? 1 : 0));
  const ringBlurredGradient = meanCentralGradient(blurred, ring, width, height);
  return {
    masked: holeArea / (width * height),
    ghost: pearson(rowDetrended(after, object.data, width), rowDetrended(before, object.data, width), object.data),
    tone: weights === 0 ? 0 : weighted / weights,
    texture: ringGradient === 0 ? 0 : meanGradient(after, hole.data, width, height) / ringGradient,
    outline: ringBlurredGradient === 0 ? 0 : meanCentralGradient(blurred, outlineBand, width, height) / ringBlurredGradient,
    outside: outsideCount === 0 ? 0 : outsideSum / (3 * outsideCount),
  };
}

/**
 * A removal by instruction, as a job without a mask runs it (detector, segmenter, body
 * keypoints, fill), and the hand-checked reference masks it is measured against
 * (fixtures/objects, or a photo's matte where that is the object): the object the words
 * mean, and the neighbours the removal must leave.
 */
export interface InstructionCase {
  photo: string;
  instruction: string;
  /** `objects/NAME` or `mattes/NAME` under fixtures/. */
  object: string;
  neighbours: readonly string[];
}

export const INSTRUCTION_CASES: readonly InstructionCase[] = [
  { photo: "messi5", instruction: "remove the person", object: "objects/messi5-player", neighbours: ["objects/messi5-ball"] },
  {
    photo: "basketball",
    instruction: "remove the person on the left",
    object: "objects/basketball-left",
    neighbours: ["objects/basketball-right"],
  },
  {
    photo: "basketball",
    instruction: "remove the person on the right",
    object: "objects/basketball-right",
    neighbours: ["objects/basketball-left"],
  },
  {
    photo: "boats",
    instruction: "remove the boat on the left",
    object: "objects/boats-left",
    neighbours: ["objects/boats-front"],
  },
  {
    photo: "boats",
    instruction: "remove the boat in front",
    object: "objects/boats-front",
    neighbours: ["objects/boats-left"],
  },
  { photo: "cameraman", instruction: "remove the person", object: "mattes/cameraman", neighbours: [] },
  { photo: "astronaut", instruction: "remove the person", object: "mattes/astronaut", neighbours: [] },
];

/** A reference mask under fixtures/ (`objects/NAME` or `mattes/NAME`), 255 inside. */
export async function loadReference(name: string): Promise<GreyImage> {
  const { data, info } = await sharp(await readFile(new URL(`${name}.png`, fixtures)))
    .greyscale()
    .raw()
    .toBuffer({ resolveWithObject: true });
  return { data: data.map((value) => (value >= 128 ? 255 : 0)), width: info.width, height: info.height };
}

/** Intersection over union of two masks of the same size (non-zero is on). */
export function maskIou(a: GreyImage, b: GreyImage): number {
  let intersection = 0;
  let union = 0;
  for (let i = 0; i < a.data.length; i++) {
    const on = (a.data[i] ?? 0) > 0;
    const truth = (b.data[i] ?? 0) > 0;
    if (on && truth) intersection++;
    if (on || truth) union++;
  }
  return union === 0 ? 0 : intersection / union;
}

/** The share of `region`'s pixels that `mask` takes. */
export function shareTaken(mask: GreyImage, region: GreyImage): number {
  let all = 0;
  let taken = 0;
  for (let i = 0; i < region.data.length; i++) {
    if (!region.data[i]) continue;
    all++;
    if (mask.data[i]) taken++;
  }
  return all === 0 ? 0 : taken / all;
}

/** Mean absolute RGB change (levels) inside `region`: about 0 for a neighbour the removal left alone. */
export function changeInside(original: RgbaImage, result: RgbaImage, region: GreyImage): number {
  let sum = 0;
  let count = 0;
  for (let i = 0; i < region.data.length; i++) {
    if (!region.data[i]) continue;
    for (let c = 0; c < 3; c++) sum += Math.abs((result.data[i * 4 + c] ?? 0) - (original.data[i * 4 + c] ?? 0));
    count++;
  }
  return count === 0 ? 0 : sum / (3 * count);
}
