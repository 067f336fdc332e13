import { existsSync } from "node:fs";
import path from "node:path";
import sharp from "sharp";
import type { GreyImage, Inpainter, RgbaImage, WorkContext } from "../engine.ports";
import { EngineError } from "../engine-error";
import type { InpaintingModelKind } from "../models/model-catalog";
import { type OnnxModelSpec, type OnnxRunner, sharedOnnxRunner, type Tensor, type TensorInfo } from "../models/onnx-runner";
import { boxBlur, copyBytes, dilate, labelComponents } from "../pixels/mask-ops";
import { createCheckpoint, throwIfCancelled } from "../work-checkpoint";

/**
 * Learned inpainting with an ONNX model: LaMa (Carve's export of big-lama)
 * or MI-GAN (its authors' ONNX pipeline), run by the engine's ONNX runner.
 *
 * Both run on a square of `size` pixels (512), so the picture is not fed
 * whole: as IOPaint's "crop" strategy does, each hole gets a crop of the
 * picture around it with context on every side, resized to the model's
 * square (mirrored at the edges where the picture cannot give a square, or
 * cannot give as much context as the hole is large), and
 * the model's answer is resized back and pasted inside the hole only, with a
 * feathered edge a few pixels wide. Every pixel beyond that edge keeps the
 * input's bytes. Holes whose crops would overlap share one crop, so a crop
 * never shows the model a hole it is not asked to fill.
 *
 * The two kinds differ only in their tensors:
 * - `lama`: image float32 1x3xSxS, RGB in 0..1; mask float32 1x1xSxS, 1 = fill;
 *   output float32 1x3xSxS, RGB in 0..255 (uint8 accepted too).
 * - `migan`: image uint8 1x3xHxW; mask uint8 1x1xHxW, 255 = keep, 0 = fill;
 *   output uint8 1x3xHxW (the pipeline composes the kept pixels itself and
 *   resizes to 512 inside, so it is fed 512 squares and does no resizing).
 */
export interface OnnxInpainterOptions {
  modelPath: string;
  kind: InpaintingModelKind;
  /** The square side fed to a model whose input declares no fixed size. Default 512 (both models' training size). */
  size?: number;
  /** Where the model runs. Default: this thread's shared runner. */
  runner?: OnnxRunner;
}

const DEFAULT_SIZE = 512;
/** Context around a hole: at least this many pixels (IOPaint's crop margin)... */
const MIN_MARGIN = 128;
/** ...and at least this share of the hole's longer side on each side, so a large hole keeps its surroundings in view. */
const MARGIN_SHARE = 0.5;
/**
 * The most of the model's square a hole may span (its longer side). Given an object-shaped hole that fills most
 * of its square, MI-GAN draws an object back into it (a figure where the footballer stood, a cart for the
 * motorcycle: 7 of the removal yardstick's 15 cases at full span, 4 at a half; docs/engine.md).
 */
const MAX_HOLE_SHARE = 0.5;
/** Holes are found on a grid of cells this many pixels wide: a 12 MP mask costs kilobytes, not a label per pixel. */
const CELL = 8;
/** How far into a hole MI-GAN's pipeline blends its input back (a 3x3 max pool and a 5x5 Gaussian), in model pixels. */
const MIGAN_COMPOSE_REACH = 3;

const CONTRACTS: Record<InpaintingModelKind, { title: string; type: "float32" | "uint8"; text: string }> = {
  lama: {
    title: "LaMa",
    type: "float32",
    text: "image float32 1x3xSxS in 0..1 and mask float32 1x1xSxS (1 = fill), output 1x3xSxS in 0..255",
  },
  migan: {
    title: "MI-GAN pipeline",
    type: "uint8",
    text: "image uint8 1x3xHxW and mask uint8 1x1xHxW (255 = keep), output uint8 1x3xHxW",
  },
};

/** How the model is fed, read from what it declares. */
interface Contract {
  imageName: string;
  maskName: string;
  /** The square side it is fed. */
  size: number;
}

/** A rectangle in image pixels, end exclusive. */
interface Area {
  x0: number;
  y0: number;
  x1: number;
  y1: number;
}

export class OnnxInpainter implements Inpainter {
  private readonly runner: OnnxRunner;
  private readonly spec: OnnxModelSpec;
  private contract: Promise<Contract> | undefined;

