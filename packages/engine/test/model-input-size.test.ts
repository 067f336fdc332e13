import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import ort from "onnxruntime-node";
import { beforeAll, describe, expect, it } from "vitest";
import { declaredInputSize, resizeModelInput, withFirstOutputOnly } from "../src/models/model-input-size";
import { LocalOnnxRunner } from "../src/models/onnx-runner";
import { decodeImage } from "../src/pixels/image-codec";
import { OnnxBackgroundRemover } from "../src/workflows/background-removal.onnx";
import { fixedSizeSaliencyModel, redSaliencyModel } from "./onnx-model.builder";
import { iou, redBallAndBlueBox, type Scene } from "./synthetic-scenes.fixture";

/** Running a fixed-size export (IS-Net's shape, built small) at another input size. */
let scene: Scene;
beforeAll(async () => {
  scene = await redBallAndBlueBox();
});

async function run(model: Uint8Array, side: number): Promise<readonly number[]> {
  const session = await ort.InferenceSession.create(model, { logSeverityLevel: 3 });
  const input = new ort.Tensor("float32", new Float32Array(3 * side * side), [1, 3, side, side]);
  const output = await session.run({ input });
  return output.mask?.dims ?? [];
}

describe("resizeModelInput", () => {
  it("scales the baked Resize sizes and the declared shapes, so the model runs at the new size", async () => {
    const model = fixedSizeSaliencyModel(64);
    expect(declaredInputSize(model)).toEqual({ width: 64, height: 64 });
    // As published, another size fails at the concatenation.
    await expect(run(model, 96)).rejects.toThrow();
    const resized = resizeModelInput(model, 96);
    expect(declaredInputSize(resized)).toEqual({ width: 96, height: 96 });
    expect(await run(resized, 96)).toEqual([1, 1, 96, 96]);
    // The original bytes are left as they were.
    expect(await run(model, 64)).toEqual([1, 1, 64, 64]);
  });

  it("refuses a size the constants cannot scale to, and a model without a fixed input", () => {
    // The half-size level's constant, 32, would become 48.5.
    expect(() => resizeModelInput(fixedSizeSaliencyModel(64), 97)).toThrow(
      /runs only at input sizes that are multiples of 2 \(97 is not; 64 as published\)/,
    );
    expect(declaredInputSize(redSaliencyModel({ size: "side" }))).toBeUndefined();
    expect(() => resizeModelInput(redSaliencyModel({ size: "side" }), 96)).toThrow(/not a fixed square/);
  });

  it("is what the background remover's inputSize does to a fixed-size model, with the same cut-out", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "retouch-resize-"));
    const file = path.join(dir, "isnet-small.onnx");
    await writeFile(file, fixedSizeSaliencyModel(64));
    const runner = new LocalOnnxRunner({ threads: 1 });
    const image = await decodeImage(scene.jpeg);
    const alphaOf = async (inputSize?: number) => {
      const remover = new OnnxBackgroundRemover({ modelPath: file, kind: "u2net", runner, ...(inputSize ? { inputSize } : {}) });
      const info = await remover.load();
      const cut = await remover.removeBackground(image, {});
      const alpha = new Uint8Array(cut.width * cut.height);
      for (let i = 0; i < alpha.length; i++) alpha[i] = cut.data[i * 4 + 3] ?? 0;
      return { info, alpha };
    };
    const declared = await alphaOf();
    const resized = await alphaOf(128);
    expect(declared.info.inputSize).toEqual({ width: 64, height: 64 });
    expect(resized.info.inputSize).toEqual({ width: 128, height: 128 });
    // The red detector works on the half-size level: coarse at 64, finer at 128.
    expect(iou(declared.alpha, scene.truth)).toBeGreaterThan(0.85);
    expect(iou(resized.alpha, scene.truth)).toBeGreaterThanOrEqual(iou(declared.alpha, scene.truth));
  });
});

describe("withFirstOutputOnly", () => {
  it("drops the side outputs and keeps the first one's values", async () => {
    const model = redSaliencyModel({ size: 32 });
    const input = new ort.Tensor(
      "float32",
      Float32Array.from({ length: 3 * 32 * 32 }, (_, i) => (i % 7) / 7),
      [1, 3, 32, 32],
    );
    const original = await ort.InferenceSession.create(model, { logSeverityLevel: 3 });
    expect(original.outputNames).toEqual(["mask", "side_output"]);
    const pruned = withFirstOutputOnly(model);
    if (!pruned) throw new Error("expected a pruned copy");
    const session = await ort.InferenceSession.create(pruned, { logSeverityLevel: 3 });
    expect(session.outputNames).toEqual(["mask"]);
    const [before, after] = await Promise.all([original.run({ input }), session.run({ input })]);
    expect(after.mask?.data).toEqual(before.mask?.data);
    // A model with one output is left alone.
    expect(withFirstOutputOnly(pruned)).toBeUndefined();
  });
});
