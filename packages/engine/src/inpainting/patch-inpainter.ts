import type { GreyImage, Inpainter, RgbaImage, WorkContext } from "../engine.ports";
import { EngineError } from "../engine-error";
import { clamp, copyBytes, dilate, dilateAround } from "../pixels/mask-ops";
import { seededRandom } from "../pixels/seeded-random";
import { createCheckpoint } from "../work-checkpoint";
import { CHANNELS, patchDistance, roundBands, type SearchField, type SearchLevel, searchBand, startRound } from "./patch-search";
import { patchSearchThread } from "./patch-search-thread";

/**
 * Exemplar-based inpainting: the hole is filled with patches copied from the
 * rest of the image, so texture and straight structures continue through it
 * (diffusion methods such as Telea's only smear the border colours inward).
 *
 * The method is Wexler, Shechtman and Irani's "space-time completion" with
 * Barnes et al.'s PatchMatch for the nearest-neighbour search:
 *
 * - the hole is searched as if grown by a margin scaled to it (past the
 *   object's soft edge), and a rim around that is never a source: a fill
 *   copied from the object's halo rebuilds a ghost of it;
 * - a pyramid, coarsest level first; at the coarsest level the hole is a few
 *   pixels thick and is first filled row by row from each row's ends beyond
 *   the rim (the onion peel, which fills from the whole outline inward, only
 *   where a row has no known end);
 * - at each level, alternate (a) PatchMatch: for every patch that overlaps the
 *   hole, find the most similar patch lying entirely outside it (propagation
 *   from the neighbours' matches plus a random search at shrinking radii), and
 *   (b) voting: each hole pixel becomes the similarity-weighted mean of what
 *   the overlapping patches' matches say it should be at coarse levels, and
 *   what the best of them says at the two finest (a mean blurs texture);
 * - the match field is upsampled to the next level.
 *
 * The search (patch-search.ts) holds most of the time; a large level's round
 * is split in two bands, one searched in a helper thread
 * (patch-search-thread.ts), with the same result as in one thread.
 *
 * Large images are inpainted on a crop around the hole, reduced to at most
 * `workingPixels`; at full resolution, each hole pixel is then copied from
 * the full-resolution source its working-resolution match points to (blended
 * over the 4 nearest matches), so the fill keeps full-resolution texture.
 */
export interface PatchInpainterOptions {
  /** Patches are (2r+1)^2 pixels. Default 3 (7x7). */
  patchRadius?: number;
  /** Size of the crop around the hole that the search works on. Default 350k pixels. */
  workingPixels?: number;
  /** Deterministic output for the same input. */
  seed?: number;
  /**
   * Search the second band of each large round in the helper thread (default
   * true). The fill is the same without it, only slower where a core is free.
   */
  helperThread?: boolean;
  /**
   * The fill is made as if the hole were grown by this share of the square root
   * of its area (at least 1 pixel): past the object's soft edge, which a mask
   * drawn or segmented to the object leaves outside, so that the edge's halo
   * does not steer the fill. Only the given hole is written; the margin keeps
   * its pixels (the remover decides what belongs to a neighbour). Default 0.02
   * (5 pixels for a hole of 250 x 250); 0 fills from the hole's very edge.
   */
  marginFactor?: number;
  /**
   * Patches within this share of the square root of the hole's area from the
   * (grown) hole are never copied from: that rim still carries the object's
   * halo (its shadow, blur, stray hair), and a fill copied from it rebuilds a
   * ghost of the object. Default 0.04 (10 pixels for a hole of 250 x 250).
   */
  rimFactor?: number;
}

const DEFAULT_PATCH_RADIUS = 3;
const DEFAULT_WORKING_PIXELS = 350_000;
const DEFAULT_MARGIN_FACTOR = 0.02;
const DEFAULT_RIM_FACTOR = 0.04;
/**
 * Levels of the pyramid (counted from the finest) whose hole pixels take the
 * value of the best-matching overlapping patch rather than the weighted mean
 * of all of them: a mean of several good but different patches of grass or
 * leaves is a blur, and the search then matches the blur to the smoothest
 * patches around, so the fill ends flatter than its surroundings (half their
 * gradient energy on the real-photo yardstick). Coarser levels keep the mean,
 * which settles the structure.
 */
const BEST_PATCH_LEVELS = 2;
/** PatchMatch and vote rounds at the finest level, and at each coarser one. */
const FINEST_LEVEL_ROUNDS = 2;
const COARSE_LEVEL_ROUNDS = 5;
// Vote weights fall off at 0.3x the median match distance: sharper than the
// median itself, because averaging many mediocre patches blurs texture.
const SIGMA_FACTOR = 0.3;

/**
 * Values per pixel: R, G, B, then two texture features (local mean of the
 * absolute horizontal and vertical luma gradient). The features are Newson et
 * al.'s remedy for the method's known failure on irregular texture (gravel,
 * foliage): colour averaging flattens such texture at coarse levels, and the
 * hole then converges to smooth patches; averaged gradient magnitudes survive
 * the downsampling, so "textured here" still steers the matching.
 */
// CHANNELS (patch-search.ts): R, G, B and the two features.
// Measured on gravel, brick and a sky-over-structure photo: stronger weights
// bring back more texture in irregular fills but start copying structures
// (a pylon) into smooth areas; the features matter most at coarse levels.
const FINE_TEXTURE_WEIGHT = 3;
const COARSE_TEXTURE_WEIGHT = 6;

/** A level of the pyramid: CHANNELS floats per pixel (shared with the helper thread) and the hole (1 = unknown). */
interface Level extends SearchLevel {
  hole: Uint8Array;
  /** Pixels around the hole that are never a source (the object's rim), at this level's scale. */
  rim: number;
}

/** The nearest-neighbour field (patch-search.ts), its arrays shared with the helper thread. */
interface Field extends SearchField {
  /** Where a whole patch lies outside the hole, per pixel, and the list of those pixels. */
  sources: Sources;
}

