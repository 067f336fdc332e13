import sharp from "sharp";
import type { Box, FaceDetection, FaceDetector, RgbaImage, WorkContext } from "../engine.ports";
import { workerScript } from "../runtime/worker-script";
import { throwIfCancelled } from "../work-checkpoint";
import { loadHumanModel, openModelThread } from "./human-model";

/**
 * Face detection, offline: MediaPipe's BlazeFace (the 256x256 "back camera"
 * model, 0.5 MB) that ships inside the `@vladmandic/human` npm package
 * (models/blazeface.json and .bin), run with TensorFlow.js on its WebAssembly
 * backend in a thread of its own per detection, like the object detector
 * (human-model.ts says why).
 *
 * BlazeFace looks at a 256x256 picture and finds faces down to about a tenth
 * of that side, so a face of 60 px in a 4000 px group photo is invisible to
 * one pass over the whole frame. The detector therefore looks at a pyramid
 * of square tiles: the whole frame, then tiles a third of the previous side,
 * overlapping by half (so a face smaller than half a tile lies whole inside
 * one of them), down to tiles of about 256 px of the photo, where the model
 * sees the photo's own pixels. Boxes found in several tiles or levels are
 * merged. docs/engine.md gives the figures this was chosen on.
 */
export interface BlazeFaceDetectorOptions {
  /** Faces whose mean score over both looks is below this are ignored. Default 0.72. */
  minScore?: number;
  /** Smallest tile side, in pixels of the photo. Default 256: below it the model would look at upscaled pixels. */
  minTile?: number;
}

/** The model's input side. */
export const BLAZEFACE_INPUT = 256;
/** Anchors: a 16x16 grid with 2 per cell, then an 8x8 grid with 6 per cell (MediaPipe's SSD anchors for this model). */
const ANCHOR_LAYERS = [
  { stride: 16, perCell: 2 },
  { stride: 32, perCell: 6 },
] as const;
/** Per anchor: the score's logit, then 16 regressors (box centre offset, size, six key points). */
export const BLAZEFACE_ROW = 17;
const ANCHORS = anchorCentres();
export const BLAZEFACE_ANCHORS = ANCHORS.length / 2;
/** Each pyramid level's tiles are this much smaller than the level above. */
const LEVEL_FACTOR = 3;
/** The smallest face the model finds reliably, as a share of the side it looks at (about 20 px of its 256). */
const SMALLEST_FACE = 1 / 12;
/** Below this tile side the model would look at upscaled pixels: faces under about 20 px are not looked for. */
const MIN_TILE = BLAZEFACE_INPUT;
/** About 20 to 40 ms each on one core: at most 2.5 s for the passes. */
const MAX_TILES = 64;
/** A box this likely is looked at again. */
const CANDIDATE_SCORE = 0.45;
/** A face is kept when the mean of its two looks' scores reaches this (docs/engine.md: how it was chosen). */
const MIN_SCORE = 0.72;

function anchorCentres(): Float32Array {
  const centres: number[] = [];
  for (const { stride, perCell } of ANCHOR_LAYERS) {
    const cells = Math.ceil(BLAZEFACE_INPUT / stride);
    for (let y = 0; y < cells; y++)
      for (let x = 0; x < cells; x++) for (let n = 0; n < perCell; n++) centres.push(stride * (x + 0.5), stride * (y + 0.5));
  }
  return Float32Array.from(centres);
}

/** A square part of the photo that the model looks at; it may reach past the photo's right and bottom edges (padded black). */
export interface Tile {
  x: number;
  y: number;
  side: number;
}

/**
 * The tiles to look at for a photo of this size, largest first: the whole
 * frame, then levels of tiles a third of the previous side, each level's
 * tiles overlapping by the largest face the level above would miss (so every
 * such face lies whole inside one tile), down to `minTile`. A level that
 * would take more tiles than are left of `maxTiles` is replaced by the
 * finest level that fits, and ends the pyramid.
 */
