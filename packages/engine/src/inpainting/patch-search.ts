import { clamp } from "../pixels/mask-ops";
import { seededRandom } from "../pixels/seeded-random";

/**
 * PatchMatch's search (Barnes et al.), the part of the fill that holds most of
 * its time: for each target pixel, propagation from the two neighbours already
 * visited in this round, then a random search at shrinking radii around the
 * current best match. Pure functions over typed arrays, so that the fill's
 * thread and its helper (patch-search.worker.ts) run the same code on the
 * same shared memory.
 *
 * A large level's targets are split into two bands, the first and second half
 * in scan order, searched side by side. So that the result does not depend on
 * whether a helper thread ran a band or the fill's own thread ran both one
 * after the other, a band reads its neighbours in the other band as they were
 * when the round started (`startX`, `startY`), never as the other band leaves
 * them, and each band draws from its own random stream, seeded per round.
 */

/** Values per pixel: R, G, B, then the two texture features (patch-inpainter.ts says why). */
export const CHANNELS = 5;

/** What the search reads of a pyramid level. */
export interface SearchLevel {
  width: number;
  height: number;
  values: Float32Array;
  /** Squared weight of the texture features in the patch distance at this level. */
  textureWeight2: number;
}

/** The nearest-neighbour field: for each target pixel, its source patch centre and distance. */
export interface SearchField {
  /** 1 where a whole patch lies outside the hole and its rim: a patch that may be copied. */
  valid: Uint8Array;
  sourceX: Int32Array;
  sourceY: Int32Array;
  distance: Float32Array;
  /** Pixels whose patch overlaps the hole, in scan order. */
  targets: Int32Array;
  /** The field as the round started: what a band reads of the other band. */
  startX: Int32Array;
  startY: Int32Array;
}

/** A share of a round: the targets from `from` (inclusive) to `to` (exclusive), in the round's direction. */
export interface Band {
  from: number;
  to: number;
  /** 1: forward in scan order; -1: backward. Rounds alternate so that good matches spread both ways. */
  step: 1 | -1;
  seed: number;
}

/**
 * Below this many targets a level's round is one band: a helper thread's
 * message costs more than it saves on the coarse levels, which the finest two
 * outweigh many times over.
 */
export const PARALLEL_MIN_TARGETS = 4096;

/** The bands of one round: two halves of the targets for a large level, else one. */
export function roundBands(targets: number, step: 1 | -1, roundSeed: number): Band[] {
  if (targets < PARALLEL_MIN_TARGETS) return [{ from: 0, to: targets, step, seed: roundSeed }];
  const middle = targets >> 1;
  return [
    { from: 0, to: middle, step, seed: roundSeed },
    // Any odd constant gives the second band a stream of its own; this one is the golden ratio's.
    { from: middle, to: targets, step, seed: (roundSeed ^ 0x9e3779b9) >>> 0 },
  ];
}

/** Keeps the field as it is now for the bands of the next round to read each other's targets. */
export function startRound(field: SearchField): void {
  field.startX.set(field.sourceX);
  field.startY.set(field.sourceY);
}

/** Searches one band, in its direction; `checkpoint` (if given) is awaited every 1024 targets. */
export async function searchBand(
  level: SearchLevel,
  field: SearchField,
  radius: number,
  band: Band,
  checkpoint?: () => Promise<void>,
): Promise<void> {
  const random = seededRandom(band.seed);
  const chunk = 1024;
  const count = band.to - band.from;
  for (let done = 0; done < count; done += chunk) {
    if (checkpoint) await checkpoint();
    searchTargets(level, field, radius, band, done, Math.min(count, done + chunk), random);
  }
}