  constructor(private readonly options: OnnxInpainterOptions) {
    // A wrong path is a configuration mistake: say so at start, not at the first job.
    if (!existsSync(options.modelPath)) throw new Error(`Inpainting model not found: ${options.modelPath}`);
    this.runner = options.runner ?? sharedOnnxRunner();
    // MI-GAN's pipeline is fed 512 squares only, so onnxruntime's memory pattern fits every run: measured on 2 cores,
    // 0.69 s a square at 188 MiB of RSS with it against 2.5 s without (and 0.62 s at 911 MiB with the arena instead).
    this.spec = { path: options.modelPath, memoryPattern: options.kind === "migan" };
  }

  /** Loads the model now and checks that it takes what its kind takes; a model that does not fails every edit with model_failed. */
  async load(): Promise<void> {
    await this.loadContract();
  }

  /** Gives the model's session back (after the runs queued on it); the next fill loads it again. */
  release(): void {
    this.runner.release?.([this.spec]);
  }

  async inpaint(image: RgbaImage, mask: GreyImage, context: WorkContext): Promise<RgbaImage> {
    const checkpoint = createCheckpoint(context.signal);
    const contract = await this.loadContract();
    const hole = new Uint8Array(mask.data.length);
    for (let i = 0; i < hole.length; i++) hole[i] = (mask.data[i] ?? 0) >= 128 ? 255 : 0;
    const output = { data: copyBytes(image.data), width: image.width, height: image.height };
    for (const { crop, box } of cropsFor(hole, image.width, image.height)) {
      await checkpoint();
      const fill = await this.fillCrop(image, hole, crop, box, contract, context);
      await checkpoint();
      paste(output, hole, crop, box, fill);
    }
    return output;
  }

  private loadContract(): Promise<Contract> {
    this.contract ??= this.runner.load(this.spec).then((info) => readContract(info, this.options, this.spec.path));
    // A failed load is retried by the next edit rather than cached.
    this.contract.catch(() => {
      this.contract = undefined;
    });
    return this.contract;
  }

  /** The model's pixels for one crop, at the crop's full-resolution size (RGB), and how wide their edge is blended. */
  private async fillCrop(
    image: RgbaImage,
    hole: Uint8Array,
    crop: Area,
    box: Area,
    contract: Contract,
    context: WorkContext,
  ): Promise<Fill> {
    const { size } = contract;
    const cropWidth = crop.x1 - crop.x0;
    const cropHeight = crop.y1 - crop.y0;
    // The crop fills the square, unless its hole would then span more than MAX_HOLE_SHARE of it: a crop the picture
    // could not make wider is shrunk and mirrored out to the square instead, so the model sees as much around the
    // hole as the hole itself.
    const holeSide = Math.max(box.x1 - box.x0, box.y1 - box.y0);
    const scale = Math.min(size / Math.max(cropWidth, cropHeight), (MAX_HOLE_SHARE * size) / holeSide);
    const width = Math.max(1, Math.min(size, Math.round(cropWidth * scale)));
    const height = Math.max(1, Math.min(size, Math.round(cropHeight * scale)));
    const rgb = await sharp(image.data, { raw: { width: image.width, height: image.height, channels: 4 } })
      .extract({ left: crop.x0, top: crop.y0, width: cropWidth, height: cropHeight })
      .removeAlpha()
      .resize(width, height, { fit: "fill" })
      .raw()
      .toBuffer();
    const modelHole = holeAtModelSize(hole, image.width, crop, width, height);
    const feeds = this.tensors(rgb, modelHole, width, height, contract);
    throwIfCancelled(context.signal);
    const output = await this.runner.runFeeds(this.spec, feeds, context.signal);
    throwIfCancelled(context.signal);
    const filled = this.readOutput(output, width, height, size);
    const back = await sharp(filled, { raw: { width, height, channels: 3 } })
      .resize(cropWidth, cropHeight, { fit: "fill" })
      .raw()
      .toBuffer();
    // The fill is as sharp as the model's pixels: its edge is blended over about one of them, two picture pixels at least.
    return { rgb: back, radius: Math.max(1, Math.ceil(0.5 / scale)) };
  }

