import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import sharp from "sharp";
import { beforeAll, describe, expect, it } from "vitest";
import type { RgbaImage } from "../src/engine.ports";
import { EngineError } from "../src/engine-error";
import { BUILT_IN_CATALOG } from "../src/models/model-catalog";
import { decodeImage } from "../src/pixels/image-codec";
import { ClassicalBackgroundRemover } from "../src/workflows/background-removal.classical";
import { inferModelKind, OnnxBackgroundRemover } from "../src/workflows/background-removal.onnx";
import { redSaliencyModel } from "./onnx-model.builder";
import {
  alphaOf,
  frameFillingAnimal,
  iou,
  productScenes,
  redBallAndBlueBox,
  type Scene,
  studioProductShot,
} from "./synthetic-scenes.fixture";

function edgeErrors(alpha: Uint8Array, scene: Scene): { soft: number; hard: number } {
  // Mean absolute alpha error on the truth's edge pixels (partly covered ones),
  // as given, and after thresholding the same output at 50%.
  let soft = 0;
  let hard = 0;
  let count = 0;
  for (let i = 0; i < alpha.length; i++) {
    const truth = scene.truth[i] ?? 0;
    if (truth === 0 || truth === 255) continue;
    const value = alpha[i] ?? 0;
    soft += Math.abs(truth - value);
    hard += Math.abs(truth - (value >= 128 ? 255 : 0));
    count++;
  }
  return { soft: soft / count, hard: hard / count };
}