/** The band's targets from its `begin`th to its `end`th in its direction: propagation, then random search. */
function searchTargets(
  level: SearchLevel,
  field: SearchField,
  radius: number,
  band: Band,
  begin: number,
  end: number,
  random: () => number,
): void {
  const { width, height } = level;
  const { targets, sourceX, sourceY, distance, valid, startX, startY } = field;
  const { step } = band;
  // The band's own pixels: between its first and last target (targets are in scan order).
  const first = targets[band.from] as number;
  const last = targets[band.to - 1] as number;
  const maxRadius = Math.max(width, height);
  const tryCandidate = (target: number, x: number, y: number, sx: number, sy: number) => {
    if (sx < radius || sy < radius || sx >= width - radius || sy >= height - radius) return;
    if (!valid[sy * width + sx]) return;
    if (sx === sourceX[target] && sy === sourceY[target]) return;
    const best = distance[target] as number;
    const d = patchDistance(level, radius, x, y, sx, sy, best);
    if (d < best) {
      sourceX[target] = sx;
      sourceY[target] = sy;
      distance[target] = d;
    }
  };
  for (let k = begin; k < end; k++) {
    const target = targets[step === 1 ? band.from + k : band.to - 1 - k] as number;
    const x = target % width;
    const y = (target - x) / width;
    // Propagation: a neighbour's match, shifted by one pixel, often fits here too.
    const horizontal = target - step;
    if (x - step >= 0 && x - step < width) {
      const own = horizontal >= first && horizontal <= last;
      const nx = (own ? sourceX[horizontal] : startX[horizontal]) as number;
      if (nx >= 0) tryCandidate(target, x, y, nx + step, (own ? sourceY[horizontal] : startY[horizontal]) as number);
    }
    const vertical = target - step * width;
    if (y - step >= 0 && y - step < height) {
      const own = vertical >= first && vertical <= last;
      const nx = (own ? sourceX[vertical] : startX[vertical]) as number;
      if (nx >= 0) tryCandidate(target, x, y, nx, ((own ? sourceY[vertical] : startY[vertical]) as number) + step);
    }
    // Random search around the current best at exponentially shrinking radii.
    for (let r = maxRadius; r >= 1; r = Math.floor(r / 2)) {
      const bx = sourceX[target] as number;
      const by = sourceY[target] as number;
      const sx = clamp(bx + Math.round((random() * 2 - 1) * r), radius, width - radius - 1);
      const sy = clamp(by + Math.round((random() * 2 - 1) * r), radius, height - radius - 1);
      tryCandidate(target, x, y, sx, sy);
    }
  }
}

/**
 * Sum of squared colour differences between the patch at (x, y), clipped to
 * the image, and the patch at (sx, sy), which is always inside. Stops early
 * once over `limit`. A target patch wholly inside the image (nearly every one)
 * is read as runs of values, without clipping per pixel; the sum is the same,
 * term by term in the same order.
 */
export function patchDistance(
  level: SearchLevel,
  radius: number,
  x: number,
  y: number,
  sx: number,
  sy: number,
  limit: number,
): number {
  const { width, height, values, textureWeight2 } = level;
  let sum = 0;
  if (x >= radius && y >= radius && x < width - radius && y < height - radius) {
    const run = (2 * radius + 1) * CHANNELS;
    const stride = width * CHANNELS;
    let t = ((y - radius) * width + x - radius) * CHANNELS;
    let s = ((sy - radius) * width + sx - radius) * CHANNELS;
    for (let row = -radius; row <= radius; row++, t += stride, s += stride) {
      for (let k = 0; k < run; k += CHANNELS) sum += pixelDistance(values, t + k, s + k, textureWeight2);
      if (sum > limit) return sum;
    }
    return sum;
  }
  for (let dy = -radius; dy <= radius; dy++) {
    const ty = y + dy;
    if (ty < 0 || ty >= height) continue;
    const targetRow = ty * width;
    const sourceRow = (sy + dy) * width;
    for (let dx = -radius; dx <= radius; dx++) {
      const tx = x + dx;
      if (tx < 0 || tx >= width) continue;
      sum += pixelDistance(values, (targetRow + tx) * CHANNELS, (sourceRow + sx + dx) * CHANNELS, textureWeight2);
    }
    if (sum > limit) return sum;
  }
  return sum;
}

/** One pixel's term of the distance: colour and the weighted texture features (V8 inlines it). */
function pixelDistance(values: Float32Array, t: number, s: number, textureWeight2: number): number {
  const d0 = (values[t] as number) - (values[s] as number);
  const d1 = (values[t + 1] as number) - (values[s + 1] as number);
  const d2 = (values[t + 2] as number) - (values[s + 2] as number);
  const d3 = (values[t + 3] as number) - (values[s + 3] as number);
  const d4 = (values[t + 4] as number) - (values[s + 4] as number);
  return d0 * d0 + d1 * d1 + d2 * d2 + textureWeight2 * (d3 * d3 + d4 * d4);
}