  /** The model's two inputs: the crop at `width`x`height` mirrored out to the square, hole pixels blanked, and the hole. */
  private tensors(
    rgb: Uint8Array,
    modelHole: Uint8Array,
    width: number,
    height: number,
    contract: Contract,
  ): Record<string, Tensor> {
    const { size } = contract;
    const plane = size * size;
    const lama = this.options.kind === "lama";
    // MI-GAN's pipeline composes its answer with the input itself, the kept side grown by a pixel and blurred
    // (max pool 3x3, then a 5x5 Gaussian): told the hole, it would keep a blend of the blanked pixels on the hole's
    // inner rim, a dark outline. Told a hole wider by that reach, its composed rim falls outside what is pasted.
    const told = lama ? modelHole : dilate(modelHole, width, height, MIGAN_COMPOSE_REACH);
    const image = lama ? new Float32Array(3 * plane) : new Uint8Array(3 * plane);
    const mask = lama ? new Float32Array(plane) : new Uint8Array(plane);
    for (let y = 0; y < size; y++) {
      const sy = mirror(y, height);
      for (let x = 0; x < size; x++) {
        const sx = mirror(x, width);
        const source = sy * width + sx;
        const target = y * size + x;
        // The padding beyond the crop is the picture mirrored, and so is the hole: where the mirror shows the object,
        // the model is told to fill it too (and its answer there is thrown away), or it would take the object as context.
        const fill = modelHole[source] !== 0;
        if (lama) mask[target] = fill ? 1 : 0;
        else mask[target] = told[source] !== 0 ? 0 : 255;
        // The thing being removed never reaches the model.
        if (fill) continue;
        for (let c = 0; c < 3; c++) {
          const value = rgb[source * 3 + c] ?? 0;
          image[c * plane + target] = lama ? value / 255 : value;
        }
      }
    }
    return {
      [contract.imageName]: { data: image, dims: [1, 3, size, size] },
      [contract.maskName]: { data: mask, dims: [1, 1, size, size] },
    };
  }

  /** The output's top-left `width`x`height` (the crop; the rest is padding) as RGB bytes. */
  private readOutput(output: Tensor, width: number, height: number, size: number): Uint8Array {
    const { dims, data } = output;
    if (dims.length !== 4 || dims[1] !== 3 || dims[2] !== size || dims[3] !== size) {
      throw new EngineError(
        "model_failed",
        `The inpainting model ${path.basename(this.spec.path)} answered a ${dims.join("x")} tensor; a 1x3x${size}x${size} image was expected.`,
      );
    }
    const plane = size * size;
    const rgb = new Uint8Array(width * height * 3);
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        for (let c = 0; c < 3; c++) {
          const value = data[c * plane + y * size + x] ?? 0;
          // Both kinds answer on the 0..255 scale (LaMa's export as floats).
          rgb[(y * width + x) * 3 + c] = value <= 0 ? 0 : value >= 255 ? 255 : Math.round(value);
        }
      }
    }
    return rgb;
  }
}

/** Index into [0, length) reflected at the end (symmetric padding, as IOPaint pads). */
function mirror(index: number, length: number): number {
  if (index < length) return index;
  const period = 2 * length;
  const folded = index % period;
  return folded < length ? folded : period - 1 - folded;
}

/**
 * Whether the model's pixel covers any hole pixel: the crop's hole widened by
 * half a model pixel (in picture pixels), then sampled at each model pixel's
 * centre. A model pixel half covered by the object is hole, not context.
 */
function holeAtModelSize(hole: Uint8Array, imageWidth: number, crop: Area, width: number, height: number): Uint8Array {
  const cropWidth = crop.x1 - crop.x0;
  const cropHeight = crop.y1 - crop.y0;
  const local = new Uint8Array(cropWidth * cropHeight);
  for (let y = 0; y < cropHeight; y++) {
    const row = (crop.y0 + y) * imageWidth + crop.x0;
    local.set(hole.subarray(row, row + cropWidth), y * cropWidth);
  }
  const step = Math.max(cropWidth / width, cropHeight / height);
  const widened = dilate(local, cropWidth, cropHeight, Math.ceil(step / 2));
  const out = new Uint8Array(width * height);
  for (let y = 0; y < height; y++) {
    const sy = Math.min(cropHeight - 1, Math.floor(((y + 0.5) * cropHeight) / height));
    for (let x = 0; x < width; x++) {
      const sx = Math.min(cropWidth - 1, Math.floor(((x + 0.5) * cropWidth) / width));
      out[y * width + x] = widened[sy * cropWidth + sx] ?? 0;
    }
  }
  return out;
}