/** A typed array over shared memory: the helper thread reads and writes it in place. */
function shared<T>(Kind: { new (buffer: SharedArrayBuffer): T; BYTES_PER_ELEMENT: number }, length: number): T {
  return new Kind(new SharedArrayBuffer(length * Kind.BYTES_PER_ELEMENT));
}

type Checkpoint = ReturnType<typeof createCheckpoint>;

export class PatchMatchInpainter implements Inpainter {
  private readonly radius: number;
  private readonly workingPixels: number;
  private readonly seed: number;
  private readonly marginFactor: number;
  private readonly rimFactor: number;
  private readonly helperThread: boolean;

  constructor(options: PatchInpainterOptions = {}) {
    this.radius = options.patchRadius ?? DEFAULT_PATCH_RADIUS;
    this.workingPixels = options.workingPixels ?? DEFAULT_WORKING_PIXELS;
    this.seed = options.seed ?? 0x5eed;
    this.marginFactor = options.marginFactor ?? DEFAULT_MARGIN_FACTOR;
    this.rimFactor = options.rimFactor ?? DEFAULT_RIM_FACTOR;
    this.helperThread = options.helperThread ?? true;
  }

  async inpaint(image: RgbaImage, given: GreyImage, context: WorkContext): Promise<RgbaImage> {
    const checkpoint = createCheckpoint(context.signal);
    const { mask, area, bounds } = growHole(given, this.marginFactor);
    if (!bounds) return { data: copyBytes(image.data), width: image.width, height: image.height };
    // Started now, it is up by the large levels (a built thread starts in tens of ms), or the fill goes on without it.
    if (this.helperThread) void patchSearchThread.start();
    const crop = contextCrop(bounds, image.width, image.height);
    const scale = Math.min(1, Math.sqrt(this.workingPixels / (crop.width * crop.height)));
    const base = makeWorkingLevel(image, mask, crop, scale, Math.ceil(this.rimFactor * Math.sqrt(area) * scale));
    const random = seededRandom(this.seed);
    const levels = buildPyramid(base, this.radius);
    const coarsest = levels[levels.length - 1] as Level;
    assertHasSources(coarsest, this.radius);
    rowFillLevel(coarsest);

    let field: Field | undefined;
    try {
      for (let index = levels.length - 1; index >= 0; index--) {
        const level = levels[index] as Level;
        field = field
          ? upsampleField(field, levels[index + 1] as Level, level, this.radius, random)
          : randomField(level, this.radius, random);
        const best = index < BEST_PATCH_LEVELS;
        if (index < levels.length - 1) vote(level, field, this.radius, best);
        // Coarse levels are cheap and decide the structure: iterate more there. The finest level starts from
        // the upsampled field and holds most of the work (two thirds of it at 3 rounds); a third round there
        // moved no yardstick median (ghost 0.029 -> 0.028, tone -6.7 -> -6.8, texture 0.69 both; no photo by
        // more than 0.004 ghost, 0.1 tone or 0.01 texture: docs/engine.md#measured-figures).
        const rounds = index === 0 ? FINEST_LEVEL_ROUNDS : COARSE_LEVEL_ROUNDS;
        for (let round = 0; round < rounds; round++) {
          await searchRound(level, field, this.radius, random, round, checkpoint, this.helperThread);
          vote(level, field, this.radius, best);
        }
      }
    } finally {
      if (this.helperThread) patchSearchThread.release();
    }
    const rim = Math.ceil(this.rimFactor * Math.sqrt(area));
    return composeFullResolution(image, given, mask, crop, bounds, base, field as Field, rim, checkpoint);
  }
}

/** The hole (255) grown by a margin scaled to its size, its bounds, and the given hole's area in pixels. */
function growHole(mask: GreyImage, marginFactor: number): { mask: GreyImage; area: number; bounds: Rect | undefined } {
  const { width, height, data } = mask;
  const hole = new Uint8Array(data.length);
  let area = 0;
  let minX = width;
  let minY = height;
  let maxX = -1;
  let maxY = -1;
  for (let y = 0; y < height; y++) {
    const row = y * width;
    for (let x = 0; x < width; x++) {
      if ((data[row + x] as number) < 128) continue;
      hole[row + x] = 255;
      area++;
      if (x < minX) minX = x;
      if (x > maxX) maxX = x;
      if (y < minY) minY = y;
      maxY = y;
    }
  }
  if (maxX < 0) return { mask: { data: hole, width, height }, area, bounds: undefined };
  const margin = marginFactor <= 0 ? 0 : Math.max(1, Math.round(marginFactor * Math.sqrt(area)));
  const given = { x: minX, y: minY, width: maxX - minX + 1, height: maxY - minY + 1 };
  const x0 = Math.max(0, minX - margin);
  const y0 = Math.max(0, minY - margin);
  const bounds = {
    x: x0,
    y: y0,
    width: Math.min(width - 1, maxX + margin) - x0 + 1,
    height: Math.min(height - 1, maxY + margin) - y0 + 1,
  };
  const grown = margin === 0 ? hole : dilateAround(hole, width, height, margin, given);
  return { mask: { data: grown, width, height }, area, bounds };
}

interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** The hole with a margin as large as the hole itself on every side: where fill material comes from. */
function contextCrop(hole: Rect, width: number, height: number): Rect {
  const margin = Math.max(48, Math.max(hole.width, hole.height));
  const x0 = Math.max(0, hole.x - margin);
  const y0 = Math.max(0, hole.y - margin);
  const x1 = Math.min(width, hole.x + hole.width + margin);
  const y1 = Math.min(height, hole.y + hole.height + margin);
  return { x: x0, y: y0, width: x1 - x0, height: y1 - y0 };
}

