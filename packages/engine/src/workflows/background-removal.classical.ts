import type { BackgroundRemover, RgbaImage, WorkContext } from "../engine.ports";
import { EngineError } from "../engine-error";
import { BUILT_IN_CATALOG } from "../models/model-catalog";
import { imageToLab } from "../pixels/colour-space";
import { resizeRgba } from "../pixels/image-codec";
import { boxBlur, copyBytes, labelComponents } from "../pixels/mask-ops";
import { createCheckpoint } from "../work-checkpoint";
import { cutOut, matteFromSegmentation } from "./alpha-matting";
import {
  type BackgroundModel,
  type ForegroundAnalysis,
  judgePlausibility,
  type PlausibilityVerdict,
} from "./background-removal.plausibility";

/**
 * A segmenter for product-style photos: an object on a plain or smoothly
 * varying background, with no model.
 *
 * 1. At a working resolution (long side `workingSize`), convert to CIELAB.
 * 2. Model the background from the image border: a quadratic surface per Lab
 *    channel (a gradient or a vignette is still "one background"), fitted by
 *    trimmed least squares so that an object touching the border does not
 *    drag the fit. The spread of the border around the fit gives the noise level.
 * 3. Markers: background = pixels close to the model and connected to the
 *    border, plus large enclosed regions that match the model (the hole in a
 *    ring); foreground = pixels far from the model.
 * 4. Marker-controlled watershed on the Lab gradient decides the pixels in
 *    between, so the boundary falls on the strongest edge.
 * 5. `alpha-matting.ts` makes the edge soft at full resolution and removes the
 *    background colour bleeding into edge pixels.
 *
 * Before step 5 the result is judged (`background-removal.plausibility.ts`):
 * a picture that is not product-style is refused with `model_unavailable`
 * rather than answered with a wrong cut-out.
 */
export interface ClassicalSegmenterOptions {
  /** Long side of the working resolution; the mask is upsampled from it. */
  workingSize?: number;
  /**
   * false: answer every picture, plausible or not, as before the check existed.
   * Only for measuring the check itself (`pnpm quality`); default true.
   */
  plausibilityCheck?: boolean;
}

export interface Segmentation {
  /** The image at working resolution. */
  work: RgbaImage;
  /** 255 = foreground, 0 = background, at working resolution. */
  mask: Uint8Array;
}

const DEFAULT_WORKING_SIZE = 800;

export class ClassicalBackgroundRemover implements BackgroundRemover {
  private readonly workingSize: number;
  private readonly plausibilityCheck: boolean;

  constructor(options: ClassicalSegmenterOptions = {}) {
    this.workingSize = options.workingSize ?? DEFAULT_WORKING_SIZE;
    this.plausibilityCheck = options.plausibilityCheck ?? true;
  }

  async removeBackground(image: RgbaImage, context: WorkContext): Promise<RgbaImage> {
    const checkpoint = createCheckpoint(context.signal);
    const { work, mask } = await this.segment(image, context);
    const { alpha, colours } = await matteFromSegmentation(image, work, mask, checkpoint);
    return cutOut(image, alpha, colours, checkpoint);
  }

  /** The plausibility check's verdict on a picture, without cutting it out (for measuring the check). */
  async assess(image: RgbaImage): Promise<PlausibilityVerdict> {
    const work = await toWorkingResolution(image, this.workingSize);
    return judgePlausibility(analyseForeground(work), work.width, work.height);
  }

  /**
   * The binary segmentation at working resolution. Throws `nothing_detected`
   * when nothing stands out, and `model_unavailable` when the result fails
   * the plausibility check.
   */
  async segment(image: RgbaImage, context: WorkContext): Promise<Segmentation> {
    const checkpoint = createCheckpoint(context.signal);
    const work = await toWorkingResolution(image, this.workingSize);
    await checkpoint();
    const analysis = analyseForeground(work);
    await checkpoint();
    const { mask } = analysis;
    let foreground = 0;
    for (let i = 0; i < mask.length; i++) if (mask[i] === 255) foreground++;
    if (foreground < mask.length * 0.001) {
      throw new EngineError("nothing_detected", "No object stands out from the background: the image looks empty.");
    }
    if (this.plausibilityCheck) {
      const verdict = judgePlausibility(analysis, work.width, work.height);
      if (!verdict.plausible) throw needsModel(verdict);
    }
    return { work, mask };
  }
}

