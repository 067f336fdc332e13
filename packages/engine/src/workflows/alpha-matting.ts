import type { GreyImage, RgbaImage } from "../engine.ports";
import { clamp, dilate } from "../pixels/mask-ops";
import type { createCheckpoint } from "../work-checkpoint";

/**
 * Turning a segmentation into a cut-out: soft alpha along the edge and the
 * background colour taken out of edge pixels. Both background removers use it.
 *
 * An edge pixel is modelled as a mix I = a*F + (1-a)*B of a foreground colour
 * F and a background colour B. F and B are estimated locally (normalised box
 * filtering of the nearby pixels that are surely foreground or background, at
 * the working resolution), then read at full resolution by bilinear
 * interpolation. That is the compositing equation that matting methods solve;
 * this is its cheapest local form, good for the few pixels of an edge.
 */

/** Per-pixel mean colour of nearby "sure" pixels, 3 floats per working pixel. */
export interface LocalColours {
  foreground: Float32Array;
  background: Float32Array;
  width: number;
  height: number;
}

type Checkpoint = ReturnType<typeof createCheckpoint>;

/**
 * Mean colour of the pixels selected by `sure`, around each pixel. Where
 * nothing is selected within `radius`, the radius grows; past that, the
 * global mean is used.
 */
function localMean(work: RgbaImage, sure: Uint8Array, radius: number): Float32Array {
  const pixels = work.width * work.height;
  const weighted = new Float32Array(pixels * 4);
  let total = 0;
  const globalMean = [0, 0, 0];
  for (let i = 0; i < pixels; i++) {
    if (sure[i] !== 255) continue;
    for (let c = 0; c < 3; c++) {
      const value = work.data[i * 4 + c] ?? 0;
      weighted[i * 4 + c] = value;
      globalMean[c] = (globalMean[c] ?? 0) + value;
    }
    weighted[i * 4 + 3] = 1;
    total++;
  }
  for (let c = 0; c < 3; c++) globalMean[c] = total > 0 ? (globalMean[c] ?? 0) / total : 128;
  // Window sums from a summed-area table: one pass builds it, then each pixel's window at any
  // radius costs four reads, so growing the radius costs only the pixels still without a mean
  // (box blurs of the whole raster at four radii took 0.5 s per cut-out at 1 MP).
  const { width, height } = work;
  const stride = width + 1;
  const table = new Float64Array(stride * (height + 1) * 4);
  for (let y = 0; y < height; y++) {
    let r = 0;
    let g = 0;
    let b = 0;
    let n = 0;
    for (let x = 0; x < width; x++) {
      const from = (y * width + x) * 4;
      r += weighted[from] as number;
      g += weighted[from + 1] as number;
      b += weighted[from + 2] as number;
      n += weighted[from + 3] as number;
      const at = ((y + 1) * stride + x + 1) * 4;
      const above = at - stride * 4;
      table[at] = (table[above] as number) + r;
      table[at + 1] = (table[above + 1] as number) + g;
      table[at + 2] = (table[above + 2] as number) + b;
      table[at + 3] = (table[above + 3] as number) + n;
    }
  }
  const out = new Float32Array(pixels * 3);
  const filled = new Uint8Array(pixels);
  let remaining = pixels;
  for (let scale = 1; scale <= 8 && remaining > 0; scale *= 2) {
    const r = radius * scale;
    for (let y = 0; y < height; y++) {
      const top = Math.max(0, y - r) * stride;
      const bottom = Math.min(height, y + r + 1) * stride;
      for (let x = 0; x < width; x++) {
        const i = y * width + x;
        if (filled[i]) continue;
        const left = Math.max(0, x - r);
        const right = Math.min(width, x + r + 1);
        const a = (top + left) * 4;
        const b = (top + right) * 4;
        const d = (bottom + left) * 4;
        const e = (bottom + right) * 4;
        const weight = (table[e + 3] as number) - (table[b + 3] as number) - (table[d + 3] as number) + (table[a + 3] as number);
        // Less than one sure pixel in the window (the sums are whole counts, up to rounding).
        if (weight < 0.5) continue;
        for (let c = 0; c < 3; c++) {
          out[i * 3 + c] =
            ((table[e + c] as number) - (table[b + c] as number) - (table[d + c] as number) + (table[a + c] as number)) / weight;
        }
        filled[i] = 1;
        remaining--;
      }
    }
  }
  for (let i = 0; i < pixels; i++) {
    if (filled[i]) continue;
    for (let c = 0; c < 3; c++) out[i * 3 + c] = globalMean[c] ?? 128;
  }
  return out;
}

export function estimateLocalColours(work: RgbaImage, sureForeground: Uint8Array, sureBackground: Uint8Array): LocalColours {
  const radius = Math.max(3, Math.round(Math.max(work.width, work.height) / 160));
  return {
    foreground: localMean(work, sureForeground, radius),
    background: localMean(work, sureBackground, radius),
    width: work.width,
    height: work.height,
  };
}