/** The crop at working scale: area-averaged colours of known pixels; a working pixel is a hole if any pixel under it is. */
function makeWorkingLevel(image: RgbaImage, mask: GreyImage, crop: Rect, scale: number, rim: number): Level {
  const width = Math.max(1, Math.round(crop.width * scale));
  const height = Math.max(1, Math.round(crop.height * scale));
  const values = shared(Float32Array, width * height * CHANNELS);
  const weight = new Float32Array(width * height);
  const hole = new Uint8Array(width * height);
  // A pass over every pixel of the crop at full size: the working column of each crop column is looked up.
  const column = new Int32Array(crop.width);
  for (let x = 0; x < crop.width; x++) column[x] = Math.min(width - 1, Math.floor((x * width) / crop.width));
  const pixels = image.data;
  const holes = mask.data;
  for (let y = 0; y < crop.height; y++) {
    const workingRow = Math.min(height - 1, Math.floor((y * height) / crop.height)) * width;
    const sourceRow = (crop.y + y) * image.width + crop.x;
    for (let x = 0; x < crop.width; x++) {
      const w = workingRow + (column[x] as number);
      const source = sourceRow + x;
      if ((holes[source] as number) >= 128) {
        hole[w] = 1;
        continue;
      }
      const v = w * CHANNELS;
      const p = source * 4;
      values[v] = (values[v] as number) + (pixels[p] as number);
      values[v + 1] = (values[v + 1] as number) + (pixels[p + 1] as number);
      values[v + 2] = (values[v + 2] as number) + (pixels[p + 2] as number);
      weight[w] = (weight[w] as number) + 1;
    }
  }
  for (let i = 0; i < width * height; i++) {
    const total = weight[i] ?? 0;
    for (let c = 0; c < 3; c++) values[i * CHANNELS + c] = hole[i] || total === 0 ? 0 : (values[i * CHANNELS + c] ?? 0) / total;
    if (total === 0) hole[i] = 1;
  }
  const level = { width, height, values, hole, textureWeight2: FINE_TEXTURE_WEIGHT ** 2, rim };
  addTextureFeatures(level);
  return level;
}

/** Fills channels 3 and 4 of the known pixels: absolute luma gradients, averaged over a 5x5 window of known pixels. */
function addTextureFeatures(level: Level): void {
  const { width, height, values, hole } = level;
  const luma = new Float32Array(width * height);
  for (let i = 0; i < luma.length; i++) {
    luma[i] =
      0.299 * (values[i * CHANNELS] ?? 0) + 0.587 * (values[i * CHANNELS + 1] ?? 0) + 0.114 * (values[i * CHANNELS + 2] ?? 0);
  }
  const gradient = (i: number, step: number, before: boolean, after: boolean) => {
    if (before && after) return Math.abs((luma[i + step] ?? 0) - (luma[i - step] ?? 0)) / 2;
    if (after) return Math.abs((luma[i + step] ?? 0) - (luma[i] ?? 0));
    if (before) return Math.abs((luma[i] ?? 0) - (luma[i - step] ?? 0));
    return 0;
  };
  const raw = new Float32Array(width * height * 2);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = y * width + x;
      if (hole[i]) continue;
      raw[i * 2] = gradient(i, 1, x > 0 && !hole[i - 1], x < width - 1 && !hole[i + 1]);
      raw[i * 2 + 1] = gradient(i, width, y > 0 && !hole[i - width], y < height - 1 && !hole[i + width]);
    }
  }
  // The 5x5 window as a row of 5 then a column of 5 (a separable box): 10 reads a pixel, not 25.
  const radius = 2;
  const rowSums = new Float64Array(width * height * 2);
  const rowCounts = new Uint8Array(width * height);
  for (let y = 0; y < height; y++) {
    const row = y * width;
    for (let x = 0; x < width; x++) {
      let gx = 0;
      let gy = 0;
      let count = 0;
      for (let nx = Math.max(0, x - radius); nx <= Math.min(width - 1, x + radius); nx++) {
        const n = row + nx;
        if (hole[n]) continue;
        gx += raw[n * 2] as number;
        gy += raw[n * 2 + 1] as number;
        count++;
      }
      rowSums[(row + x) * 2] = gx;
      rowSums[(row + x) * 2 + 1] = gy;
      rowCounts[row + x] = count;
    }
  }
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = y * width + x;
      if (hole[i]) continue;
      let gx = 0;
      let gy = 0;
      let count = 0;
      for (let ny = Math.max(0, y - radius); ny <= Math.min(height - 1, y + radius); ny++) {
        const n = ny * width + x;
        gx += rowSums[n * 2] as number;
        gy += rowSums[n * 2 + 1] as number;
        count += rowCounts[n] as number;
      }
      values[i * CHANNELS + 3] = gx / count;
      values[i * CHANNELS + 4] = gy / count;
    }
  }
}

/**
 * Halves until the hole is a few pixels thick, or until a further level would
 * be too small for patches or leave too few whole patches outside the hole.
 */
function buildPyramid(base: Level, radius: number): Level[] {
  const levels = [base];
  let current = base;
  const minimumSide = 4 * radius + 4;
  while (Math.min(current.width, current.height) / 2 >= minimumSide && holeThickness(current) > 2) {
    const next = halve(current);
    if (validSources(next, radius).count < Math.max(32, 0.05 * next.width * next.height)) break;
    current = next;
    levels.push(current);
  }
  return levels;
}

/**
 * The largest distance (in pixels, chessboard) from a hole pixel to a known
 * one: a two-pass distance transform, linear in the number of pixels.
 */
