import { imageToLab } from "./colour-space";
import { readTerm, selectDetections, type TargetQuery } from "./detection-vocabulary";
import type {
  Box,
  Detection,
  GreyImage,
  Inpainter,
  ObjectDetector,
  ObjectRemovalTask,
  ObjectRemover,
  RgbaImage,
  SubjectSegmenter,
  WorkContext,
} from "./engine.ports";
import { EngineError } from "./engine-error";
import { resizeRgba } from "./image-codec";
import { coverage, dilate, erode, labelComponents } from "./mask-ops";
import type { Rgb } from "./prompt-text";
import { seededRandom } from "./seeded-random";
import { throwIfCancelled } from "./work-checkpoint";

/**
 * The built-in object remover: a mask (given, or built from detections of the
 * named things), widened a little, then filled by the inpainter.
 */
export interface DetectAndInpaintOptions {
  /** Masks covering more than this fraction of the image are refused: too little is left to fill from. */
  maxMaskCoverage?: number;
  /** A learned model that finds a detected object's own shape inside its box; without one, the box is refined by colour. */
  segmenter?: SubjectSegmenter;
}

export class DetectAndInpaintRemover implements ObjectRemover {
  private readonly maxMaskCoverage: number;

  constructor(
    private readonly detector: ObjectDetector,
    private readonly inpainter: Inpainter,
    options: DetectAndInpaintOptions = {},
  ) {
    this.maxMaskCoverage = options.maxMaskCoverage ?? 0.7;
  }

  async removeObjects(task: ObjectRemovalTask, context: WorkContext): Promise<RgbaImage> {
    const { image } = task;
    const mask = task.mask ? widenUserMask(task.mask) : await this.maskFromDetections(task, context);
    const covered = coverage(mask.data);
    if (covered === 0) throw new EngineError("invalid_mask", "The mask marks nothing to remove (white marks the area).");
    if (covered > this.maxMaskCoverage) {
      throw new EngineError(
        "invalid_mask",
        `The area to remove covers ${Math.round(covered * 100)}% of the image; at most ${Math.round(this.maxMaskCoverage * 100)}% can be filled from the rest.`,
      );
    }
    throwIfCancelled(context.signal);
    return this.inpainter.inpaint(image, mask, context);
  }

  private async maskFromDetections(task: ObjectRemovalTask, context: WorkContext): Promise<GreyImage> {
    if (task.terms.length === 0) {
      throw new EngineError("target_not_detectable", 'Say what to remove (for example "remove the person") or send a mask.');
    }
    const queries: TargetQuery[] = [];
    for (const term of task.terms) {
      const reading = readTerm(term);
      if (reading.kind === "needs_mask") {
        throw new EngineError(
          "target_not_detectable",
          `"${term}" cannot be found automatically; send a mask that marks it (white on black).`,
        );
      }
      if (reading.kind === "unknown") {
        throw new EngineError(
          "target_not_detectable",
          `"${term}" is not something the detector knows; send a mask, or name one of: ${this.detector.labels.join(", ")}.`,
        );
      }
      if (reading.kind === "unsupported") {
        // Removing another instance than the one meant is worse than removing nothing: say what was not understood.
        throw new EngineError(
          "unsupported_instruction",
          `In "${term}", ${reading.reason}. Say which one by place ("on the left", "top right", "second from the left"), size ("the largest", "in the background"), colour ("the red car"), or send a mask.`,
        );
      }
      queries.push(reading.query);
    }
    const detections = await this.detector.detect(task.image, context);
    const { image } = task;
    const meanColour = (box: Box) => meanColourOf(image, box);
    const chosen: Detection[] = [];
    for (const query of queries) {
      const selection = selectDetections(query, detections, { width: image.width, height: image.height, meanColour });
      if (selection.kind === "not_found") throw new EngineError("nothing_detected", selection.message);
      if (selection.kind === "ambiguous") throw new EngineError("unsupported_instruction", selection.message);
      for (const detection of selection.detections) if (!chosen.includes(detection)) chosen.push(detection);
    }
    const mask = new Uint8Array(image.width * image.height);
    for (const detection of chosen) {
      throwIfCancelled(context.signal);
      const objectMask = await refineWithinBox(image, detection.box);
      for (let i = 0; i < mask.length; i++) if (objectMask[i]) mask[i] = 255;
    }
    return { data: mask, width: image.width, height: image.height };
  }
}

/** "Dilate a little": a few pixels, scaled with the image, to take in the edge and its anti-aliasing. */
export function widenUserMask(mask: GreyImage): GreyImage {
  const radius = Math.max(2, Math.round(0.0025 * Math.hypot(mask.width, mask.height)));
  return { data: dilate(mask.data, mask.width, mask.height, radius), width: mask.width, height: mask.height };
}

function meanColourOf(image: RgbaImage, box: Box): Rgb {
  // The middle half of the box: mostly the object, little background.
  const x0 = Math.floor(box.x + box.width / 4);
  const y0 = Math.floor(box.y + box.height / 4);
  const x1 = Math.ceil(box.x + (3 * box.width) / 4);
  const y1 = Math.ceil(box.y + (3 * box.height) / 4);
  const sum = [0, 0, 0];
  let count = 0;
  for (let y = Math.max(0, y0); y < Math.min(image.height, y1); y++) {
    for (let x = Math.max(0, x0); x < Math.min(image.width, x1); x++) {
      for (let c = 0; c < 3; c++) sum[c] = (sum[c] ?? 0) + (image.data[(y * image.width + x) * 4 + c] ?? 0);
      count++;
    }
  }
  return count === 0 ? [0, 0, 0] : [(sum[0] ?? 0) / count, (sum[1] ?? 0) / count, (sum[2] ?? 0) / count];
}