interface Fill {
  /** RGB at the crop's size. */
  rgb: Uint8Array;
  /** The blended edge reaches twice this many pixels beyond the hole. */
  radius: number;
}

/**
 * Blends the fill into `output` inside the hole: opaque on the hole, fading
 * over twice the fill's radius beyond it. Outside that band nothing is written.
 */
function paste(output: RgbaImage, hole: Uint8Array, crop: Area, box: Area, fill: Fill): void {
  const { radius } = fill;
  const cropWidth = crop.x1 - crop.x0;
  // Only around the holes: the band, and a pixel more for the blur's window.
  const x0 = Math.max(crop.x0, box.x0 - 2 * radius - 1);
  const y0 = Math.max(crop.y0, box.y0 - 2 * radius - 1);
  const x1 = Math.min(crop.x1, box.x1 + 2 * radius + 1);
  const y1 = Math.min(crop.y1, box.y1 + 2 * radius + 1);
  const width = x1 - x0;
  const height = y1 - y0;
  const local = new Uint8Array(width * height);
  for (let y = 0; y < height; y++) {
    const row = (y0 + y) * output.width + x0;
    local.set(hole.subarray(row, row + width), y * width);
  }
  // A box blur of the hole widened by the radius: 255 on the hole, 0 beyond twice the radius.
  const alpha = boxBlur(Float32Array.from(dilate(local, width, height, radius)), width, height, radius);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = y * width + x;
      const a = local[i] ? 255 : Math.round(alpha[i] ?? 0);
      if (a === 0) continue;
      const target = ((y0 + y) * output.width + x0 + x) * 4;
      const source = ((y0 - crop.y0 + y) * cropWidth + (x0 - crop.x0 + x)) * 3;
      for (let c = 0; c < 3; c++) {
        const value = fill.rgb[source + c] ?? 0;
        output.data[target + c] = a === 255 ? value : Math.round(((output.data[target + c] ?? 0) * (255 - a) + value * a) / 255);
      }
    }
  }
}

/**
 * One crop per hole, as IOPaint's crop strategy: a square around the hole's
 * bounding box with a margin on each side, moved inside the picture (and cut
 * to it where the picture is smaller). Holes whose crops overlap are merged
 * into one crop, until no two crops overlap: each crop then holds its own
 * holes (`box` bounds them) and no other.
 */
function cropsFor(hole: Uint8Array, width: number, height: number): { crop: Area; box: Area }[] {
  let boxes = holeBoxes(hole, width, height);
  for (;;) {
    const crops = boxes.map((box) => cropAround(box, width, height));
    const merged = mergeOverlapping(boxes, crops);
    if (merged.length === boxes.length) return boxes.map((box, i) => ({ box, crop: crops[i] as Area }));
    boxes = merged;
  }
}

function cropAround(box: Area, width: number, height: number): Area {
  const side = Math.max(box.x1 - box.x0, box.y1 - box.y0);
  const full = side + 2 * Math.max(MIN_MARGIN, Math.round(MARGIN_SHARE * side));
  const place = (start: number, end: number, limit: number): [number, number] => {
    const length = Math.min(full, limit);
    const from = Math.round((start + end - length) / 2);
    const clamped = Math.min(Math.max(0, from), limit - length);
    return [clamped, clamped + length];
  };
  const [x0, x1] = place(box.x0, box.x1, width);
  const [y0, y1] = place(box.y0, box.y1, height);
  return { x0, y0, x1, y1 };
}

const overlaps = (a: Area, b: Area) => a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;

/** Bounding boxes of holes, joined where their crops overlap. */
function mergeOverlapping(boxes: Area[], crops: Area[]): Area[] {
  const group = boxes.map((_, i) => i);
  const root = (i: number): number => {
    let r = i;
    while (group[r] !== r) r = group[r] ?? r;
    return r;
  };
  for (let i = 0; i < crops.length; i++) {
    for (let j = i + 1; j < crops.length; j++) {
      if (overlaps(crops[i] as Area, crops[j] as Area)) group[root(j)] = root(i);
    }
  }
  const joined = new Map<number, Area>();
  boxes.forEach((box, i) => {
    const r = root(i);
    const current = joined.get(r);
    joined.set(
      r,
      current
        ? {
            x0: Math.min(current.x0, box.x0),
            y0: Math.min(current.y0, box.y0),
            x1: Math.max(current.x1, box.x1),
            y1: Math.max(current.y1, box.y1),
          }
        : box,
    );
  });
  return [...joined.values()];
}