function holeThickness(level: Level): number {
  const { width, height, hole } = level;
  const far = width + height;
  const distance = new Int32Array(width * height);
  for (let i = 0; i < distance.length; i++) distance[i] = hole[i] ? far : 0;
  const at = (x: number, y: number) => (x < 0 || y < 0 || x >= width || y >= height ? far : (distance[y * width + x] ?? far));
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = y * width + x;
      if (!hole[i]) continue;
      distance[i] = Math.min(distance[i] ?? far, at(x - 1, y) + 1, at(x - 1, y - 1) + 1, at(x, y - 1) + 1, at(x + 1, y - 1) + 1);
    }
  }
  let thickest = 0;
  for (let y = height - 1; y >= 0; y--) {
    for (let x = width - 1; x >= 0; x--) {
      const i = y * width + x;
      if (!hole[i]) continue;
      distance[i] = Math.min(distance[i] ?? far, at(x + 1, y) + 1, at(x + 1, y + 1) + 1, at(x, y + 1) + 1, at(x - 1, y + 1) + 1);
      thickest = Math.max(thickest, distance[i] ?? 0);
    }
  }
  return thickest;
}

function halve(level: Level): Level {
  const width = Math.max(1, Math.floor(level.width / 2));
  const height = Math.max(1, Math.floor(level.height / 2));
  const values = shared(Float32Array, width * height * CHANNELS);
  const hole = new Uint8Array(width * height);
  const sum = new Float32Array(CHANNELS);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      let known = 0;
      sum.fill(0);
      for (let dy = 0; dy < 2; dy++) {
        for (let dx = 0; dx < 2; dx++) {
          const source = (2 * y + dy) * level.width + 2 * x + dx;
          if (level.hole[source]) continue;
          known++;
          for (let c = 0; c < CHANNELS; c++) sum[c] = (sum[c] ?? 0) + (level.values[source * CHANNELS + c] ?? 0);
        }
      }
      const i = y * width + x;
      // Conservative: any unknown child makes the parent unknown.
      if (known < 4) hole[i] = 1;
      else for (let c = 0; c < CHANNELS; c++) values[i * CHANNELS + c] = (sum[c] ?? 0) / 4;
    }
  }
  return { width, height, values, hole, textureWeight2: COARSE_TEXTURE_WEIGHT ** 2, rim: Math.ceil(level.rim / 2) };
}

function assertHasSources(level: Level, radius: number): void {
  if (validSources(level, radius).count === 0) {
    throw new EngineError("invalid_mask", "The area to fill covers nearly the whole image: nothing is left to fill it from.");
  }
}

/** Patch centres whose whole patch lies inside the image, outside the hole and its rim. */
interface Sources {
  valid: Uint8Array;
  list: Int32Array;
  count: number;
}

function validSources(level: Level, radius: number): Sources {
  const { width, height } = level;
  const holeMask = new Uint8Array(level.hole.length);
  for (let i = 0; i < holeMask.length; i++) holeMask[i] = level.hole[i] ? 255 : 0;
  const near = dilate(holeMask, width, height, radius + level.rim);
  const valid = shared(Uint8Array, width * height);
  const list: number[] = [];
  for (let y = radius; y < height - radius; y++) {
    for (let x = radius; x < width - radius; x++) {
      const i = y * width + x;
      if (near[i] === 0) {
        valid[i] = 1;
        list.push(i);
      }
    }
  }
  return { valid, list: Int32Array.from(list), count: list.length };
}

/**
 * Starts the coarsest level row by row: each run of hole pixels in a row is
 * interpolated between the known pixels at its two ends (or copies the one end
 * it has). Rows, not the hole's outline: the onion peel fills from the whole
 * border inward, so the sky above a person's head flows down into the shape of
 * the head and the search then rebuilds that shape (a horizon that bulges
 * where the person stood: the ghost). A scene's structure is mostly
 * horizontal (horizon, table edge, floor), and each row's ends say what lies
 * behind the object at that height. Rows without a known pixel are left to the
 * onion peel, which runs after this.
 */
function rowFillLevel(level: Level): void {
  const { width, height, values, hole, rim } = level;
  const filled: number[] = [];
  for (let y = 0; y < height; y++) {
    const row = y * width;
    let x = 0;
    while (x < width) {
      if (!hole[row + x]) {
        x++;
        continue;
      }
      const start = x;
      while (x < width && hole[row + x]) x++;
      // The ends are taken beyond the rim, which may still carry the object's halo.
      const left =
        start - 1 - rim >= 0 && !hole[row + start - 1 - rim] ? row + start - 1 - rim : start > 0 ? row + start - 1 : -1;
      const right = x + rim < width && !hole[row + x + rim] ? row + x + rim : x < width ? row + x : -1;
      if (left < 0 && right < 0) continue;
      for (let k = start; k < x; k++) {
        const t = left < 0 ? 1 : right < 0 ? 0 : (k - start + 1) / (x - start + 1);
        const i = row + k;
        for (let c = 0; c < CHANNELS; c++) {
          const a = left < 0 ? 0 : (values[left * CHANNELS + c] ?? 0);
          const b = right < 0 ? 0 : (values[right * CHANNELS + c] ?? 0);
          values[i * CHANNELS + c] = (1 - t) * a + t * b;
        }
        filled.push(i);
      }
    }
  }
  // Known now for the onion peel; the hole itself is unchanged for everything after.
  const hidden = level.hole;
  const known = Uint8Array.from(hidden);
  for (const i of filled) known[i] = 0;
  level.hole = known;
  diffusionFillLevel(level);
  level.hole = hidden;
}

/**
 * Onion peel: repeatedly give the hole pixels that touch known pixels the
 * mean of their known neighbours. A diffusion fill, used to start the
 * coarsest level (and, exported, as the baseline the tests compare with).
 */
