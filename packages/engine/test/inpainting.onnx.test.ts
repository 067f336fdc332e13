import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import sharp from "sharp";
import { beforeAll, describe, expect, it } from "vitest";
import type { GreyImage, RgbaImage } from "../src/engine.ports";
import { OnnxInpainter } from "../src/inpainting/inpainting.onnx";
import { LEARNED_FILL_MAX_PIXELS } from "../src/inpainting/size-routed-inpainter";
import type { Tensor } from "../src/models/onnx-runner";
import { decodeImage } from "../src/pixels/image-codec";
import { dilate } from "../src/pixels/mask-ops";
import { createImageEngine } from "../src/workflows/engine";
import { meanColourLamaModel, meanColourMiganModel, redSaliencyModel } from "./onnx-model.builder";
import { RecordingRunner } from "./recording-runner";

/**
 * The ONNX inpainter with tiny models of each kind's exact contract (built in
 * onnx-model.builder.ts): they paint every hole pixel the mean colour of the
 * pixels the mask keeps, so the result says what the model was shown. The
 * picture is two ramps, red across and green down, so any colour the model
 * was fed says where in the picture it came from.
 */

const WIDTH = 800;
const HEIGHT = 600;
const red = (x: number, width = WIDTH) => Math.round((x * 255) / (width - 1));
const green = (y: number, height = HEIGHT) => Math.round((y * 255) / (height - 1));

function ramps(width = WIDTH, height = HEIGHT): RgbaImage {
  const data = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) data.set([red(x, width), green(y, height), 128, 255], (y * width + x) * 4);
  }
  return { data, width, height };
}

interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

function maskOf(width: number, height: number, rects: Rect[]): GreyImage {
  const data = new Uint8Array(width * height);
  for (const r of rects) for (let y = r.y; y < r.y + r.height; y++) data.fill(255, y * width + r.x, y * width + r.x + r.width);
  return { data, width, height };
}

let directory: string;
const modelFile = async (name: string, bytes: Buffer) => {
  const file = path.join(directory, name);
  await writeFile(file, bytes);
  return file;
};
let lamaPath: string;
let miganPath: string;

beforeAll(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), "retouch-inpainting-"));
  lamaPath = await modelFile("lama-mean.onnx", meanColourLamaModel());
  miganPath = await modelFile("migan-mean.onnx", meanColourMiganModel());
});

/** What one forward pass was shown, read back as picture coordinates through the ramps. */
interface Seen {
  size: number;
  /** The hole's bounding box in the model's pixels. */
  hole: { x0: number; y0: number; x1: number; y1: number };
  /** The picture's columns and rows the fed image spans (from its red and green values). */
  columns: [number, number];
  rows: [number, number];
  /**
   * Whether every hole pixel was blanked (the object never reaches the model), but for a rim of `rim` pixels
   * inside the hole's edge: MI-GAN is told a hole that much wider, whose rim its pipeline composes back.
   */
  holeBlank: boolean;
  /** The mean colour (0..255) of the pixels the mask keeps: what the test models paint. */
  keptMean: [number, number, number];
  /** Red and green just left and right of, and above and below, the hole's middle. */
  besideHole: { left: number; right: number; above: number; below: number };
}

