import type { Box, RgbaImage, SubjectSegmenter, WorkContext } from "../engine.ports";
import { isEngineError } from "../engine-error";
import { imageToLab } from "../pixels/colour-space";
import { resizeGrey, resizeRgba } from "../pixels/image-codec";
import { dilate, erode, labelComponents } from "../pixels/mask-ops";
import { seededRandom } from "../pixels/seeded-random";
import { throwIfCancelled } from "../work-checkpoint";

/**
 * A detected object's own shape inside (and a little around) its detector box,
 * so that object removal fills the object and not the whole box with whatever
 * else stands in it. Two ways to find it: a learned salient-object model run
 * on a crop around the box (the object is what the crop is about), or, without
 * one, the colours inside the box that its surroundings do not have.
 */

/** A rectangle of the image in pixels; x1 and y1 exclusive. */
export interface Area {
  x0: number;
  y0: number;
  x1: number;
  y1: number;
}

/** A mask over an area of the image, held at a reduced scale (255 = on). */
export interface LocalMask {
  area: Area;
  /** Mask pixels per image pixel, at most 1. */
  scale: number;
  width: number;
  height: number;
  data: Uint8Array;
}

/** Whether the mask is on at image pixel (x, y); false outside its area. */
export function maskAt(mask: LocalMask, x: number, y: number): boolean {
  if (x < mask.area.x0 || y < mask.area.y0 || x >= mask.area.x1 || y >= mask.area.y1) return false;
  const mx = Math.min(mask.width - 1, Math.floor((x - mask.area.x0) * mask.scale));
  const my = Math.min(mask.height - 1, Math.floor((y - mask.area.y0) * mask.scale));
  return mask.data[my * mask.width + mx] === 255;
}

/**
 * What a shape is chosen from: the pixels that may belong to the object
 * (the model's matte, or colours unlike the surroundings) in a crop around
 * its box, and how to tell a plausible shape from a failure.
 */
export interface ShapeCandidate {
  pixels: LocalMask;
  /** The detection box in the candidate's pixels. */
  box: Area;
  /** The source of the pixels, for the plausibility rule. */
  source: "model" | "colour";
}

/** The object's shape (255 = on) in the candidate's pixels, or undefined when none is plausible. */
export type Shape = LocalMask;

export function grow(box: Box, fraction: number, width: number, height: number): Area {
  const dx = box.width * fraction;
  const dy = box.height * fraction;
  return {
    x0: Math.max(0, Math.floor(box.x - dx)),
    y0: Math.max(0, Math.floor(box.y - dy)),
    x1: Math.min(width, Math.ceil(box.x + box.width + dx)),
    y1: Math.min(height, Math.ceil(box.y + box.height + dy)),
  };
}

/** The crop of the image an area covers, scaled so its long side is at most `maxSide`. */
async function cropAndScale(image: RgbaImage, area: Area, maxSide: number): Promise<{ crop: RgbaImage; scale: number }> {
  const width = area.x1 - area.x0;
  const height = area.y1 - area.y0;
  const data = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++) {
    const start = ((area.y0 + y) * image.width + area.x0) * 4;
    data.set(image.data.subarray(start, start + width * 4), y * width * 4);
  }
  const scale = Math.min(1, maxSide / Math.max(width, height));
  const crop = { data, width, height };
  if (scale >= 1) return { crop, scale: 1 };
  const scaled = await resizeRgba(crop, Math.max(1, Math.round(width * scale)), Math.max(1, Math.round(height * scale)));
  // The scale actually used, per axis alike (rounding differs by under a pixel).
  return { crop: scaled, scale: scaled.width / width };
}

function boxInCrop(box: Box, area: Area, scale: number, width: number, height: number): Area {
  return {
    x0: Math.max(0, Math.floor((box.x - area.x0) * scale)),
    y0: Math.max(0, Math.floor((box.y - area.y0) * scale)),
    x1: Math.min(width, Math.ceil((box.x + box.width - area.x0) * scale)),
    y1: Math.min(height, Math.ceil((box.y + box.height - area.y0) * scale)),
  };
}