function diffusionFillLevel(level: Level): void {
  const { width, height, values } = level;
  const known = new Uint8Array(level.hole.length);
  const sum = new Float32Array(CHANNELS);
  for (let i = 0; i < known.length; i++) known[i] = level.hole[i] ? 0 : 1;
  let frontier: number[] = [];
  for (let i = 0; i < known.length; i++) if (!known[i]) frontier.push(i);
  while (frontier.length > 0) {
    const filled: number[] = [];
    const rest: number[] = [];
    for (const i of frontier) {
      const x = i % width;
      const y = (i - x) / width;
      let count = 0;
      sum.fill(0);
      for (let dy = -1; dy <= 1; dy++) {
        for (let dx = -1; dx <= 1; dx++) {
          const nx = x + dx;
          const ny = y + dy;
          if (nx < 0 || ny < 0 || nx >= width || ny >= height) continue;
          const n = ny * width + nx;
          if (!known[n]) continue;
          count++;
          for (let c = 0; c < CHANNELS; c++) sum[c] = (sum[c] ?? 0) + (values[n * CHANNELS + c] ?? 0);
        }
      }
      if (count === 0) {
        rest.push(i);
        continue;
      }
      for (let c = 0; c < CHANNELS; c++) values[i * CHANNELS + c] = (sum[c] ?? 0) / count;
      filled.push(i);
    }
    if (filled.length === 0) break;
    for (const i of filled) known[i] = 1;
    frontier = rest;
  }
}

/** Diffusion ("onion peel") fill of an RGBA image's masked pixels: the smearing baseline. */
export function diffusionFill(image: RgbaImage, mask: GreyImage): RgbaImage {
  const level: Level = {
    width: image.width,
    height: image.height,
    values: new Float32Array(image.width * image.height * CHANNELS),
    hole: new Uint8Array(image.width * image.height),
    textureWeight2: 0,
    rim: 0,
  };
  for (let i = 0; i < level.hole.length; i++) {
    level.hole[i] = (mask.data[i] ?? 0) >= 128 ? 1 : 0;
    for (let c = 0; c < 3; c++) level.values[i * CHANNELS + c] = image.data[i * 4 + c] ?? 0;
  }
  diffusionFillLevel(level);
  const data = copyBytes(image.data);
  for (let i = 0; i < level.hole.length; i++) {
    if (!level.hole[i]) continue;
    for (let c = 0; c < 3; c++) data[i * 4 + c] = Math.round(level.values[i * CHANNELS + c] ?? 0);
  }
  return { data, width: image.width, height: image.height };
}

function targetsOf(level: Level, radius: number): Int32Array {
  const holeMask = new Uint8Array(level.hole.length);
  for (let i = 0; i < holeMask.length; i++) holeMask[i] = level.hole[i] ? 255 : 0;
  const near = dilate(holeMask, level.width, level.height, radius);
  let count = 0;
  for (let i = 0; i < near.length; i++) if (near[i]) count++;
  const targets = shared(Int32Array, count);
  for (let i = 0, k = 0; i < near.length; i++) if (near[i]) targets[k++] = i;
  return targets;
}

function emptyField(level: Level, radius: number): Field {
  const pixels = level.width * level.height;
  const sources = validSources(level, radius);
  return {
    sources,
    valid: sources.valid,
    sourceX: shared(Int32Array, pixels).fill(-1),
    sourceY: shared(Int32Array, pixels).fill(-1),
    distance: shared(Float32Array, pixels).fill(Number.POSITIVE_INFINITY),
    targets: targetsOf(level, radius),
    startX: shared(Int32Array, pixels),
    startY: shared(Int32Array, pixels),
  };
}

function randomField(level: Level, radius: number, random: () => number): Field {
  const field = emptyField(level, radius);
  const { sources } = field;
  for (const target of field.targets) {
    const source = sources.list[Math.floor(random() * sources.count)] ?? 0;
    assign(field, level, radius, target, source % level.width, Math.floor(source / level.width));
  }
  return field;
}

/** Doubles every match of the coarser level; matches that land on invalid sources are redrawn. */
function upsampleField(coarseField: Field, coarse: Level, fine: Level, radius: number, random: () => number): Field {
  const field = emptyField(fine, radius);
  const { sources } = field;
  for (const target of field.targets) {
    const x = target % fine.width;
    const y = (target - x) / fine.width;
    const cx = Math.min(coarse.width - 1, x >> 1);
    const cy = Math.min(coarse.height - 1, y >> 1);
    const coarseIndex = cy * coarse.width + cx;
    let sx = (coarseField.sourceX[coarseIndex] ?? -1) * 2 + (x - 2 * cx);
    let sy = (coarseField.sourceY[coarseIndex] ?? -1) * 2 + (y - 2 * cy);
    if (sx < 0 || sy < 0 || sx >= fine.width || sy >= fine.height || !sources.valid[sy * fine.width + sx]) {
      const source = sources.list[Math.floor(random() * sources.count)] ?? 0;
      sx = source % fine.width;
      sy = Math.floor(source / fine.width);
    }
    assign(field, fine, radius, target, sx, sy);
  }
  return field;
}

function assign(field: Field, level: Level, radius: number, target: number, sx: number, sy: number): void {
  const x = target % level.width;
  field.sourceX[target] = sx;
  field.sourceY[target] = sy;
  field.distance[target] = patchDistance(level, radius, x, (target - x) / level.width, sx, sy, Number.POSITIVE_INFINITY);
}

/**
 * One PatchMatch round over the level's targets, in bands (patch-search.ts):
 * the second band of a large level in the helper thread when it is up and
 * `useHelper`, else here after the first; the field is the same either way.
 */
async function searchRound(
  level: Level,
  field: Field,
  radius: number,
  random: () => number,
  round: number,
  checkpoint: Checkpoint,
  useHelper: boolean,
): Promise<void> {
  const [own, other] = roundBands(field.targets.length, round % 2 === 0 ? 1 : -1, Math.floor(random() * 2 ** 32));
  if (!own) return;
  if (other) startRound(field);
  const { width, height, values, textureWeight2 } = level;
  const { valid, sourceX, sourceY, distance, targets, startX, startY } = field;
  // Only the shared arrays go: the level's hole and the sources' list would be copied.
  const helped =
    other && useHelper
      ? patchSearchThread.search({
          level: { width, height, values, textureWeight2 },
          field: { valid, sourceX, sourceY, distance, targets, startX, startY },
          radius,
          band: other,
        })
      : undefined;
  await searchBand(level, field, radius, own, checkpoint);
  if (!other) return;
  const reply = await helped;
  // Not helped, or the helper failed part way: this thread searches the band (a failure's field is still a valid one).
  if (!reply?.ok) await searchBand(level, field, radius, other, checkpoint);
}

