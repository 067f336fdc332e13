import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import ort from "onnxruntime-node";
import { beforeAll, describe, expect, it } from "vitest";
import { withFloat32Weights } from "../src/models/model-float32";
import { LocalOnnxRunner } from "../src/models/onnx-runner";
import { joinPieces } from "../src/models/onnx-wire";
import { decodeImage } from "../src/pixels/image-codec";
import { OnnxBackgroundRemover } from "../src/workflows/background-removal.onnx";
import { float16RedSaliencyModel, redSaliencyModel } from "./onnx-model.builder";
import { iou, redBallAndBlueBox, type Scene } from "./synthetic-scenes.fixture";

/** A float16 model's weights widened to float32 at load (the session would otherwise hold both). */
let scene: Scene;
beforeAll(async () => {
  scene = await redBallAndBlueBox();
});

const SIDE = 32;
const input = new ort.Tensor(
  "float32",
  Float32Array.from({ length: 3 * SIDE * SIDE }, (_, i) => ((i * 37) % 101) / 50 - 1),
  [1, 3, SIDE, SIDE],
);

async function mask(model: Uint8Array): Promise<Float32Array> {
  const session = await ort.InferenceSession.create(model, { logSeverityLevel: 3 });
  return (await session.run({ input })).mask?.data as Float32Array;
}

describe("withFloat32Weights", () => {
  it("widens a float16 model's weights and casts: the same output, nothing left in float16", async () => {
    const model = float16RedSaliencyModel({ size: SIDE });
    const pieces = withFloat32Weights(model);
    if (!pieces) throw new Error("expected a widened copy");
    const widened = joinPieces(pieces);
    // Each weight now takes four bytes instead of two.
    expect(widened.length).toBeGreaterThan(model.length);
    // Nothing in float16 is left: a second pass finds nothing to widen.
    expect(withFloat32Weights(widened)).toBeUndefined();
    const [before, after] = await Promise.all([mask(model), mask(widened)]);
    expect(after.length).toBe(SIDE * SIDE);
    // The float16 graph rounds its activations to float16; the widened one keeps float32 throughout.
    for (let i = 0; i < after.length; i++) expect(Math.abs((after[i] ?? 0) - (before[i] ?? 0))).toBeLessThan(2e-3);
  });

  it("leaves float32 models, and a float16 input (the caller's contract), as they are", () => {
    expect(withFloat32Weights(redSaliencyModel({ size: SIDE }))).toBeUndefined();
    expect(withFloat32Weights(float16RedSaliencyModel({ size: SIDE, float16Input: true }))).toBeUndefined();
  });

  it("loads through the runner and cuts out as the float32 model does", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "retouch-float16-"));
    const runner = new LocalOnnxRunner({ threads: 1 });
    const image = await decodeImage(scene.jpeg);
    const alphaOf = async (name: string, model: Buffer) => {
      const file = path.join(dir, name);
      await writeFile(file, model);
      const cut = await new OnnxBackgroundRemover({ modelPath: file, kind: "u2net", runner }).removeBackground(image, {});
      return Uint8Array.from({ length: cut.width * cut.height }, (_, i) => cut.data[i * 4 + 3] ?? 0);
    };
    const half = await alphaOf("half.onnx", float16RedSaliencyModel({ size: 64 }));
    const full = await alphaOf("full.onnx", redSaliencyModel({ size: 64 }));
    expect(iou(half, scene.truth)).toBeGreaterThan(0.85);
    expect(iou(half, full)).toBeGreaterThan(0.99);
  });
});