/** The learned model's own input is about this size: larger crops would only be scaled down by it. */
const SEGMENT_SIZE = 1024;
/** How far around the box the model looks: detector boxes often cut off hair, a held bag or a raised hand. */
const SEGMENT_MARGIN = 0.35;
/** The wider look when the shape runs into the edge of the first crop. */
const SEGMENT_WIDE_MARGIN = 0.8;
/** Matte values from here on count as the object: removal errs towards taking a soft edge along. */
const MATTE_THRESHOLD = 96;

/**
 * The learned model's view of a crop around the box, and the shape it gives
 * the object. When that shape runs into an edge of the crop that is not the
 * picture's edge (a held helmet the box left out), the crop is widened once.
 */
export async function segmentedShape(
  image: RgbaImage,
  box: Box,
  segmenter: SubjectSegmenter,
  context: WorkContext,
): Promise<{ candidate: ShapeCandidate; shape: Shape } | undefined> {
  const first = await segmentedCandidate(image, box, SEGMENT_MARGIN, segmenter, context);
  const shape = first && selectShape(first);
  if (first && shape && !runsIntoCropEdge(shape, first.pixels.area, image)) return { candidate: first, shape };
  // Cut off by the crop, or nothing found in it: a crop that fills up with several like objects
  // (boats side by side) has no single subject, while the wider view often has one.
  throwIfCancelled(context.signal);
  const wide = await segmentedCandidate(image, box, SEGMENT_WIDE_MARGIN, segmenter, context);
  const wideShape = wide && selectShape(wide);
  if (wide && wideShape) return { candidate: wide, shape: wideShape };
  return first && shape ? { candidate: first, shape } : undefined;
}

async function segmentedCandidate(
  image: RgbaImage,
  box: Box,
  margin: number,
  segmenter: SubjectSegmenter,
  context: WorkContext,
): Promise<ShapeCandidate | undefined> {
  const area = grow(box, margin, image.width, image.height);
  const { crop, scale } = await cropAndScale(image, area, SEGMENT_SIZE);
  let matte: Uint8Array;
  try {
    const answer = await segmenter.segmentSubject(crop, context);
    // The port promises the input's size; a hosted model that answers at its own size is scaled rather than misread.
    const sized =
      answer.width === crop.width && answer.height === crop.height ? answer : await resizeGrey(answer, crop.width, crop.height);
    matte = sized.data;
  } catch (error) {
    // "No subject in this crop" is an answer here, not a failure: the caller falls back.
    if (isEngineError(error) && error.reason === "nothing_detected") return undefined;
    throw error;
  }
  const data = new Uint8Array(crop.width * crop.height);
  for (let i = 0; i < data.length; i++) if ((matte[i] ?? 0) >= MATTE_THRESHOLD) data[i] = 255;
  return {
    pixels: { area, scale, width: crop.width, height: crop.height, data },
    box: boxInCrop(box, area, scale, crop.width, crop.height),
    source: "model",
  };
}

/** Whether a shape touches an edge of its crop over more than a few pixels where the crop is not at the picture's edge. */
function runsIntoCropEdge(shape: Shape, area: Area, image: RgbaImage): boolean {
  const { width, height, data } = shape;
  let touching = 0;
  const count = (x: number, y: number) => {
    if (data[y * width + x]) touching++;
  };
  if (area.x0 > 0) for (let y = 0; y < height; y++) count(0, y);
  if (area.x1 < image.width) for (let y = 0; y < height; y++) count(width - 1, y);
  if (area.y0 > 0) for (let x = 0; x < width; x++) count(x, 0);
  if (area.y1 < image.height) for (let x = 0; x < width; x++) count(x, height - 1);
  return touching > Math.max(4, 0.02 * (width + height));
}

const COLOUR_SIZE = 256;