/**
 * Each hole pixel becomes the weighted mean of the colours that the
 * overlapping patches' matches put there; a patch's weight falls with its
 * match distance (scale: the median distance).
 */
function vote(level: Level, field: Field, radius: number, best = false): void {
  if (best) {
    voteBest(level, field, radius);
    return;
  }
  const { width, height, values, hole } = level;
  const { sourceX, sourceY, distance, targets } = field;
  const sigma2 = Math.max(1, SIGMA_FACTOR * medianDistance(distance, targets));
  const weights = new Float32Array(width * height);
  for (const target of targets) weights[target] = Math.exp(-(distance[target] ?? 0) / (2 * sigma2));
  const next = new Float32Array(CHANNELS);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = y * width + x;
      if (!hole[i]) continue;
      let total = 0;
      next.fill(0);
      for (let dy = -radius; dy <= radius; dy++) {
        const py = y + dy;
        if (py < 0 || py >= height) continue;
        for (let dx = -radius; dx <= radius; dx++) {
          const px = x + dx;
          if (px < 0 || px >= width) continue;
          const p = py * width + px;
          const sx = sourceX[p] ?? -1;
          if (sx < 0) continue;
          const w = weights[p] ?? 0;
          const s = ((sourceY[p] ?? 0) - dy) * width + (sx - dx);
          for (let c = 0; c < CHANNELS; c++) next[c] = (next[c] ?? 0) + w * (values[s * CHANNELS + c] ?? 0);
          total += w;
        }
      }
      if (total <= 0) continue;
      for (let c = 0; c < CHANNELS; c++) values[i * CHANNELS + c] = (next[c] ?? 0) / total;
    }
  }
}

/**
 * Each hole pixel takes what the best-matching patch overlapping it puts
 * there: a real pixel of the surroundings, never a blend of several.
 */
function voteBest(level: Level, field: Field, radius: number): void {
  const { width, height, values, hole } = level;
  const { sourceX, sourceY, distance } = field;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = y * width + x;
      if (!hole[i]) continue;
      let bestDistance = Number.POSITIVE_INFINITY;
      let bestSource = -1;
      for (let dy = -radius; dy <= radius; dy++) {
        const py = y + dy;
        if (py < 0 || py >= height) continue;
        for (let dx = -radius; dx <= radius; dx++) {
          const px = x + dx;
          if (px < 0 || px >= width) continue;
          const p = py * width + px;
          const sx = sourceX[p] ?? -1;
          const d = distance[p] ?? Number.POSITIVE_INFINITY;
          if (sx < 0 || d >= bestDistance) continue;
          bestDistance = d;
          bestSource = ((sourceY[p] ?? 0) - dy) * width + (sx - dx);
        }
      }
      if (bestSource < 0) continue;
      for (let c = 0; c < CHANNELS; c++) values[i * CHANNELS + c] = values[bestSource * CHANNELS + c] ?? 0;
    }
  }
}

function medianDistance(distance: Float32Array, targets: Int32Array): number {
  const values = new Float32Array(targets.length);
  for (let k = 0; k < targets.length; k++) values[k] = distance[targets[k] ?? 0] ?? 0;
  values.sort();
  return values[Math.floor(values.length / 2)] ?? 0;
}

/**
 * Writes the fill into a copy of the full image: each hole pixel copies the
 * full-resolution pixel that the working-resolution matches point to (the 4
 * nearest working pixels' matches, weighted by distance and match quality).
 * Copying real pixels rather than the voted average keeps the texture sharp;
 * at scale 1 it is the match of the pixel itself.
 */
async function composeFullResolution(
  image: RgbaImage,
  written: GreyImage,
  mask: GreyImage,
  crop: Rect,
  hole: Rect,
  work: Level,
  field: Field,
  rim: number,
  checkpoint: Checkpoint,
): Promise<RgbaImage> {
  const out = copyBytes(image.data);
  const sigma2 = Math.max(1, medianDistance(field.distance, field.targets));
  const scaleX = work.width / crop.width;
  const scaleY = work.height / crop.height;
  // Each working match's weight, once: the loop below reads four per full-resolution pixel.
  const matchWeight = new Float64Array(work.width * work.height);
  for (const target of field.targets) matchWeight[target] = Math.exp(-(field.distance[target] ?? 0) / (2 * sigma2));
  const pixels = image.data;
  // Only the hole's bounds are written: the crop around them is up to nine times their area.
  const left = hole.x - crop.x;
  const right = left + hole.width;
  for (let y = hole.y - crop.y; y < hole.y - crop.y + hole.height; y++) {
    if ((y & 31) === 0) await checkpoint();
    for (let x = left; x < right; x++) {
      const full = (crop.y + y) * image.width + crop.x + x;
      // Only the given hole is written: its margin stays as it was (a neighbour may own it).
      if ((written.data[full] ?? 0) < 128) continue;
      const o = full * 4;
      const fx = clamp((x + 0.5) * scaleX - 0.5, 0, work.width - 1);
      const fy = clamp((y + 0.5) * scaleY - 0.5, 0, work.height - 1);
      const x0 = Math.floor(fx);
      const y0 = Math.floor(fy);
      let total = 0;
      let r = 0;
      let g = 0;
      let b = 0;
      let a = 0;
      for (let k = 0; k < 4; k++) {
        const wx = Math.min(work.width - 1, x0 + (k & 1));
        const wy = Math.min(work.height - 1, y0 + (k >> 1));
        const bilinear = (k & 1 ? fx - x0 : 1 - (fx - x0)) * (k >> 1 ? fy - y0 : 1 - (fy - y0));
        const w = wy * work.width + wx;
        const sx = field.sourceX[w] ?? -1;
        if (sx < 0 || bilinear <= 0) continue;
        // Same offset as the working match, in full-resolution pixels.
        const fullX = Math.round(x + (sx - wx) / scaleX);
        const fullY = Math.round(y + ((field.sourceY[w] ?? 0) - wy) / scaleY);
        if (fullX < 0 || fullY < 0 || fullX >= crop.width || fullY >= crop.height) continue;
        const source = (crop.y + fullY) * image.width + crop.x + fullX;
        if ((mask.data[source] ?? 0) >= 128) continue;
        const weight = bilinear * (matchWeight[w] as number) + 1e-6;
        const p = source * 4;
        r += weight * (pixels[p] as number);
        g += weight * (pixels[p + 1] as number);
        b += weight * (pixels[p + 2] as number);
        a += weight * (pixels[p + 3] as number);
        total += weight;
      }
      if (total > 0) {
        out[o] = Math.round(r / total);
        out[o + 1] = Math.round(g / total);
        out[o + 2] = Math.round(b / total);
        out[o + 3] = Math.round(a / total);
        continue;
      }
      // No usable match: the working colour, interpolated.
      const i = Math.round(fy) * work.width + Math.round(fx);
      for (let c = 0; c < 3; c++) out[o + c] = Math.round(clamp(work.values[i * CHANNELS + c] ?? 0, 0, 255));
      out[o + 3] = 255;
    }
  }
  // The surroundings' tone is read beyond the rim, as the fill's sources are: the halo lies in it.
  const beyondRim = dilateAround(mask.data, mask.width, mask.height, rim, hole);
  matchBoundaryTone(out, image.width, written, { data: beyondRim, width: mask.width, height: mask.height }, crop, hole);
  return { data: out, width: image.width, height: image.height };
}