describe("ClassicalBackgroundRemover", () => {
  const remover = new ClassicalBackgroundRemover();
  let scenes: Scene[];
  const outputs = new Map<string, RgbaImage>();

  beforeAll(async () => {
    scenes = await productScenes(200);
    for (const scene of scenes) outputs.set(scene.name, await remover.removeBackground(await decodeImage(scene.jpeg), {}));
  });

  it("finds the object on every synthetic product scene (IoU with the known alpha)", () => {
    const scores = scenes.map((scene) => iou(alphaOf(outputs.get(scene.name) as RgbaImage), scene.truth));
    for (const score of scores) expect(score).toBeGreaterThan(0.97);
    expect(scores.reduce((a, b) => a + b, 0) / scores.length).toBeGreaterThan(0.99);
  });

  it("leaves the soft contact shadow of a studio shot out of the cut-out", async () => {
    const shot = await studioProductShot(240);
    const alpha = alphaOf(await remover.removeBackground(await decodeImage(shot.jpeg), {}));
    expect(iou(alpha, shot.truth)).toBeGreaterThan(0.97);
    // Just under the bottle, where the shadow is darkest (a fifth darker than the sweep).
    const underBottle = Math.round(0.89 * shot.height) * shot.width + Math.round(0.63 * shot.height);
    expect(shot.truth[underBottle]).toBe(0);
    expect(alpha[underBottle]).toBe(0);
  });

  it("makes the hole of a ring transparent but keeps a small background-coloured label opaque", () => {
    const ring = scenes.find((scene) => scene.name.startsWith("orange ring")) as Scene;
    const ringAlpha = alphaOf(outputs.get(ring.name) as RgbaImage);
    const unit = Math.min(ring.width, ring.height);
    const centre = Math.round(0.5 * unit) * ring.width + Math.round(0.62 * unit);
    expect(ringAlpha[centre]).toBe(0);
    const onRing = Math.round(0.5 * unit) * ring.width + Math.round((0.62 + 0.26) * unit);
    expect(ringAlpha[onRing]).toBe(255);

    const labelled = scenes.find((scene) => scene.name.includes("white label")) as Scene;
    const labelAlpha = alphaOf(outputs.get(labelled.name) as RgbaImage);
    const label = Math.round(0.47 * unit) * labelled.width + Math.round(0.52 * unit);
    expect(labelAlpha[label]).toBe(255);
  });

  it("gives a soft edge closer to the true coverage than a hard cut", () => {
    let soft = 0;
    let hard = 0;
    for (const scene of scenes) {
      const errors = edgeErrors(alphaOf(outputs.get(scene.name) as RgbaImage), scene);
      soft += errors.soft;
      hard += errors.hard;
    }
    expect(soft).toBeLessThan(hard * 0.85);
  });

  it("takes the background colour out of the edge pixels", async () => {
    // A white disc on saturated green: edge pixels in the input are greenish mixes.
    const size = 160;
    const raw = Buffer.alloc(size * size * 3);
    for (let y = 0; y < size; y++) {
      for (let x = 0; x < size; x++) {
        let covered = 0;
        for (let s = 0; s < 16; s++) {
          const dx = x + ((s % 4) + 0.5) / 4 - 80;
          const dy = y + (Math.floor(s / 4) + 0.5) / 4 - 80;
          if (dx * dx + dy * dy <= 45 * 45) covered++;
        }
        const a = covered / 16;
        raw.set(
          [Math.round(a * 245 + (1 - a) * 20), Math.round(a * 245 + (1 - a) * 190), Math.round(a * 245 + (1 - a) * 40)],
          (y * size + x) * 3,
        );
      }
    }
    const png = await sharp(raw, { raw: { width: size, height: size, channels: 3 } })
      .png()
      .toBuffer();
    const input = await decodeImage(png);
    const output = await remover.removeBackground(input, {});
    let inputGreen = 0;
    let outputGreen = 0;
    let count = 0;
    for (let i = 0; i < size * size; i++) {
      const a = output.data[i * 4 + 3] ?? 0;
      if (a < 40 || a > 215) continue;
      const greenExcess = (data: Uint8Array) => (data[i * 4 + 1] ?? 0) - ((data[i * 4] ?? 0) + (data[i * 4 + 2] ?? 0)) / 2;
      inputGreen += greenExcess(input.data);
      outputGreen += greenExcess(output.data);
      count++;
    }
    expect(count).toBeGreaterThan(50);
    expect(inputGreen / count).toBeGreaterThan(40);
    expect(outputGreen / count).toBeLessThan(10);
  });

  it("keeps pixels that were already transparent transparent", async () => {
    const scene = scenes[0] as Scene;
    const image = await decodeImage(scene.jpeg);
    for (let y = 0; y < 20; y++) for (let x = 0; x < image.width; x++) image.data[(y * image.width + x) * 4 + 3] = 0;
    const output = await remover.removeBackground(image, {});
    for (let x = 0; x < image.width; x += 7) expect(output.data[(10 * image.width + x) * 4 + 3]).toBe(0);
  });

  it("fails when no object stands out", async () => {
    const flat = await sharp({ create: { width: 120, height: 90, channels: 3, background: "#f4f4f4" } })
      .png()
      .toBuffer();
    await expect(remover.removeBackground(await decodeImage(flat), {})).rejects.toMatchObject({ reason: "nothing_detected" });
  });

  it("stops when the request is cancelled", async () => {
    const controller = new AbortController();
    controller.abort();
    const image = await decodeImage((scenes[0] as Scene).jpeg);
    await expect(remover.removeBackground(image, { signal: controller.signal })).rejects.toMatchObject({ reason: "cancelled" });
  });
});