/** Bilinear read of a 3-channel working raster at full-resolution pixel (x, y). */
class WorkingSampler {
  private readonly scaleX: number;
  private readonly scaleY: number;

  constructor(
    private readonly width: number,
    private readonly height: number,
    fullWidth: number,
    fullHeight: number,
  ) {
    this.scaleX = width / fullWidth;
    this.scaleY = height / fullHeight;
  }

  read(values: Float32Array, channels: number, x: number, y: number, out: Float32Array): void {
    const fx = clamp((x + 0.5) * this.scaleX - 0.5, 0, this.width - 1);
    const fy = clamp((y + 0.5) * this.scaleY - 0.5, 0, this.height - 1);
    const x0 = Math.floor(fx);
    const y0 = Math.floor(fy);
    const x1 = Math.min(x0 + 1, this.width - 1);
    const y1 = Math.min(y0 + 1, this.height - 1);
    const tx = fx - x0;
    const ty = fy - y0;
    for (let c = 0; c < channels; c++) {
      const a = values[(y0 * this.width + x0) * channels + c] ?? 0;
      const b = values[(y0 * this.width + x1) * channels + c] ?? 0;
      const d = values[(y1 * this.width + x0) * channels + c] ?? 0;
      const e = values[(y1 * this.width + x1) * channels + c] ?? 0;
      out[c] = (a + (b - a) * tx) * (1 - ty) + (d + (e - d) * tx) * ty;
    }
  }
}

/**
 * Full-resolution alpha from a binary working-resolution segmentation: hard
 * inside and outside, and along the boundary the alpha that best explains each
 * pixel as a mix of the local foreground and background colours. Where the two
 * colours are too close to tell apart, or the pixel is not such a mix (texture),
 * the geometric edge (the upsampled mask) is kept.
 */
export async function matteFromSegmentation(
  image: RgbaImage,
  work: RgbaImage,
  segmentation: Uint8Array,
  checkpoint: Checkpoint,
): Promise<{ alpha: GreyImage; colours: LocalColours }> {
  const { width: ww, height: wh } = work;
  const edge = boundaryBand(segmentation, ww, wh);
  const sureForeground = new Uint8Array(segmentation.length);
  const sureBackground = new Uint8Array(segmentation.length);
  for (let i = 0; i < segmentation.length; i++) {
    if (edge[i]) continue;
    if (segmentation[i] === 255) sureForeground[i] = 255;
    else sureBackground[i] = 255;
  }
  const colours = estimateLocalColours(work, sureForeground, sureBackground);
  const maskValues = new Float32Array(segmentation.length);
  for (let i = 0; i < segmentation.length; i++) maskValues[i] = segmentation[i] === 255 ? 1 : 0;

  const { width, height, data } = image;
  const alpha = new Uint8Array(width * height);
  const sampler = new WorkingSampler(ww, wh, width, height);
  // The band is one working pixel wider than the boundary, so a full-resolution
  // pixel whose nearest working pixel is outside it has a uniform neighbourhood:
  // the nearest label is its alpha, with no interpolation.
  const nearestColumn = nearestIndices(width, ww);
  const nearestRow = nearestIndices(height, wh);
  const f = new Float32Array(3);
  const b = new Float32Array(3);
  const m = new Float32Array(1);
  for (let y = 0; y < height; y++) {
    if ((y & 63) === 0) await checkpoint();
    const workRow = (nearestRow[y] ?? 0) * ww;
    for (let x = 0; x < width; x++) {
      const index = y * width + x;
      const nearest = workRow + (nearestColumn[x] ?? 0);
      if (!edge[nearest]) {
        alpha[index] = segmentation[nearest] ?? 0;
        continue;
      }
      sampler.read(maskValues, 1, x, y, m);
      const geometric = m[0] ?? 0;
      sampler.read(colours.foreground, 3, x, y, f);
      sampler.read(colours.background, 3, x, y, b);
      alpha[index] = Math.round(255 * mixAlpha(data, index * 4, f, b, geometric));
    }
  }
  return { alpha: { data: alpha, width, height }, colours };
}

function nearestIndices(fullSize: number, workSize: number): Int32Array {
  const indices = new Int32Array(fullSize);
  for (let i = 0; i < fullSize; i++) indices[i] = Math.min(workSize - 1, Math.floor(((i + 0.5) * workSize) / fullSize));
  return indices;
}

/** Pixels of the working mask next to the boundary, 1 pixel either side. */
function boundaryBand(segmentation: Uint8Array, width: number, height: number): Uint8Array {
  const boundary = new Uint8Array(segmentation.length);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = y * width + x;
      const here = segmentation[i];
      if (
        (x > 0 && segmentation[i - 1] !== here) ||
        (x < width - 1 && segmentation[i + 1] !== here) ||
        (y > 0 && segmentation[i - width] !== here) ||
        (y < height - 1 && segmentation[i + width] !== here)
      ) {
        boundary[i] = 255;
      }
    }
  }
  return dilate(boundary, width, height, 1);
}