/**
 * Cells of the tone correction's grid along the crop's longer side: fine
 * enough to follow a horizon or a table edge, coarse enough that a cell's mean
 * is the surroundings' tone, not their texture.
 */
const TONE_GRID_CELLS = 32;

/**
 * Shifts the fill's tone to its surroundings': the mismatch between the known
 * pixels around the hole and the fill next to them is measured per cell of a
 * coarse grid along the hole's outline, interpolated along each grid row
 * between the outline's two sides, and added to the fill. The copied patches
 * keep their texture; only their low frequencies move. Without it, a row filled
 * from one side carries that side's tone across (Grace Hopper's flag over the
 * blue backdrop, the dark water's edge over the boats' shore).
 *
 * Along rows, not a membrane over the whole outline (Laplace's equation with
 * the mismatch as boundary values): the membrane follows the outline's shape,
 * and on the removal yardstick it drew the object back in (cameraman's ghost
 * -0.01 -> -0.18, boats' 0.01 -> 0.19), as the onion peel did before the fill
 * started row by row. Known pixels are read beyond the rim, as the fill's
 * sources are: the object's halo lies in it.
 */
function matchBoundaryTone(
  out: Uint8Array,
  imageWidth: number,
  written: GreyImage,
  grown: GreyImage,
  crop: Rect,
  hole: Rect,
): void {
  const cell = Math.max(2, Math.ceil(Math.max(crop.width, crop.height) / TONE_GRID_CELLS));
  const gw = Math.ceil(crop.width / cell);
  const gh = Math.ceil(crop.height / cell);
  // The fill lies within the hole's bounds, and only the cells within one cell of it are read: the
  // pixels of the crop beyond those are never counted (in crop pixels, whole cells).
  const holeLeft = hole.x - crop.x;
  const holeTop = hole.y - crop.y;
  const readLeft = Math.max(0, (Math.floor(holeLeft / cell) - 1) * cell);
  const readTop = Math.max(0, (Math.floor(holeTop / cell) - 1) * cell);
  const readRight = Math.min(crop.width, (Math.floor((holeLeft + hole.width - 1) / cell) + 2) * cell);
  const readBottom = Math.min(crop.height, (Math.floor((holeTop + hole.height - 1) / cell) + 2) * cell);
  const cells = gw * gh;
  const knownSum = new Float64Array(cells * 3);
  const knownSquares = new Float64Array(cells * 3);
  const knownCount = new Float64Array(cells);
  const fillSum = new Float64Array(cells * 3);
  const fillSquares = new Float64Array(cells * 3);
  const fillCount = new Float64Array(cells);
  // The grid column of each crop column, looked up: this pass and the last see every pixel of the hole's bounds.
  const cellColumn = new Int32Array(crop.width);
  for (let x = 0; x < crop.width; x++) cellColumn[x] = Math.floor(x / cell);
  const writtenData = written.data;
  const grownData = grown.data;
  for (let y = readTop; y < readBottom; y++) {
    const row = Math.floor(y / cell) * gw;
    const fullRow = (crop.y + y) * imageWidth + crop.x;
    for (let x = readLeft; x < readRight; x++) {
      const full = fullRow + x;
      const g = row + (cellColumn[x] as number);
      const o = full * 4;
      const s = g * 3;
      if ((writtenData[full] as number) >= 128) {
        for (let c = 0; c < 3; c++) {
          const value = out[o + c] as number;
          fillSum[s + c] = (fillSum[s + c] as number) + value;
          fillSquares[s + c] = (fillSquares[s + c] as number) + value * value;
        }
        fillCount[g] = (fillCount[g] as number) + 1;
      } else if ((grownData[full] as number) < 128) {
        for (let c = 0; c < 3; c++) {
          const value = out[o + c] as number;
          knownSum[s + c] = (knownSum[s + c] as number) + value;
          knownSquares[s + c] = (knownSquares[s + c] as number) + value * value;
        }
        knownCount[g] = (knownCount[g] as number) + 1;
      }
    }
  }
  // Boundary cells: fill pixels with known pixels in the 3x3 cells around; their mismatch is fixed.
  const fixed = new Uint8Array(cells);
  const correction = new Float64Array(cells * 3);
  let boundaryCount = 0;
  for (let gy = 0; gy < gh; gy++) {
    for (let gx = 0; gx < gw; gx++) {
      const g = gy * gw + gx;
      if (!fillCount[g]) continue;
      let kc = 0;
      let fc = 0;
      const ks = [0, 0, 0];
      const kq = [0, 0, 0];
      const fq = [0, 0, 0];
      const fs = [0, 0, 0];
      for (let dy = -1; dy <= 1; dy++) {
        for (let dx = -1; dx <= 1; dx++) {
          const nx = gx + dx;
          const ny = gy + dy;
          if (nx < 0 || ny < 0 || nx >= gw || ny >= gh) continue;
          const n = ny * gw + nx;
          kc += knownCount[n] ?? 0;
          fc += fillCount[n] ?? 0;
          for (let c = 0; c < 3; c++) {
            ks[c] = (ks[c] ?? 0) + (knownSum[n * 3 + c] ?? 0);
            kq[c] = (kq[c] ?? 0) + (knownSquares[n * 3 + c] ?? 0);
            fq[c] = (fq[c] ?? 0) + (fillSquares[n * 3 + c] ?? 0);
            fs[c] = (fs[c] ?? 0) + (fillSum[n * 3 + c] ?? 0);
          }
        }
      }
      // A whole cell's worth of known pixels: enough for a mean that is the surroundings' tone, not a few pixels'.
      if (kc < cell * cell || fc === 0) continue;
      fixed[g] = 1;
      for (let c = 0; c < 3; c++) {
        const mean = (ks[c] ?? 0) / kc;
        const fillMean = (fs[c] ?? 0) / fc;
        const spread = Math.sqrt(Math.max(0, (kq[c] ?? 0) / kc - mean * mean, (fq[c] ?? 0) / fc - fillMean * fillMean));
        const mismatch = mean - fillMean;
        // Only what exceeds the cells' own spread is a tone error: on stripes or bricks the two sides' means
        // differ by the share of each stripe in them, and correcting that breaks a structure continued exactly.
        correction[g * 3 + c] = Math.sign(mismatch) * Math.max(0, Math.abs(mismatch) - spread);
      }
      boundaryCount++;
    }
  }
  if (boundaryCount === 0) return;
  rowInterpolate(correction, fixed, gw, gh);
  // Each column's cells and weight between them, once.
  const leftCell = new Int32Array(hole.width);
  const rightCell = new Int32Array(hole.width);
  const rightWeight = new Float64Array(hole.width);
  for (let k = 0; k < hole.width; k++) {
    const fx = clamp((holeLeft + k + 0.5) / cell - 0.5, 0, gw - 1);
    leftCell[k] = Math.floor(fx);
    rightCell[k] = Math.min(gw - 1, Math.floor(fx) + 1);
    rightWeight[k] = fx - Math.floor(fx);
  }
  for (let y = holeTop; y < holeTop + hole.height; y++) {
    const fy = clamp((y + 0.5) / cell - 0.5, 0, gh - 1);
    const y0 = Math.floor(fy);
    const y1 = Math.min(gh - 1, y0 + 1);
    const ty = fy - y0;
    const fullRow = (crop.y + y) * imageWidth + crop.x;
    for (let x = holeLeft; x < holeLeft + hole.width; x++) {
      const full = fullRow + x;
      if ((writtenData[full] as number) < 128) continue;
      const k = x - holeLeft;
      const x0 = leftCell[k] as number;
      const x1 = rightCell[k] as number;
      const tx = rightWeight[k] as number;
      for (let c = 0; c < 3; c++) {
        const top = (1 - tx) * (correction[(y0 * gw + x0) * 3 + c] ?? 0) + tx * (correction[(y0 * gw + x1) * 3 + c] ?? 0);
        const bottom = (1 - tx) * (correction[(y1 * gw + x0) * 3 + c] ?? 0) + tx * (correction[(y1 * gw + x1) * 3 + c] ?? 0);
        out[full * 4 + c] = Math.round(clamp((out[full * 4 + c] ?? 0) + (1 - ty) * top + ty * bottom, 0, 255));
      }
    }
  }
}