/**
 * Without a learned model: model the colours of a ring around the box
 * (k-means in Lab), keep the pixels inside the box that match none of them,
 * closed so the object's own texture does not break it apart. Undefined when
 * the ring is too thin to learn from.
 */
export async function colourCandidate(image: RgbaImage, box: Box): Promise<ShapeCandidate | undefined> {
  const inner = grow(box, 0.06, image.width, image.height);
  const outer = grow(box, 0.3, image.width, image.height);
  const { crop, scale } = await cropAndScale(image, outer, COLOUR_SIZE);
  const { width, height } = crop;
  const toCrop = (value: number, origin: number) => Math.round((value - origin) * scale);
  const ix0 = toCrop(inner.x0, outer.x0);
  const iy0 = toCrop(inner.y0, outer.y0);
  const ix1 = Math.min(width, toCrop(inner.x1, outer.x0));
  const iy1 = Math.min(height, toCrop(inner.y1, outer.y0));
  const inside = (x: number, y: number) => x >= ix0 && x < ix1 && y >= iy0 && y < iy1;

  const lab = imageToLab(crop);
  const ring: number[] = [];
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) if (!inside(x, y)) ring.push(y * width + x);
  if (ring.length < 32) return undefined;
  const centroids = kMeans(lab, ring, 6);
  const distance = (i: number) => nearestCentroid(lab, i, centroids).distance;
  const ringDistances = ring.map(distance).sort((a, b) => a - b);
  const threshold = Math.max(12, 1.5 * (ringDistances[Math.floor(ringDistances.length * 0.9)] ?? 0));
  const candidate = new Uint8Array(width * height);
  for (let y = iy0; y < iy1; y++)
    for (let x = ix0; x < ix1; x++) if (distance(y * width + x) > threshold) candidate[y * width + x] = 255;
  const closed = erode(dilate(candidate, width, height, 2), width, height, 2);
  return {
    pixels: { area: outer, scale, width, height, data: closed },
    box: { x0: ix0, y0: iy0, x1: ix1, y1: iy1 },
    source: "colour",
  };
}

/**
 * The object's shape among the candidate pixels: the connected parts that
 * reach the middle of the box (the target; a neighbour standing in a corner of
 * the box is another component), with small enclosed pockets filled (a logo
 * the model found less salient than the shirt). Pixels for which `protect`
 * holds are another object's and never part of the shape. Undefined when the
 * result is implausible: almost nothing, or, for colours, the whole box (the
 * object looks like its surroundings), or, for the model, the whole crop.
 */