export function planTiles(width: number, height: number, minTile = MIN_TILE, maxTiles = MAX_TILES): Tile[] {
  const tiles: Tile[] = [{ x: 0, y: 0, side: Math.max(width, height) }];
  let previous = Math.max(width, height);
  while (previous > minTile * 1.25) {
    // Faces the level above finds from about a twelfth of its side up; this level must hold smaller ones whole.
    const overlap = previous * SMALLEST_FACE * 1.25;
    let side = Math.max(minTile, Math.round(previous / LEVEL_FACTOR));
    let level = grid(width, height, side, overlap);
    const left = maxTiles - tiles.length;
    if (level.length > left) {
      while (level.length > left && side < previous) {
        side = Math.round(side * 1.1);
        level = grid(width, height, side, overlap);
      }
      if (level.length <= left && side < previous) tiles.push(...level);
      break;
    }
    tiles.push(...level);
    previous = side;
  }
  return tiles;
}

/** Square tiles of `side` covering the photo, neighbours overlapping by at least `overlap` (at most half a tile). */
function grid(width: number, height: number, side: number, overlap: number): Tile[] {
  const step = side - Math.min(side / 2, overlap);
  const tiles: Tile[] = [];
  for (const y of positions(height, side, step)) for (const x of positions(width, side, step)) tiles.push({ x, y, side });
  return tiles;
}

/** Tile starts along one side: at most `step` apart, the last one flush with the far edge. */
function positions(length: number, side: number, step: number): number[] {
  if (side >= length) return [0];
  const count = Math.ceil((length - side) / step) + 1;
  const stride = (length - side) / (count - 1);
  return Array.from({ length: count }, (_, i) => Math.round(i * stride));
}

/** What the detection thread gets: `count` tiles of 256x256 RGB, one after another. */
export interface FaceThreadInput {
  pixels: Uint8Array;
  count: number;
}

const thread = workerScript("face-detector.worker", import.meta.url);

/**
 * Loads BlazeFace and runs it on each tile, in the calling thread
 * (face-detector.worker.ts calls it): BLAZEFACE_ROW values per anchor, per tile.
 */
export async function runBlazeFace({ pixels, count }: FaceThreadInput): Promise<Float32Array> {
  const { tf, model } = await loadHumanModel("blazeface", "face detector");
  const tileBytes = BLAZEFACE_INPUT * BLAZEFACE_INPUT * 3;
  const rows = new Float32Array(count * BLAZEFACE_ANCHORS * BLAZEFACE_ROW);
  for (let tile = 0; tile < count; tile++) {
    // The model wants -1..1.
    const input = new Float32Array(tileBytes);
    for (let i = 0; i < tileBytes; i++) input[i] = (pixels[tile * tileBytes + i] ?? 0) / 127.5 - 1;
    const outputs = tf.tidy(
      () =>
        // The 16x16 grid's scores and regressors, then the 8x8 grid's (the signature's names).
        model.execute(tf.tensor4d(input, [1, BLAZEFACE_INPUT, BLAZEFACE_INPUT, 3]), [
          "Identity",
          "Identity_2",
          "Identity_1",
          "Identity_3",
        ]) as import("@tensorflow/tfjs-core").Tensor[],
    );
    const [fineScores, fineBoxes, coarseScores, coarseBoxes] = await Promise.all(outputs.map((output) => output.data()));
    tf.dispose(outputs);
    let row = tile * BLAZEFACE_ANCHORS * BLAZEFACE_ROW;
    for (const [scores, boxes] of [
      [fineScores, fineBoxes],
      [coarseScores, coarseBoxes],
    ] as const) {
      if (!scores || !boxes) throw new Error("BlazeFace answered fewer outputs than expected");
      for (let anchor = 0; anchor < scores.length; anchor++) {
        rows[row] = scores[anchor] ?? Number.NEGATIVE_INFINITY;
        for (let k = 0; k < 16; k++) rows[row + 1 + k] = boxes[anchor * 16 + k] ?? 0;
        row += BLAZEFACE_ROW;
      }
    }
  }
  return rows;
}

/** The faces in one tile's rows, in photo pixels; `scale` is photo pixels per model pixel. */
export function decodeTile(rows: Float32Array, offset: number, tile: Tile, scale: number, minScore: number): FaceDetection[] {
  const faces: FaceDetection[] = [];
  const minLogit = Math.log(minScore / (1 - minScore));
  for (let anchor = 0; anchor < BLAZEFACE_ANCHORS; anchor++) {
    const row = offset + anchor * BLAZEFACE_ROW;
    const logit = rows[row] ?? Number.NEGATIVE_INFINITY;
    if (logit < minLogit) continue;
    const cx = (ANCHORS[anchor * 2] ?? 0) + (rows[row + 1] ?? 0);
    const cy = (ANCHORS[anchor * 2 + 1] ?? 0) + (rows[row + 2] ?? 0);
    const w = rows[row + 3] ?? 0;
    const h = rows[row + 4] ?? 0;
    if (w <= 0 || h <= 0) continue;
    faces.push({
      score: 1 / (1 + Math.exp(-logit)),
      box: { x: tile.x + (cx - w / 2) * scale, y: tile.y + (cy - h / 2) * scale, width: w * scale, height: h * scale },
    });
  }
  return faces;
}

