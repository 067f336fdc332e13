/**
 * The real photographs in fixtures/ (credits and licences in fixtures/README.md) with
 * their reference mattes (fixtures/mattes/NAME.png, white subject on black, made and
 * checked by eye as scripts/reference-mattes.py records), and the yardstick used by
 * real-photos.test.ts and `pnpm quality`: IoU of a cut-out's alpha, thresholded at
 * half, against the matte.
 */
import { readFile } from "node:fs/promises";
import sharp from "sharp";
import type { ImageEngine, RgbaImage } from "../src/engine.ports";
import { EngineError } from "../src/engine-error";

export type PhotoKind = "person" | "animal" | "object" | "vehicle" | "building" | "landscape";

export interface RealPhoto {
  name: string;
  kind: PhotoKind;
  /** What the matte keeps; undefined for a landscape, which has no single subject. */
  subject: string | undefined;
}

export const REAL_PHOTOS: readonly RealPhoto[] = [
  { name: "astronaut", kind: "person", subject: "Eileen Collins and the helmet she holds" },
  { name: "grace-hopper", kind: "person", subject: "Grace Hopper, head and shoulders, in front of a flag" },
  { name: "cameraman", kind: "person", subject: "a man with a camera on a tripod (greyscale)" },
  { name: "cat", kind: "animal", subject: "a cat's face filling the frame" },
  { name: "dog", kind: "animal", subject: "a dog filling the frame, on a blanket" },
  { name: "raccoon", kind: "animal", subject: "a raccoon among palm leaves" },
  { name: "squirrel", kind: "animal", subject: "a squirrel on a branch (not the branch)" },
  { name: "butterfly", kind: "animal", subject: "a swallowtail on a leaf, antennae included" },
  { name: "coffee", kind: "object", subject: "cup, saucer and spoon on a table" },
  { name: "apple", kind: "object", subject: "an apple with its stem" },
  { name: "dahlia", kind: "object", subject: "two dahlias on a blurred background" },
  { name: "potted-plant", kind: "object", subject: "a potted plant with a clothes peg" },
  { name: "fallen-leaf", kind: "object", subject: "a sharp maple leaf among blurred leaves" },
  { name: "motorcycle", kind: "vehicle", subject: "a motorcycle in a cluttered garage, mirrors and kickstand included" },
  { name: "boats", kind: "vehicle", subject: "rowing boats on a shore (not the plank between them)" },
  { name: "pagoda", kind: "building", subject: "a pagoda, down to where the trees in front hide it" },
  { name: "forest-path", kind: "landscape", subject: undefined },
  { name: "misty-lake", kind: "landscape", subject: undefined },
];

export const SUBJECT_PHOTOS = REAL_PHOTOS.filter((photo) => photo.subject !== undefined);

const fixtures = new URL("./fixtures/", import.meta.url);

export function loadPhoto(name: string): Promise<Buffer> {
  return readFile(new URL(`${name}.jpg`, fixtures));
}

/** The reference matte as one byte per pixel, 1 for the subject. */
export async function loadMatte(name: string): Promise<{ data: Uint8Array; width: number; height: number }> {
  const { data, info } = await sharp(await readFile(new URL(`mattes/${name}.png`, fixtures)))
    .greyscale()
    .raw()
    .toBuffer({ resolveWithObject: true });
  return { data: data.map((value) => (value >= 128 ? 1 : 0)), width: info.width, height: info.height };
}

/** Intersection over union of alpha ≥ 0.5 and the matte (both row-major, same size). */
export function alphaIou(alpha: Uint8Array, matte: Uint8Array): number {
  let intersection = 0;
  let union = 0;
  for (let i = 0; i < matte.length; i++) {
    const cut = (alpha[i] ?? 0) >= 128;
    const truth = matte[i] === 1;
    if (cut && truth) intersection++;
    if (cut || truth) union++;
  }
  return union === 0 ? 1 : intersection / union;
}

export type Verdict = "clean" | "usable" | "poor" | "failed";

export function verdictOf(iou: number): Verdict {
  if (iou >= 0.95) return "clean";
  if (iou >= 0.85) return "usable";
  if (iou >= 0.5) return "poor";
  return "failed";
}

export interface CutOut {
  /** Alpha of the result, one byte per pixel; undefined when the engine refused. */
  alpha: Uint8Array | undefined;
  /** The engine's reason when it refused. */
  refusal: string | undefined;
  milliseconds: number;
}

/** "Remove the background" through the engine, bytes to bytes, as a job runs it. */
export async function cutOut(engine: ImageEngine, photo: Buffer): Promise<CutOut> {
  const started = performance.now();
  try {
    const result = await engine.edit({ image: photo, prompt: "Remove the background" });
    const milliseconds = performance.now() - started;
    const alpha = await sharp(result.image).ensureAlpha().extractChannel(3).raw().toBuffer();
    return { alpha, refusal: undefined, milliseconds };
  } catch (error) {
    if (!(error instanceof EngineError)) throw error;
    return { alpha: undefined, refusal: error.reason, milliseconds: performance.now() - started };
  }
}

export interface Score {
  iou: number;
  verdict: Verdict;
  /** Share of the picture the cut-out kept (alpha ≥ 0.5). */
  kept: number;
}

/** A refusal scores as a failed cut-out with IoU 0. */
export function score(cut: CutOut, matte: Uint8Array | undefined): Score {
  if (!cut.alpha) return { iou: 0, verdict: "failed", kept: 0 };
  let kept = 0;
  for (const value of cut.alpha) if (value >= 128) kept++;
  const iou = matte ? alphaIou(cut.alpha, matte) : Number.NaN;
  return { iou, verdict: verdictOf(iou), kept: kept / cut.alpha.length };
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? (sorted[middle] ?? Number.NaN) : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

/**
 * The share of pixels in columns x0..x1, rows 80..470 (basketball.jpg's players, head to knee), whose first
 * channel changed by more than 24 levels between `before` and `after` (same size).
 */
export function changedInColumns(before: RgbaImage, after: RgbaImage, x0: number, x1: number): number {
  let count = 0;
  let total = 0;
  for (let y = 80; y < 470; y++) {
    for (let x = x0; x < x1; x++) {
      const i = (y * before.width + x) * 4;
      total++;
      if (Math.abs((before.data[i] ?? 0) - (after.data[i] ?? 0)) > 24) count++;
    }
  }
  return count / total;
}