function seen(feeds: Record<string, Tensor>, kind: "lama" | "migan"): Seen {
  const image = feeds.image as Tensor;
  const mask = feeds.mask as Tensor;
  const size = image.dims[2] ?? 0;
  const plane = size * size;
  const scale = kind === "lama" ? 255 : 1;
  const isHole = (i: number) => (kind === "lama" ? mask.data[i] === 1 : mask.data[i] === 0);
  const rim = kind === "lama" ? 0 : 3;
  const kept = Uint8Array.from({ length: plane }, (_, i) => (isHole(i) ? 0 : 255));
  const nearKept = dilate(kept, size, size, rim);
  const hole = { x0: size, y0: size, x1: 0, y1: 0 };
  let holeBlank = true;
  const sums = [0, 0, 0];
  let keptCount = 0;
  let [minR, maxR, minG, maxG] = [255, 0, 255, 0];
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const i = y * size + x;
      const rgb = [0, 1, 2].map((c) => (image.data[c * plane + i] ?? 0) * scale);
      if (isHole(i)) {
        hole.x0 = Math.min(hole.x0, x);
        hole.y0 = Math.min(hole.y0, y);
        hole.x1 = Math.max(hole.x1, x + 1);
        hole.y1 = Math.max(hole.y1, y + 1);
        if (!nearKept[i] && rgb.some((value) => value !== 0)) holeBlank = false;
        continue;
      }
      keptCount++;
      rgb.forEach((value, c) => {
        sums[c] = (sums[c] ?? 0) + value;
      });
      minR = Math.min(minR, rgb[0] ?? 0);
      maxR = Math.max(maxR, rgb[0] ?? 0);
      minG = Math.min(minG, rgb[1] ?? 0);
      maxG = Math.max(maxG, rgb[1] ?? 0);
    }
  }
  const at = (x: number, y: number, c: number) => (image.data[c * plane + y * size + x] ?? 0) * scale;
  const midX = Math.floor((hole.x0 + hole.x1) / 2);
  const midY = Math.floor((hole.y0 + hole.y1) / 2);
  return {
    size,
    hole,
    columns: [(minR * (WIDTH - 1)) / 255, (maxR * (WIDTH - 1)) / 255],
    rows: [(minG * (HEIGHT - 1)) / 255, (maxG * (HEIGHT - 1)) / 255],
    holeBlank,
    keptMean: sums.map((sum) => sum / keptCount) as [number, number, number],
    besideHole: {
      left: at(hole.x0 - 1, midY, 0),
      right: at(hole.x1, midY, 0),
      above: at(midX, hole.y0 - 1, 1),
      below: at(midX, hole.y1, 1),
    },
  };
}

/** Pixels of `rect` in the result, as distinct RGB colours. */
function coloursIn(image: RgbaImage, rect: Rect): Set<string> {
  const colours = new Set<string>();
  for (let y = rect.y; y < rect.y + rect.height; y++) {
    for (let x = rect.x; x < rect.x + rect.width; x++) {
      const i = (y * image.width + x) * 4;
      colours.add(`${image.data[i]},${image.data[i + 1]},${image.data[i + 2]}`);
    }
  }
  return colours;
}

function expectFilledWith(result: RgbaImage, rect: Rect, mean: [number, number, number]): void {
  for (let y = rect.y; y < rect.y + rect.height; y++) {
    for (let x = rect.x; x < rect.x + rect.width; x++) {
      const i = (y * result.width + x) * 4;
      for (let c = 0; c < 3; c++) expect(Math.abs((result.data[i + c] ?? 0) - (mean[c] ?? 0))).toBeLessThanOrEqual(1);
    }
  }
}

/** How many pixels farther than `band` from the hole differ in any byte (alpha included). */
function changedBeyond(result: RgbaImage, input: RgbaImage, mask: GreyImage, band: number): number {
  const near = dilate(mask.data, mask.width, mask.height, band);
  let changed = 0;
  for (let i = 0; i < near.length; i++) {
    if (near[i]) continue;
    for (let c = 0; c < 4; c++) if (result.data[i * 4 + c] !== input.data[i * 4 + c]) changed++;
  }
  return changed;
}