function overlap(a: Box, b: Box): { union: number; smaller: number } {
  const x1 = Math.max(a.x, b.x);
  const y1 = Math.max(a.y, b.y);
  const x2 = Math.min(a.x + a.width, b.x + b.width);
  const y2 = Math.min(a.y + a.height, b.y + b.height);
  const intersection = Math.max(0, x2 - x1) * Math.max(0, y2 - y1);
  const areaA = a.width * a.height;
  const areaB = b.width * b.height;
  return { union: intersection / (areaA + areaB - intersection || 1), smaller: intersection / (Math.min(areaA, areaB) || 1) };
}

/**
 * One box per face: best score first, a box that overlaps a kept one (IoU over
 * 0.3, or most of the smaller inside the larger: a face cut by a tile's edge,
 * or found again at another level) is the same face.
 */
export function mergeFaces(faces: FaceDetection[]): FaceDetection[] {
  const kept: FaceDetection[] = [];
  for (const face of [...faces].sort((a, b) => b.score - a.score)) {
    if (
      !kept.some((other) => {
        const { union, smaller } = overlap(other.box, face.box);
        return union > 0.3 || smaller > 0.6;
      })
    )
      kept.push(face);
  }
  return kept;
}

export class BlazeFaceDetector implements FaceDetector {
  private readonly minScore: number;
  private readonly minTile: number;

  constructor(options: BlazeFaceDetectorOptions = {}) {
    this.minScore = options.minScore ?? MIN_SCORE;
    this.minTile = options.minTile ?? MIN_TILE;
  }

  async detectFaces(image: RgbaImage, context: WorkContext): Promise<FaceDetection[]> {
    throwIfCancelled(context.signal);
    const tiles = planTiles(image.width, image.height, this.minTile);
    const { pixels, placed } = await cutTiles(image, tiles);
    throwIfCancelled(context.signal);
    const model = openModelThread<FaceThreadInput, Float32Array>(
      thread,
      { pixels, count: placed.length },
      { signal: context.signal, what: "face detector", transfer: [pixels.buffer] },
    );
    try {
      const rows = await model.first;
      const candidates = mergeFaces(
        placed.flatMap((tile, index) =>
          decodeTile(rows, index * BLAZEFACE_ANCHORS * BLAZEFACE_ROW, tile, tile.side / BLAZEFACE_INPUT, CANDIDATE_SCORE),
        ),
      ).slice(0, MAX_TILES);
      if (candidates.length === 0) return [];
      // The second look: each candidate again, centred in a crop three times its size.
      const crops = candidates.map(({ box }) => {
        const side = Math.max(box.width, box.height) * 3;
        return { x: box.x + box.width / 2 - side / 2, y: box.y + box.height / 2 - side / 2, side };
      });
      const cropPixels = sampleCrops(image, crops);
      const checks = await model.ask({ pixels: cropPixels, count: crops.length }, [cropPixels.buffer]);
      const faces: FaceDetection[] = [];
      for (const [index, candidate] of candidates.entries()) {
        const crop = crops[index] as Tile;
        const again = decodeTile(checks, index * BLAZEFACE_ANCHORS * BLAZEFACE_ROW, crop, crop.side / BLAZEFACE_INPUT, 0.01);
        const score = (candidate.score + sameFaceScore(candidate.box, again)) / 2;
        if (score >= this.minScore) faces.push({ score, box: clip(candidate.box, image.width, image.height) });
      }
      return faces.filter(({ box }) => box.width >= 1 && box.height >= 1);
    } finally {
      model.close();
    }
  }
}