function needsModel(verdict: PlausibilityVerdict): EngineError {
  const model = BUILT_IN_CATALOG.defaults.background;
  const reasons = verdict.broken.map((bound) => bound.meaning).join("; ");
  return new EngineError(
    "model_unavailable",
    `This picture needs a learned background model, which is not installed. Without one, only product-style pictures ` +
      `(an object on a plain or smoothly lit backdrop) are cut out, and here ${reasons}. ` +
      `An operator installs the model with \`pnpm retouch models pull ${model}\`.`,
  );
}

export async function toWorkingResolution(image: RgbaImage, maxSide: number): Promise<RgbaImage> {
  const scale = maxSide / Math.max(image.width, image.height);
  if (scale >= 1) return image;
  return resizeRgba(image, Math.max(1, Math.round(image.width * scale)), Math.max(1, Math.round(image.height * scale)));
}

/** Steps 1 to 4 on an image already at working resolution, keeping what they measured. */
export function analyseForeground(work: RgbaImage): ForegroundAnalysis {
  const { width, height } = work;
  const lab = imageToLab(work);
  const model = fitBackgroundModel(lab, width, height);
  const distance = model.distances(lab);
  // Thresholds in delta E, scaled by the noise measured on the border.
  const near = Math.min(18, Math.max(5, 2.5 * model.noise + 3));
  const far = Math.max(2.2 * near, 20);
  const markers = placeMarkers(work, distance, near, far);
  const gradient = labGradient(lab, width, height);
  const mask = watershed(markers, gradient, width, height);
  return { mask, lab, background: model, borderBand: model.borderBand, near, far };
}

const BASIS_SIZE = 6;

function basis(u: number, v: number, out: Float64Array): void {
  out[0] = 1;
  out[1] = u;
  out[2] = v;
  out[3] = u * u;
  out[4] = u * v;
  out[5] = v * v;
}

/** Quadratic surface per Lab channel, fitted to the border with outliers trimmed. */
function fitBackgroundModel(lab: Float32Array, width: number, height: number): BackgroundModel {
  const ring = Math.max(2, Math.round(Math.min(width, height) * 0.02));
  const samples: number[] = [];
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      if (x < ring || y < ring || x >= width - ring || y >= height - ring) samples.push(y * width + x);
    }
  }
  const toU = (x: number) => (width > 1 ? (2 * x) / (width - 1) - 1 : 0);
  const toV = (y: number) => (height > 1 ? (2 * y) / (height - 1) - 1 : 0);
  let inliers = samples;
  let coefficients = solveSurface(lab, inliers, width, toU, toV);
  let noise = 0;
  const phi = new Float64Array(BASIS_SIZE);
  for (let round = 0; round < 4; round++) {
    const residuals = samples.map((index) => {
      const x = index % width;
      basis(toU(x), toV((index - x) / width), phi);
      let sum = 0;
      for (let c = 0; c < 3; c++) {
        let fit = 0;
        for (let k = 0; k < BASIS_SIZE; k++) fit += (coefficients[c * BASIS_SIZE + k] ?? 0) * (phi[k] ?? 0);
        const diff = (lab[index * 3 + c] ?? 0) - fit;
        sum += diff * diff;
      }
      return Math.sqrt(sum);
    });
    const sorted = [...residuals].sort((a, b) => a - b);
    // Median of the better half, scaled to a standard deviation: the border
    // may be up to half object without moving it.
    const median = sorted[Math.floor(sorted.length * 0.25)] ?? 0;
    noise = 1.4826 * median;
    const limit = Math.max(3 * noise, 3);
    const kept = samples.filter((_, k) => (residuals[k] ?? 0) <= limit);
    if (kept.length < BASIS_SIZE * 4) break;
    inliers = kept;
    coefficients = solveSurface(lab, inliers, width, toU, toV);
  }
  const predict = (x: number, y: number, out: Float32Array) => {
    basis(toU(x), toV(y), phi);
    for (let c = 0; c < 3; c++) {
      let fit = 0;
      for (let k = 0; k < BASIS_SIZE; k++) fit += (coefficients[c * BASIS_SIZE + k] ?? 0) * (phi[k] ?? 0);
      out[c] = fit;
    }
  };
  return {
    noise,
    borderBand: ring,
    distances(image) {
      const distance = new Float32Array(width * height);
      const predicted = new Float32Array(3);
      for (let y = 0; y < height; y++) {
        for (let x = 0; x < width; x++) {
          const i = y * width + x;
          predict(x, y, predicted);
          const dl = (image[i * 3] ?? 0) - (predicted[0] ?? 0);
          const da = (image[i * 3 + 1] ?? 0) - (predicted[1] ?? 0);
          const db = (image[i * 3 + 2] ?? 0) - (predicted[2] ?? 0);
          distance[i] = Math.sqrt(dl * dl + da * da + db * db);
        }
      }
      return distance;
    },
  };
}