describe("OnnxInpainter, LaMa's contract", () => {
  const hole = { x: 560, y: 380, width: 60, height: 40 };

  it("feeds a crop around the hole with context on every side, and pastes the model's pixels inside the hole only", async () => {
    const runner = new RecordingRunner();
    const inpainter = new OnnxInpainter({ modelPath: lamaPath, kind: "lama", runner });
    const image = ramps();
    const mask = maskOf(WIDTH, HEIGHT, [hole]);
    const result = await inpainter.inpaint(image, mask, {});

    expect(runner.passes).toHaveLength(1);
    const feeds = runner.passes[0]?.feeds as Record<string, Tensor>;
    expect(feeds.image?.dims).toEqual([1, 3, 512, 512]);
    expect(feeds.image?.data).toBeInstanceOf(Float32Array);
    expect(feeds.mask?.dims).toEqual([1, 1, 512, 512]);
    expect(new Set(feeds.mask?.data)).toEqual(new Set([0, 1]));
    const view = seen(feeds, "lama");
    // A crop of the picture around the hole, not the whole picture: the hole with at least 64 pixels of it on every side.
    expect(view.columns[0]).toBeLessThan(hole.x - 64);
    expect(view.columns[1]).toBeGreaterThan(hole.x + hole.width + 64);
    expect(view.rows[0]).toBeLessThan(hole.y - 64);
    expect(view.rows[1]).toBeGreaterThan(hole.y + hole.height + 64);
    expect(view.columns[1] - view.columns[0]).toBeLessThan(WIDTH / 2);
    // The fed hole is where the picture's hole is: the pixels beside it are the picture's just beside the hole.
    expect(Math.abs(view.besideHole.left - red(hole.x - 1))).toBeLessThanOrEqual(2);
    expect(Math.abs(view.besideHole.right - red(hole.x + hole.width))).toBeLessThanOrEqual(2);
    expect(Math.abs(view.besideHole.above - green(hole.y - 1))).toBeLessThanOrEqual(2);
    expect(Math.abs(view.besideHole.below - green(hole.y + hole.height))).toBeLessThanOrEqual(2);
    expect(view.holeBlank).toBe(true);

    // The hole has the model's pixels: the mean of what it was shown, which is not the picture's own mean.
    expectFilledWith(result, hole, view.keptMean);
    expect(Math.abs(view.keptMean[0] - 127.5)).toBeGreaterThan(30);
    // Beyond a feathered edge of two pixels, every byte is the input's.
    expect(changedBeyond(result, image, mask, 2)).toBe(0);
    expect(changedBeyond(result, image, mask, 0)).toBeGreaterThan(0);
  });

  it("gives distant holes a crop each, holes close together one, and fills each with its own crop's answer", async () => {
    const width = 1600;
    const height = 1200;
    const runner = new RecordingRunner();
    const inpainter = new OnnxInpainter({ modelPath: lamaPath, kind: "lama", runner });
    const image = ramps(width, height);
    const topLeft = { x: 40, y: 40, width: 30, height: 30 };
    const bottomRight = { x: 1500, y: 1100, width: 40, height: 40 };
    const pair = [
      { x: 780, y: 580, width: 20, height: 20 },
      { x: 830, y: 580, width: 20, height: 20 },
    ];
    const mask = maskOf(width, height, [topLeft, bottomRight, ...pair]);
    const result = await inpainter.inpaint(image, mask, {});

    expect(runner.passes).toHaveLength(3);
    const holesFed = runner.passes.map(({ feeds }) => {
      const data = (feeds as Record<string, Tensor>).mask?.data ?? new Float32Array();
      return Array.from(data).reduce((count: number, value) => count + (value === 1 ? 1 : 0), 0);
    });
    const topLeftColour = [...coloursIn(result, topLeft)];
    const bottomRightColour = [...coloursIn(result, bottomRight)];
    const pairColours = pair.map((rect) => [...coloursIn(result, rect)]);
    // Each hole is one flat colour (its crop's mean), and distant crops answer differently.
    expect(topLeftColour).toHaveLength(1);
    expect(bottomRightColour).toHaveLength(1);
    expect(topLeftColour).not.toEqual(bottomRightColour);
    // The close pair shared a crop: the same answer in both.
    expect(pairColours[0]).toHaveLength(1);
    expect(pairColours[0]).toEqual(pairColours[1]);
    // Every fed mask marked some hole, and the three answers are the three fills.
    expect(holesFed.every((count) => count > 0)).toBe(true);
    expect(changedBeyond(result, image, mask, 2)).toBe(0);
  });

  it("stops between crops when the edit is cancelled, and before any when it already was", async () => {
    const runner = new RecordingRunner();
    const inpainter = new OnnxInpainter({ modelPath: lamaPath, kind: "lama", runner });
    const image = ramps();
    const mask = maskOf(WIDTH, HEIGHT, [
      { x: 20, y: 20, width: 20, height: 20 },
      { x: 740, y: 540, width: 20, height: 20 },
    ]);
    const controller = new AbortController();
    runner.onFeed = () => controller.abort();
    await expect(inpainter.inpaint(image, mask, { signal: controller.signal })).rejects.toMatchObject({ reason: "cancelled" });
    expect(runner.passes).toHaveLength(1);

    runner.onFeed = undefined;
    await expect(inpainter.inpaint(image, mask, { signal: controller.signal })).rejects.toMatchObject({ reason: "cancelled" });
    expect(runner.passes).toHaveLength(1);
  });

  it("returns the picture unchanged for an empty mask, without running the model", async () => {
    const runner = new RecordingRunner();
    const inpainter = new OnnxInpainter({ modelPath: lamaPath, kind: "lama", runner });
    const image = ramps(64, 48);
    const result = await inpainter.inpaint(image, maskOf(64, 48, []), {});
    expect(Buffer.compare(Buffer.from(result.data), Buffer.from(image.data))).toBe(0);
    expect(runner.passes).toHaveLength(0);
  });

  it("mirrors the picture out to the square when it is too small for a square crop, and the hole with it", async () => {
    const runner = new RecordingRunner();
    const inpainter = new OnnxInpainter({ modelPath: lamaPath, kind: "lama", runner });
    // 800x120: the crop is as wide as it may be and 120 high, resized to 512 wide and padded below.
    const image = ramps(WIDTH, 120);
    const rect = { x: 380, y: 50, width: 40, height: 20 };
    const mask = maskOf(WIDTH, 120, [rect]);
    const result = await inpainter.inpaint(image, mask, {});
    const feeds = runner.passes[0]?.feeds as Record<string, Tensor>;
    const maskData = feeds.mask?.data ?? new Float32Array();
    const imageData = feeds.image?.data ?? new Float32Array();
    const plane = 512 * 512;
    // The padding (below the picture's rows) is context, but where it mirrors the hole it is hole: no kept pixel of
    // the square shows the object, read back through the ramps (red across, green down; the crop at 0.64 scale).
    let keptInPadding = 0;
    let objectShown = 0;
    for (let i = 0; i < plane; i++) {
      if (maskData[i] === 1) continue;
      if (i >= 77 * 512) keptInPadding++;
      const x = (imageData[i] ?? 0) * (WIDTH - 1);
      const y = (imageData[plane + i] ?? 0) * 119;
      if (x > rect.x + 1 && x < rect.x + rect.width - 2 && y > rect.y + 1 && y < rect.y + rect.height - 2) objectShown++;
    }
    expect(keptInPadding).toBeGreaterThan(400 * 512);
    expect(objectShown).toBe(0);
    expect(coloursIn(result, rect).size).toBe(1);
    expect(changedBeyond(result, image, mask, 2)).toBe(0);
  });
});