// Projection space: luma, plus chroma at half weight. JPEG stores chroma at
// half resolution, so chroma edges are smeared over twice the pixels; leaning
// on luma keeps the soft edge as narrow as the real one.
const CHROMA_WEIGHT = 0.15;

function toProjectionSpace(r: number, g: number, b: number, out: Float32Array): void {
  const luma = 0.299 * r + 0.587 * g + 0.114 * b;
  out[0] = luma;
  out[1] = CHROMA_WEIGHT * (b - luma);
  out[2] = CHROMA_WEIGHT * (r - luma);
}

const pixelP = new Float32Array(3);
const foregroundP = new Float32Array(3);
const backgroundP = new Float32Array(3);

function mixAlpha(data: Uint8Array, offset: number, f: Float32Array, b: Float32Array, geometric: number): number {
  toProjectionSpace(data[offset] ?? 0, data[offset + 1] ?? 0, data[offset + 2] ?? 0, pixelP);
  toProjectionSpace(f[0] ?? 0, f[1] ?? 0, f[2] ?? 0, foregroundP);
  toProjectionSpace(b[0] ?? 0, b[1] ?? 0, b[2] ?? 0, backgroundP);
  let separation2 = 0;
  let dot = 0;
  for (let c = 0; c < 3; c++) {
    const d = (foregroundP[c] ?? 0) - (backgroundP[c] ?? 0);
    separation2 += d * d;
    dot += ((pixelP[c] ?? 0) - (backgroundP[c] ?? 0)) * d;
  }
  const separation = Math.sqrt(separation2);
  if (separation < 12) return geometric;
  const projected = clamp(dot / separation2, 0, 1);
  // How far the pixel is from the F-B line: large means texture, not a mix.
  let residual2 = 0;
  for (let c = 0; c < 3; c++) {
    const d = (foregroundP[c] ?? 0) - (backgroundP[c] ?? 0);
    const e = (pixelP[c] ?? 0) - (backgroundP[c] ?? 0) - projected * d;
    residual2 += e * e;
  }
  const trust = clamp((separation - 12) / 24, 0, 1) * clamp(1 - Math.sqrt(residual2) / 30, 0, 1);
  return trust * projected + (1 - trust) * geometric;
}

/**
 * Straight-alpha cut-out: colours of partly transparent pixels are solved for
 * their foreground part (I - (1-a)B) / a, so no fringe of the old background
 * shows on a new one; fully transparent pixels are zeroed.
 */
export async function cutOut(
  image: RgbaImage,
  alpha: GreyImage,
  colours: LocalColours,
  checkpoint: Checkpoint,
): Promise<RgbaImage> {
  const { width, height, data } = image;
  const out = new Uint8Array(data.length);
  const sampler = new WorkingSampler(colours.width, colours.height, width, height);
  const f = new Float32Array(3);
  const b = new Float32Array(3);
  for (let y = 0; y < height; y++) {
    if ((y & 63) === 0) await checkpoint();
    for (let x = 0; x < width; x++) {
      const index = y * width + x;
      const o = index * 4;
      const a = ((alpha.data[index] ?? 0) * (data[o + 3] ?? 255)) / 255;
      out[o + 3] = Math.round(a);
      if (a === 0) continue;
      if (a >= 255) {
        out[o] = data[o] ?? 0;
        out[o + 1] = data[o + 1] ?? 0;
        out[o + 2] = data[o + 2] ?? 0;
        continue;
      }
      sampler.read(colours.foreground, 3, x, y, f);
      sampler.read(colours.background, 3, x, y, b);
      const t = a / 255;
      // Small alphas amplify noise: lean on the local foreground colour there.
      const confidence = clamp((t - 0.15) / 0.35, 0, 1);
      for (let c = 0; c < 3; c++) {
        const solved = ((data[o + c] ?? 0) - (1 - t) * (b[c] ?? 0)) / t;
        const value = confidence * solved + (1 - confidence) * (f[c] ?? 0);
        out[o + c] = Math.round(clamp(value, 0, 255));
      }
    }
  }
  return { data: out, width, height };
}

/**
 * Local colours for a matte that came from elsewhere (a model): sure pixels are
 * those with alpha above 95% or below 5% at the working resolution.
 */
export function localColoursFromMatte(work: RgbaImage, workAlpha: Uint8Array): LocalColours {
  const sureForeground = new Uint8Array(workAlpha.length);
  const sureBackground = new Uint8Array(workAlpha.length);
  for (let i = 0; i < workAlpha.length; i++) {
    const a = workAlpha[i] ?? 0;
    if (a >= 242) sureForeground[i] = 255;
    else if (a <= 13) sureBackground[i] = 255;
  }
  return estimateLocalColours(work, sureForeground, sureBackground);
}