describe("the classical segmenter's plausibility check", () => {
  const remover = new ClassicalBackgroundRemover();

  const verdictOn = async (scene: Scene) => remover.assess(await decodeImage(scene.jpeg));

  it("answers a plain product shot, with a clean cut-out", async () => {
    const shot = await studioProductShot(480);
    const alpha = alphaOf(await remover.removeBackground(await decodeImage(shot.jpeg), {}));
    expect(iou(alpha, shot.truth)).toBeGreaterThan(0.97);
    const { plausible, measures } = await verdictOn(shot);
    expect(plausible).toBe(true);
    // Well inside every bound (agreement >= 0.8, border coherence >= 0.85, dominance >= 0.5).
    expect(measures).toMatchObject({ dominance: 1, borderContact: 0 });
    expect(measures.agreement).toBeGreaterThan(0.95);
    expect(measures.borderCoherence).toBeGreaterThan(0.99);
  });

  it("refuses a frame-filling subject with model_unavailable, saying which model to pull", async () => {
    const animal = await frameFillingAnimal(480);
    const image = await decodeImage(animal.jpeg);
    const error = await remover.removeBackground(image, {}).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(EngineError);
    expect(error).toMatchObject({ reason: "model_unavailable" });
    const model = BUILT_IN_CATALOG.defaults.background ?? "";
    expect(model).not.toBe("");
    expect((error as EngineError).message).toContain(`pnpm retouch models pull ${model}`);
    expect((error as EngineError).message).toMatch(/scattered pieces/);

    // What it refused: the eyes and the nose, about 6% of an animal that fills the frame.
    const unchecked = new ClassicalBackgroundRemover({ plausibilityCheck: false });
    const alpha = alphaOf(await unchecked.removeBackground(image, {}));
    expect(iou(alpha, animal.truth)).toBeLessThan(0.1);
    const { broken, measures } = await verdictOn(animal);
    expect(broken.map((bound) => bound.measure)).toEqual(expect.arrayContaining(["agreement", "borderCoherence", "dominance"]));
    expect(measures.dominance).toBeLessThan(0.5);
  });
});

describe("OnnxBackgroundRemover (a saliency model built by the test)", () => {
  let directory: string;
  let scene: Scene;

  beforeAll(async () => {
    directory = await mkdtemp(path.join(os.tmpdir(), "retouch-onnx-"));
    scene = await redBallAndBlueBox();
  });

  async function modelFile(name: string, bytes: Buffer): Promise<string> {
    const file = path.join(directory, name);
    await writeFile(file, bytes);
    return file;
  }

  it("runs the model and uses its saliency, not the colour contrast", async () => {
    const remover = new OnnxBackgroundRemover({ modelPath: await modelFile("u2net-red.onnx", redSaliencyModel()) });
    const image = await decodeImage(scene.jpeg);
    const withModel = alphaOf(await remover.removeBackground(image, {}));
    expect(iou(withModel, scene.truth)).toBeGreaterThan(0.95);
    // The blue box is salient to the segmenter but not to this model.
    const classical = alphaOf(await new ClassicalBackgroundRemover().removeBackground(image, {}));
    expect(iou(classical, scene.truth)).toBeLessThan(0.8);
    const boxCentre = 100 * scene.width + Math.round(1.12 * 200);
    expect(withModel[boxCentre]).toBe(0);
    expect(classical[boxCentre]).toBe(255);
  });

  it("accepts symbolic input sizes and logit outputs (BiRefNet style)", async () => {
    const file = await modelFile("birefnet-red.onnx", redSaliencyModel({ size: "side", logits: true }));
    expect(inferModelKind(file)).toBe("birefnet");
    const remover = new OnnxBackgroundRemover({ modelPath: file, inputSize: 96 });
    // Symbolic height and width: the model is fed the configured side as it is.
    expect(await remover.load()).toMatchObject({ inputSize: undefined });
    const alpha = alphaOf(await remover.removeBackground(await decodeImage(scene.jpeg), {}));
    expect(iou(alpha, scene.truth)).toBeGreaterThan(0.93);
  });

  it("fails the edit when the model sees no subject", async () => {
    const blind = await modelFile("isnet-blind.onnx", redSaliencyModel({ gain: 0, bias: -4 }));
    const white = await sharp({ create: { width: 80, height: 60, channels: 3, background: "#ffffff" } })
      .png()
      .toBuffer();
    await expect(
      new OnnxBackgroundRemover({ modelPath: blind }).removeBackground(await decodeImage(white), {}),
    ).rejects.toMatchObject({
      reason: "nothing_detected",
    });
  });

  it("refuses a missing file at construction and a corrupt one at load", async () => {
    expect(() => new OnnxBackgroundRemover({ modelPath: path.join(directory, "missing.onnx") })).toThrow(/not found/);
    const corrupt = new OnnxBackgroundRemover({ modelPath: await modelFile("corrupt.onnx", Buffer.from("not a model")) });
    const error = await corrupt.load().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(EngineError);
    expect(error).toMatchObject({ reason: "model_failed" });
  });
});