describe("OnnxInpainter, MI-GAN's pipeline contract", () => {
  it("feeds bytes (255 = keep), at the size asked for a model of any size, and pastes the pipeline's answer", async () => {
    const runner = new RecordingRunner();
    const inpainter = new OnnxInpainter({ modelPath: miganPath, kind: "migan", size: 256, runner });
    const image = ramps();
    const hole = { x: 100, y: 150, width: 50, height: 70 };
    const mask = maskOf(WIDTH, HEIGHT, [hole]);
    const result = await inpainter.inpaint(image, mask, {});

    expect(runner.passes).toHaveLength(1);
    const feeds = runner.passes[0]?.feeds as Record<string, Tensor>;
    expect(feeds.image?.data).toBeInstanceOf(Uint8Array);
    expect(feeds.image?.dims).toEqual([1, 3, 256, 256]);
    expect(feeds.mask?.dims).toEqual([1, 1, 256, 256]);
    expect(new Set(feeds.mask?.data)).toEqual(new Set([0, 255]));
    const view = seen(feeds, "migan");
    expect(view.holeBlank).toBe(true);
    expect(Math.abs(view.besideHole.left - red(hole.x - 1))).toBeLessThanOrEqual(3);
    expect(Math.abs(view.besideHole.below - green(hole.y + hole.height))).toBeLessThanOrEqual(3);
    expectFilledWith(result, hole, view.keptMean.map((value) => Math.round(value)) as [number, number, number]);
    expect(changedBeyond(result, image, mask, 2)).toBe(0);
  });

  it("shrinks a crop the picture cannot widen so that its hole spans at most half the square, mirrored out around it", async () => {
    const runner = new RecordingRunner();
    const inpainter = new OnnxInpainter({ modelPath: miganPath, kind: "migan", runner });
    // 400x300 is all the context there is around a 240x180 hole: filling the square would make the hole 307 wide.
    const image = ramps(400, 300);
    const hole = { x: 80, y: 60, width: 240, height: 180 };
    const mask = maskOf(400, 300, [hole]);
    const result = await inpainter.inpaint(image, mask, {});

    const feeds = runner.passes[0]?.feeds as Record<string, Tensor>;
    expect(feeds.image?.dims).toEqual([1, 3, 512, 512]);
    const view = seen(feeds, "migan");
    const maskData = feeds.mask?.data ?? new Uint8Array();
    // Across the middle row of the crop (427x320 of the square), the hole told is the picture's hole at 256/240
    // (256 px; filling the square would make it 307), a model pixel each side for the pixels it half covers, and
    // the 3-pixel composing ring each side.
    const middle = Array.from(maskData.subarray(160 * 512, 160 * 512 + 427));
    expect(middle.lastIndexOf(0) - middle.indexOf(0) + 1).toBeLessThanOrEqual(256 + 2 * (1 + 3) + 1);
    // Beyond the crop, kept pixels are the mirrored picture.
    let keptBeyond = 0;
    for (let y = 0; y < 512; y++) for (let x = 430; x < 512; x++) if (maskData[y * 512 + x] === 255) keptBeyond++;
    expect(keptBeyond).toBeGreaterThan(0.8 * 82 * 512);
    expect(view.holeBlank).toBe(true);
    expect(coloursIn(result, hole).size).toBe(1);
    expect(changedBeyond(result, image, mask, 3)).toBe(0);
  });
});