/** Least squares by the normal equations (6 unknowns per channel), with a little ridge for stability. */
function solveSurface(
  lab: Float32Array,
  indices: number[],
  width: number,
  toU: (x: number) => number,
  toV: (y: number) => number,
): Float64Array {
  const normal = new Float64Array(BASIS_SIZE * BASIS_SIZE);
  const rhs = new Float64Array(BASIS_SIZE * 3);
  const phi = new Float64Array(BASIS_SIZE);
  for (const index of indices) {
    const x = index % width;
    basis(toU(x), toV((index - x) / width), phi);
    for (let r = 0; r < BASIS_SIZE; r++) {
      const pr = phi[r] ?? 0;
      for (let c = 0; c < BASIS_SIZE; c++) normal[r * BASIS_SIZE + c] = (normal[r * BASIS_SIZE + c] ?? 0) + pr * (phi[c] ?? 0);
      for (let channel = 0; channel < 3; channel++) {
        rhs[channel * BASIS_SIZE + r] = (rhs[channel * BASIS_SIZE + r] ?? 0) + pr * (lab[index * 3 + channel] ?? 0);
      }
    }
  }
  for (let r = 0; r < BASIS_SIZE; r++) normal[r * BASIS_SIZE + r] = (normal[r * BASIS_SIZE + r] ?? 0) + 1e-6 * indices.length;
  const coefficients = new Float64Array(BASIS_SIZE * 3);
  for (let channel = 0; channel < 3; channel++) {
    const solution = solveLinear(normal.slice(), rhs.slice(channel * BASIS_SIZE, (channel + 1) * BASIS_SIZE), BASIS_SIZE);
    coefficients.set(solution, channel * BASIS_SIZE);
  }
  return coefficients;
}

/** Gaussian elimination with partial pivoting on an n x n system. */
function solveLinear(matrix: Float64Array, vector: Float64Array, n: number): Float64Array {
  for (let col = 0; col < n; col++) {
    let pivot = col;
    for (let row = col + 1; row < n; row++) {
      if (Math.abs(matrix[row * n + col] ?? 0) > Math.abs(matrix[pivot * n + col] ?? 0)) pivot = row;
    }
    if (pivot !== col) {
      for (let k = 0; k < n; k++) {
        const swap = matrix[col * n + k] ?? 0;
        matrix[col * n + k] = matrix[pivot * n + k] ?? 0;
        matrix[pivot * n + k] = swap;
      }
      const swap = vector[col] ?? 0;
      vector[col] = vector[pivot] ?? 0;
      vector[pivot] = swap;
    }
    const diagonal = matrix[col * n + col] ?? 0;
    if (Math.abs(diagonal) < 1e-12) continue;
    for (let row = col + 1; row < n; row++) {
      const factor = (matrix[row * n + col] ?? 0) / diagonal;
      if (factor === 0) continue;
      for (let k = col; k < n; k++) matrix[row * n + k] = (matrix[row * n + k] ?? 0) - factor * (matrix[col * n + k] ?? 0);
      vector[row] = (vector[row] ?? 0) - factor * (vector[col] ?? 0);
    }
  }
  const solution = new Float64Array(n);
  for (let row = n - 1; row >= 0; row--) {
    let sum = vector[row] ?? 0;
    for (let k = row + 1; k < n; k++) sum -= (matrix[row * n + k] ?? 0) * (solution[k] ?? 0);
    const diagonal = matrix[row * n + row] ?? 0;
    solution[row] = Math.abs(diagonal) < 1e-12 ? 0 : sum / diagonal;
  }
  return solution;
}

/** Enclosed background-coloured regions larger than this fraction of the image are holes. */
export const HOLE_MINIMUM_FRACTION = 0.003;

const UNKNOWN = 0;
const BACKGROUND = 1;
const FOREGROUND = 2;