function grow(box: Box, fraction: number, width: number, height: number): { x0: number; y0: number; x1: number; y1: number } {
  const dx = box.width * fraction;
  const dy = box.height * fraction;
  return {
    x0: Math.max(0, Math.floor(box.x - dx)),
    y0: Math.max(0, Math.floor(box.y - dy)),
    x1: Math.min(width, Math.ceil(box.x + box.width + dx)),
    y1: Math.min(height, Math.ceil(box.y + box.height + dy)),
  };
}

const REFINE_SIZE = 256;

/**
 * A full-image mask for one detection. A detector box holds the object and a
 * lot of background; filling all of it makes the inpainting invent more than
 * needed. So: model the colours of a ring around the box (k-means in Lab),
 * keep the pixels inside the box that match none of them, close and fill that
 * shape, and widen it by a margin. When the shape is implausible (almost
 * nothing, or the whole box: the object looks like its surroundings) the
 * widened box itself is the mask.
 */
export async function refineWithinBox(image: RgbaImage, box: Box): Promise<Uint8Array> {
  const inner = grow(box, 0.06, image.width, image.height);
  const outer = grow(box, 0.3, image.width, image.height);
  const cropWidth = outer.x1 - outer.x0;
  const cropHeight = outer.y1 - outer.y0;
  const scale = Math.min(1, REFINE_SIZE / Math.max(cropWidth, cropHeight));
  const crop = await cropAndScale(image, outer, scale);
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
  let shape: Uint8Array | undefined;
  if (ring.length >= 32) {
    const centroids = kMeans(lab, ring, 6);
    const distance = (i: number) => nearestCentroid(lab, i, centroids).distance;
    const ringDistances = ring.map(distance).sort((a, b) => a - b);
    const threshold = Math.max(12, 1.5 * (ringDistances[Math.floor(ringDistances.length * 0.9)] ?? 0));
    const candidate = new Uint8Array(width * height);
    for (let y = iy0; y < iy1; y++)
      for (let x = ix0; x < ix1; x++) if (distance(y * width + x) > threshold) candidate[y * width + x] = 255;
    shape = plausibleShape(candidate, width, height, { ix0, iy0, ix1, iy1 });
  }

  const mask = new Uint8Array(image.width * image.height);
  const margin = Math.max(3, Math.round(0.03 * Math.hypot(box.width, box.height)));
  if (!shape) {
    const widened = grow(box, 0.06, image.width, image.height);
    for (let y = widened.y0; y < widened.y1; y++) mask.fill(255, y * image.width + widened.x0, y * image.width + widened.x1);
    return mask;
  }
  for (let y = outer.y0; y < outer.y1; y++) {
    const cy = Math.min(height - 1, Math.floor((y - outer.y0) * scale));
    for (let x = outer.x0; x < outer.x1; x++) {
      const cx = Math.min(width - 1, Math.floor((x - outer.x0) * scale));
      if (shape[cy * width + cx]) mask[y * image.width + x] = 255;
    }
  }
  return dilate(mask, image.width, image.height, margin);
}

async function cropAndScale(
  image: RgbaImage,
  area: { x0: number; y0: number; x1: number; y1: number },
  scale: number,
): Promise<RgbaImage> {
  const width = area.x1 - area.x0;
  const height = area.y1 - area.y0;
  const data = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++) {
    const start = ((area.y0 + y) * image.width + area.x0) * 4;
    data.set(image.data.subarray(start, start + width * 4), y * width * 4);
  }
  const crop = { data, width, height };
  if (scale >= 1) return crop;
  return resizeRgba(crop, Math.max(1, Math.round(width * scale)), Math.max(1, Math.round(height * scale)));
}

/** Closes gaps, keeps the parts that reach the middle of the box, fills holes; undefined when implausible. */
function plausibleShape(
  candidate: Uint8Array,
  width: number,
  height: number,
  inner: { ix0: number; iy0: number; ix1: number; iy1: number },
): Uint8Array | undefined {
  const closed = erode(dilate(candidate, width, height, 2), width, height, 2);
  const parts = labelComponents(width, height, (i) => closed[i] === 255);
  const central = new Set<number>();
  const midX0 = inner.ix0 + (inner.ix1 - inner.ix0) / 4;
  const midX1 = inner.ix1 - (inner.ix1 - inner.ix0) / 4;
  const midY0 = inner.iy0 + (inner.iy1 - inner.iy0) / 4;
  const midY1 = inner.iy1 - (inner.iy1 - inner.iy0) / 4;
  for (let y = Math.floor(midY0); y < midY1; y++) {
    for (let x = Math.floor(midX0); x < midX1; x++) {
      const label = parts.labels[y * width + x] ?? 0;
      if (label) central.add(label);
    }
  }
  const shape = new Uint8Array(width * height);
  for (let i = 0; i < shape.length; i++) if (central.has(parts.labels[i] ?? 0)) shape[i] = 255;
  // Holes: background-like pockets the shape encloses belong to the object.
  const gaps = labelComponents(width, height, (i) => shape[i] === 0);
  for (let i = 0; i < shape.length; i++) if (!gaps.touchesBorder[gaps.labels[i] ?? 0]) shape[i] = 255;
  const boxArea = (inner.ix1 - inner.ix0) * (inner.iy1 - inner.iy0);
  let area = 0;
  for (const value of shape) if (value) area++;
  if (boxArea === 0 || area < 0.15 * boxArea || area > 0.92 * boxArea) return undefined;
  return shape;
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