/** Each grid row's free cells are interpolated between the fixed cells at their ends; rows without any take the nearest row's. */
function rowInterpolate(correction: Float64Array, fixed: Uint8Array, gw: number, gh: number): void {
  const rowHas = new Uint8Array(gh);
  for (let gy = 0; gy < gh; gy++) {
    let previous = -1;
    for (let gx = 0; gx <= gw; gx++) {
      const g = gy * gw + gx;
      if (gx < gw && !fixed[g]) continue;
      const next = gx < gw ? g : -1;
      const from = previous < 0 ? gy * gw : previous + 1;
      const to = next < 0 ? gy * gw + gw : next;
      if (previous >= 0 || next >= 0) {
        rowHas[gy] = 1;
        for (let k = from; k < to; k++) {
          const t = previous < 0 ? 1 : next < 0 ? 0 : (k - previous) / (next - previous);
          for (let c = 0; c < 3; c++) {
            const a = previous < 0 ? 0 : (correction[previous * 3 + c] ?? 0);
            const b = next < 0 ? 0 : (correction[next * 3 + c] ?? 0);
            correction[k * 3 + c] = (1 - t) * a + t * b;
          }
        }
      }
      previous = next;
    }
  }
  for (let gy = 0; gy < gh; gy++) {
    if (rowHas[gy]) continue;
    let nearest = -1;
    for (let d = 1; d < gh && nearest < 0; d++) {
      if (gy - d >= 0 && rowHas[gy - d]) nearest = gy - d;
      else if (gy + d < gh && rowHas[gy + d]) nearest = gy + d;
    }
    if (nearest < 0) return;
    for (let gx = 0; gx < gw; gx++)
      for (let c = 0; c < 3; c++) correction[(gy * gw + gx) * 3 + c] = correction[(nearest * gw + gx) * 3 + c] ?? 0;
  }
}