function placeMarkers(work: RgbaImage, distance: Float32Array, near: number, far: number): Uint8Array {
  const { width, height, data } = work;
  const pixels = width * height;
  const markers = new Uint8Array(pixels);
  // Pixels already transparent in the input are background whatever their colour.
  const isNear = (i: number) => (distance[i] ?? 0) < near || (data[i * 4 + 3] ?? 255) < 128;
  const nearRegions = labelComponents(width, height, isNear);
  // 0.3% of the picture: the opening of a mug handle is a hole, a white label
  // or a highlight on the product is not.
  const holeMinimum = Math.max(16, pixels * HOLE_MINIMUM_FRACTION);
  for (let i = 0; i < pixels; i++) {
    const label = nearRegions.labels[i] ?? 0;
    if (label === 0) continue;
    // Connected to the border: the background itself. Enclosed but large: a
    // hole through the object (small ones are more likely highlights).
    if (nearRegions.touchesBorder[label] || (nearRegions.sizes[label] ?? 0) >= holeMinimum) markers[i] = BACKGROUND;
  }
  const farRegions = labelComponents(width, height, (i) => (distance[i] ?? 0) > far && markers[i] !== BACKGROUND);
  const speckMaximum = Math.max(2, pixels * 0.00005);
  for (let i = 0; i < pixels; i++) {
    const label = farRegions.labels[i] ?? 0;
    if (label !== 0 && (farRegions.sizes[label] ?? 0) > speckMaximum) markers[i] = FOREGROUND;
  }
  return markers;
}

/** Gradient magnitude of the lightly smoothed Lab image, quantised to 0..255 for the bucket queue. */
function labGradient(lab: Float32Array, width: number, height: number): Uint8Array {
  const smooth = boxBlur(lab, width, height, 1, 3);
  const gradient = new Uint8Array(width * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const left = (y * width + Math.max(0, x - 1)) * 3;
      const right = (y * width + Math.min(width - 1, x + 1)) * 3;
      const up = (Math.max(0, y - 1) * width + x) * 3;
      const down = (Math.min(height - 1, y + 1) * width + x) * 3;
      let sum = 0;
      for (let c = 0; c < 3; c++) {
        const gx = (smooth[right + c] ?? 0) - (smooth[left + c] ?? 0);
        const gy = (smooth[down + c] ?? 0) - (smooth[up + c] ?? 0);
        sum += gx * gx + gy * gy;
      }
      gradient[y * width + x] = Math.min(255, Math.round(Math.sqrt(sum) * 2));
    }
  }
  return gradient;
}

/**
 * Meyer's flooding from the markers with a bucket queue (256 levels, O(pixels)):
 * each unknown pixel takes the label of the region that reaches it along the
 * lowest gradient, so regions meet on edges.
 */
function watershed(markers: Uint8Array, gradient: Uint8Array, width: number, height: number): Uint8Array {
  const pixels = width * height;
  const labels = copyBytes(markers);
  const next = new Int32Array(pixels).fill(-1);
  const heads = new Int32Array(256).fill(-1);
  const tails = new Int32Array(256).fill(-1);
  const queued = new Uint8Array(pixels);
  const push = (index: number, level: number) => {
    queued[index] = 1;
    if (tails[level] === -1) heads[level] = index;
    else next[tails[level] ?? 0] = index;
    tails[level] = index;
  };
  const visitNeighbours = (index: number, level: number) => {
    const x = index % width;
    const label = labels[index] ?? UNKNOWN;
    const neighbours = [x > 0 ? index - 1 : -1, x < width - 1 ? index + 1 : -1, index - width, index + width];
    for (const n of neighbours) {
      if (n < 0 || n >= pixels || queued[n] || labels[n] !== UNKNOWN) continue;
      labels[n] = label;
      push(n, Math.max(level, gradient[n] ?? 0));
    }
  };
  for (let i = 0; i < pixels; i++) if (markers[i] !== UNKNOWN) queued[i] = 1;
  // From the markers only: `labels` gains the neighbours as they are queued, and
  // visiting those here would sweep the flood through unknown pixels in raster order.
  for (let i = 0; i < pixels; i++) if (markers[i] !== UNKNOWN) visitNeighbours(i, gradient[i] ?? 0);
  for (let level = 0; level < 256; level++) {
    while (heads[level] !== -1) {
      const index = heads[level] ?? -1;
      heads[level] = next[index] ?? -1;
      if (heads[level] === -1) tails[level] = -1;
      visitNeighbours(index, level);
    }
  }
  const mask = new Uint8Array(pixels);
  // A picture with no foreground marker at all floods entirely to background.
  for (let i = 0; i < pixels; i++) mask[i] = labels[i] === FOREGROUND ? 255 : 0;
  return mask;
}