/** The best score among boxes found again at about the same place and size, 0 when none. */
function sameFaceScore(box: Box, found: FaceDetection[]): number {
  const cx = box.x + box.width / 2;
  const cy = box.y + box.height / 2;
  let best = 0;
  for (const face of found) {
    const near =
      Math.abs(face.box.x + face.box.width / 2 - cx) < box.width / 3 &&
      Math.abs(face.box.y + face.box.height / 2 - cy) < box.height / 3 &&
      face.box.width > box.width * 0.6 &&
      face.box.width < box.width * 1.6;
    if (near) best = Math.max(best, face.score);
  }
  return best;
}

/**
 * The tiles' pixels at the model's size, one after another: each pyramid
 * level's photo is resized once (libvips, antialiased), and its tiles are
 * cut from it, padded black past the edges. `placed` holds each tile where it
 * landed after rounding to the level's pixels.
 */
async function cutTiles(image: RgbaImage, tiles: Tile[]): Promise<{ pixels: Uint8Array<ArrayBuffer>; placed: Tile[] }> {
  const tileBytes = BLAZEFACE_INPUT * BLAZEFACE_INPUT * 3;
  const pixels = new Uint8Array(tiles.length * tileBytes);
  const placed: Tile[] = [];
  for (const side of [...new Set(tiles.map((tile) => tile.side))]) {
    const scale = BLAZEFACE_INPUT / side;
    const width = Math.max(1, Math.round(image.width * scale));
    const height = Math.max(1, Math.round(image.height * scale));
    const { data } = await sharp(image.data, { raw: { width: image.width, height: image.height, channels: 4 } })
      .removeAlpha()
      .resize(width, height, { fit: "fill" })
      .raw()
      .toBuffer({ resolveWithObject: true });
    const photoPerPixel = image.width / width;
    for (const tile of tiles) {
      if (tile.side !== side) continue;
      const left = Math.min(width - 1, Math.round(tile.x * scale));
      const top = Math.min(height - 1, Math.round(tile.y * scale));
      const rowBytes = Math.min(BLAZEFACE_INPUT, width - left) * 3;
      const offset = placed.length * tileBytes;
      for (let y = 0; y < BLAZEFACE_INPUT && top + y < height; y++) {
        const from = ((top + y) * width + left) * 3;
        pixels.set(data.subarray(from, from + rowBytes), offset + y * BLAZEFACE_INPUT * 3);
      }
      placed.push({ x: left * photoPerPixel, y: top * photoPerPixel, side: BLAZEFACE_INPUT * photoPerPixel });
    }
  }
  return { pixels, placed };
}

/**
 * Square crops (which may reach past the photo's edges, padded black) at the
 * model's size, each output pixel the mean of up to 4x4 photo pixels under it.
 */
export function sampleCrops(image: RgbaImage, crops: Tile[]): Uint8Array<ArrayBuffer> {
  const size = BLAZEFACE_INPUT;
  const pixels = new Uint8Array(crops.length * size * size * 3);
  for (const [index, crop] of crops.entries()) {
    const step = crop.side / size;
    const taps = Math.min(4, Math.max(1, Math.round(step)));
    for (let y = 0; y < size; y++) {
      for (let x = 0; x < size; x++) {
        let r = 0;
        let g = 0;
        let b = 0;
        for (let ty = 0; ty < taps; ty++) {
          const sy = Math.floor(crop.y + (y + (ty + 0.5) / taps) * step);
          for (let tx = 0; tx < taps; tx++) {
            const sx = Math.floor(crop.x + (x + (tx + 0.5) / taps) * step);
            if (sx < 0 || sy < 0 || sx >= image.width || sy >= image.height) continue;
            const i = (sy * image.width + sx) * 4;
            r += image.data[i] ?? 0;
            g += image.data[i + 1] ?? 0;
            b += image.data[i + 2] ?? 0;
          }
        }
        const o = ((index * size + y) * size + x) * 3;
        const n = taps * taps;
        pixels[o] = Math.round(r / n);
        pixels[o + 1] = Math.round(g / n);
        pixels[o + 2] = Math.round(b / n);
      }
    }
  }
  return pixels;
}

function clip(box: Box, width: number, height: number): Box {
  const x1 = Math.max(0, box.x);
  const y1 = Math.max(0, box.y);
  const x2 = Math.min(width, box.x + box.width);
  const y2 = Math.min(height, box.y + box.height);
  return { x: x1, y: y1, width: x2 - x1, height: y2 - y1 };
}