export function selectShape(candidate: ShapeCandidate, protect?: Uint8Array): Shape | undefined {
  const { pixels, box } = candidate;
  const { width, height, data } = pixels;
  const allowed = (i: number) => data[i] === 255 && !protect?.[i];
  const parts = labelComponents(width, height, allowed);
  const boxWidth = box.x1 - box.x0;
  const boxHeight = box.y1 - box.y0;
  const boxArea = boxWidth * boxHeight;
  if (boxArea <= 0) return undefined;
  // The core: the middle half of the box each way.
  const core: Area = {
    x0: Math.floor(box.x0 + boxWidth / 4),
    y0: Math.floor(box.y0 + boxHeight / 4),
    x1: Math.ceil(box.x1 - boxWidth / 4),
    y1: Math.ceil(box.y1 - boxHeight / 4),
  };
  const inCore = new Map<number, number>();
  for (let y = core.y0; y < core.y1; y++) {
    for (let x = core.x0; x < core.x1; x++) {
      const label = parts.labels[y * width + x] ?? 0;
      if (label) inCore.set(label, (inCore.get(label) ?? 0) + 1);
    }
  }
  const coreArea = (core.x1 - core.x0) * (core.y1 - core.y0);
  let kept = new Set([...inCore].filter(([, count]) => count >= Math.max(4, 0.02 * coreArea)).map(([label]) => label));
  if (kept.size === 0) {
    // A ring or an arch leaves the middle of its box empty: take the largest part that lies mostly in the box.
    const inBox = new Map<number, number>();
    for (let y = box.y0; y < box.y1; y++) {
      for (let x = box.x0; x < box.x1; x++) {
        const label = parts.labels[y * width + x] ?? 0;
        if (label) inBox.set(label, (inBox.get(label) ?? 0) + 1);
      }
    }
    const best = [...inBox]
      .filter(([label, count]) => count >= 0.5 * (parts.sizes[label] ?? 0))
      .sort((a, b) => (parts.sizes[b[0]] ?? 0) - (parts.sizes[a[0]] ?? 0))[0];
    kept = new Set(best ? [best[0]] : []);
  }
  const shape = new Uint8Array(width * height);
  let area = 0;
  for (let i = 0; i < shape.length; i++) {
    if (kept.has(parts.labels[i] ?? 0)) {
      shape[i] = 255;
      area++;
    }
  }
  // Pockets the shape encloses, up to a sixth of its size, belong to it; larger ones are background seen through it.
  const gaps = labelComponents(width, height, (i) => shape[i] === 0);
  const pocketLimit = area / 6;
  for (let i = 0; i < shape.length; i++) {
    const gap = gaps.labels[i] ?? 0;
    if (gap && !gaps.touchesBorder[gap] && (gaps.sizes[gap] ?? 0) <= pocketLimit && !protect?.[i]) shape[i] = 255;
  }
  let inBoxArea = 0;
  let total = 0;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      if (!shape[y * width + x]) continue;
      total++;
      if (x >= box.x0 && x < box.x1 && y >= box.y0 && y < box.y1) inBoxArea++;
    }
  }
  const plausible =
    candidate.source === "model"
      ? inBoxArea >= 0.05 * boxArea && total <= 0.97 * width * height
      : total >= 0.15 * boxArea && total <= 0.92 * boxArea;
  return plausible ? { ...pixels, data: shape } : undefined;
}

/** A few rounds of Lloyd's k-means on Lab samples, seeded deterministically. */
function kMeans(lab: Float32Array, samples: number[], k: number): Float32Array {
  const random = seededRandom(7);
  const centroids = new Float32Array(k * 3);
  for (let j = 0; j < k; j++) {
    const sample = samples[Math.floor(random() * samples.length)] ?? 0;
    for (let c = 0; c < 3; c++) centroids[j * 3 + c] = lab[sample * 3 + c] ?? 0;
  }
  const sums = new Float64Array(k * 3);
  const counts = new Float64Array(k);
  for (let round = 0; round < 8; round++) {
    sums.fill(0);
    counts.fill(0);
    for (const sample of samples) {
      const j = nearestCentroid(lab, sample, centroids).index;
      counts[j] = (counts[j] ?? 0) + 1;
      for (let c = 0; c < 3; c++) sums[j * 3 + c] = (sums[j * 3 + c] ?? 0) + (lab[sample * 3 + c] ?? 0);
    }
    for (let j = 0; j < k; j++) {
      const count = counts[j] ?? 0;
      if (count === 0) continue;
      for (let c = 0; c < 3; c++) centroids[j * 3 + c] = (sums[j * 3 + c] ?? 0) / count;
    }
  }
  return centroids;
}

/** The nearest centroid to a pixel's Lab colour and the (Euclidean) distance to it. */
function nearestCentroid(lab: Float32Array, index: number, centroids: Float32Array): { index: number; distance: number } {
  let best = 0;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (let j = 0; j < centroids.length / 3; j++) {
    const dl = (lab[index * 3] ?? 0) - (centroids[j * 3] ?? 0);
    const da = (lab[index * 3 + 1] ?? 0) - (centroids[j * 3 + 1] ?? 0);
    const db = (lab[index * 3 + 2] ?? 0) - (centroids[j * 3 + 2] ?? 0);
    const distance = dl * dl + da * da + db * db;
    if (distance < bestDistance) {
      bestDistance = distance;
      best = j;
    }
  }
  return { index: best, distance: Math.sqrt(bestDistance) };
}