describe("OnnxInpainter, a model of another contract", () => {
  it("is refused with model_failed and a message saying what it takes and what was expected", async () => {
    const saliency = new OnnxInpainter({ modelPath: await modelFile("u2net.onnx", redSaliencyModel()), kind: "lama" });
    const image = ramps(64, 48);
    const mask = maskOf(64, 48, [{ x: 20, y: 20, width: 8, height: 8 }]);
    await expect(saliency.inpaint(image, mask, {})).rejects.toMatchObject({
      reason: "model_failed",
      message: expect.stringMatching(
        /^The inpainting model u2net\.onnx is not a LaMa model as configured \(image float32 1x3xSxS in 0\.\.1 and mask float32 1x1xSxS \(1 = fill\).*\): it takes 1 input \("input" is float32 1x3x64x64\), not 2\.$/,
      ),
    });
    await expect(saliency.load()).rejects.toMatchObject({ reason: "model_failed" });

    const lamaAsMigan = new OnnxInpainter({ modelPath: lamaPath, kind: "migan" });
    await expect(lamaAsMigan.inpaint(image, mask, {})).rejects.toMatchObject({
      reason: "model_failed",
      message: expect.stringMatching(
        /is not a MI-GAN pipeline model as configured .*: its input "image" is float32 batchx3x512x512\.$/,
      ),
    });
  });

  it("refuses a file that is not a model at all with model_failed", async () => {
    const broken = new OnnxInpainter({ modelPath: await modelFile("broken.onnx", Buffer.from("not a model")), kind: "lama" });
    await expect(broken.load()).rejects.toMatchObject({ reason: "model_failed" });
  });
});