/** The exact bounding box of each separate hole, found on a grid of cells (connected cells form one hole). */
function holeBoxes(hole: Uint8Array, width: number, height: number): Area[] {
  const cellsWide = Math.ceil(width / CELL);
  const cellsHigh = Math.ceil(height / CELL);
  const cells = new Uint8Array(cellsWide * cellsHigh);
  for (let y = 0; y < height; y++) {
    const row = y * width;
    const cellRow = Math.floor(y / CELL) * cellsWide;
    for (let x = 0; x < width; x++) if (hole[row + x]) cells[cellRow + Math.floor(x / CELL)] = 1;
  }
  const { labels, sizes } = labelComponents(cellsWide, cellsHigh, (i) => cells[i] === 1);
  const boxes: Area[] = sizes.slice(1).map(() => ({ x0: width, y0: height, x1: 0, y1: 0 }));
  for (let cy = 0; cy < cellsHigh; cy++) {
    for (let cx = 0; cx < cellsWide; cx++) {
      const label = labels[cy * cellsWide + cx] ?? 0;
      const box = boxes[label - 1];
      if (!box) continue;
      // The cell's own hole pixels make the box exact.
      for (let y = cy * CELL; y < Math.min(height, (cy + 1) * CELL); y++) {
        for (let x = cx * CELL; x < Math.min(width, (cx + 1) * CELL); x++) {
          if (!hole[y * width + x]) continue;
          box.x0 = Math.min(box.x0, x);
          box.y0 = Math.min(box.y0, y);
          box.x1 = Math.max(box.x1, x + 1);
          box.y1 = Math.max(box.y1, y + 1);
        }
      }
    }
  }
  return boxes;
}

/**
 * Checks what the model declares against its kind's contract and says how to
 * feed it: which input is the image and which the mask, and the square side.
 */
function readContract(
  info: { inputs: TensorInfo[]; outputs: TensorInfo[] },
  options: OnnxInpainterOptions,
  modelPath: string,
): Contract {
  const contract = CONTRACTS[options.kind];
  const refuse = (problem: string) =>
    new EngineError(
      "model_failed",
      `The inpainting model ${path.basename(modelPath)} is not a ${contract.title} model as configured (${contract.text}): ${problem}.`,
    );
  const describe = (tensor: TensorInfo) =>
    `"${tensor.name}" is ${tensor.type} ${tensor.shape.length ? tensor.shape.join("x") : "of undeclared shape"}`;
  if (info.inputs.length !== 2) {
    throw refuse(
      `it takes ${info.inputs.length} input${info.inputs.length === 1 ? "" : "s"} (${info.inputs.map(describe).join("; ")}), not 2`,
    );
  }
  // The one named "mask" (both publishers' name), else the second, as both publishers order them.
  const named = info.inputs.findIndex((input) => /mask/i.test(input.name));
  const mask = info.inputs[named >= 0 ? named : 1] as TensorInfo;
  const image = info.inputs.find((input) => input !== mask) as TensorInfo;
  const output = info.outputs[0];
  for (const [tensor, channels] of [
    [image, 3],
    [mask, 1],
  ] as const) {
    if (tensor.type !== contract.type) throw refuse(`its input ${describe(tensor)}`);
    if (tensor.shape.length > 0 && (tensor.shape.length !== 4 || !fits(tensor.shape[1], channels) || !fits(tensor.shape[0], 1))) {
      throw refuse(`its input ${describe(tensor)}`);
    }
  }
  if (!output || !["float32", "uint8"].includes(output.type)) {
    throw refuse(output ? `its output ${describe(output)}` : "it has no output");
  }
  if (output.shape.length > 0 && (output.shape.length !== 4 || !fits(output.shape[1], 3))) {
    throw refuse(`its output ${describe(output)}`);
  }
  const [, , height, width] = image.shape;
  const fixed = typeof height === "number" && typeof width === "number" && height > 0 && width > 0;
  if (fixed && height !== width) throw refuse(`its input ${describe(image)} is not square`);
  return { imageName: image.name, maskName: mask.name, size: fixed ? (height as number) : (options.size ?? DEFAULT_SIZE) };
}

/** A declared dimension that admits `value`: that number, or a symbolic one. */
function fits(dimension: number | string | undefined, value: number): boolean {
  return typeof dimension !== "number" || dimension === value || dimension <= 0;
}