describe("the engine with an inpainting model configured", () => {
  const rect = { x: 300, y: 200, width: 80, height: 60 };
  let photo: Buffer;
  let maskPng: Buffer;
  beforeAll(async () => {
    photo = await sharp(Buffer.from(ramps().data), { raw: { width: WIDTH, height: HEIGHT, channels: 4 } })
      .png()
      .toBuffer();
    maskPng = await sharp(Buffer.from(maskOf(WIDTH, HEIGHT, [rect]).data), { raw: { width: WIDTH, height: HEIGHT, channels: 1 } })
      .png()
      .toBuffer();
  });

  it('fills "remove the box" with a mask from the model, not PatchMatch', async () => {
    const runner = new RecordingRunner();
    const engine = createImageEngine({ inpaintingModel: { path: lamaPath, kind: "lama" }, onnxRunner: runner });
    await engine.warmUp?.();
    const edited = await engine.edit({ image: photo, mask: maskPng, prompt: "remove the box", format: "png" });
    expect(edited.workflow).toBe("object_removal");
    expect(runner.passes).toHaveLength(1);
    const result = await decodeImage(edited.image);
    expectFilledWith(result, rect, seen(runner.passes[0]?.feeds as Record<string, Tensor>, "lama").keptMean);

    // Without the model, PatchMatch copies the ramps' pixels in: many colours, not one.
    const patchMatch = await decodeImage(
      (await createImageEngine().edit({ image: photo, mask: maskPng, prompt: "remove the box", format: "png" })).image,
    );
    expect(coloursIn(patchMatch, rect).size).toBeGreaterThan(100);
  });

  it("checks the model at warm-up and gives it back; the first fill loads it again", async () => {
    const runner = new RecordingRunner();
    const engine = createImageEngine({ inpaintingModel: { path: lamaPath, kind: "lama" }, onnxRunner: runner });
    await engine.warmUp?.();
    expect(runner.loaded).toEqual([lamaPath]);
    expect(runner.released).toEqual([lamaPath]);
    await engine.edit({ image: photo, mask: maskPng, prompt: "remove the box", format: "png" });
    expect(runner.passes).toHaveLength(1);
    expect(runner.loaded).toEqual([lamaPath, lamaPath]);
  });

  it(`fills a picture over ${LEARNED_FILL_MAX_PIXELS / 1e6} MP with PatchMatch, and gives the model back`, async () => {
    const runner = new RecordingRunner();
    const engine = createImageEngine({ inpaintingModel: { path: lamaPath, kind: "lama" }, onnxRunner: runner });
    const side = Math.ceil(Math.sqrt(LEARNED_FILL_MAX_PIXELS)) + 1;
    const large = await sharp(Buffer.from(ramps(side, side).data), { raw: { width: side, height: side, channels: 4 } })
      .png({ compressionLevel: 1 })
      .toBuffer();
    const largeMask = await sharp(Buffer.from(maskOf(side, side, [rect]).data), {
      raw: { width: side, height: side, channels: 1 },
    })
      .png()
      .toBuffer();
    await engine.edit({ image: photo, mask: maskPng, prompt: "remove the box", format: "png" });
    expect(runner.passes).toHaveLength(1);
    const edited = await decodeImage(
      (await engine.edit({ image: large, mask: largeMask, prompt: "remove the box", format: "png" })).image,
    );
    expect(runner.passes).toHaveLength(1);
    expect(runner.released).toEqual([lamaPath]);
    // PatchMatch copies the ramps' pixels in: many colours, not the model's one.
    expect(coloursIn(edited, rect).size).toBeGreaterThan(100);
  });

  it("fails the edit with model_failed when the model cannot be loaded", async () => {
    const engine = createImageEngine({
      inpaintingModel: { path: await modelFile("garbage.onnx", Buffer.from("garbage")), kind: "lama" },
      onnxRunner: new RecordingRunner(),
    });
    await expect(engine.warmUp?.()).rejects.toMatchObject({ reason: "model_failed" });
    await expect(engine.edit({ image: photo, mask: maskPng, prompt: "remove the box" })).rejects.toMatchObject({
      reason: "model_failed",
    });
  });
});
