import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";

import { EnginePool } from "@retouch/engine";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { redSaliencyModel } from "./onnx-model.builder";
import { iou, redBallAndBlueBox, type Scene } from "./synthetic-scenes.fixture";

/** Switching the worker threads to a model that became available, through real threads. */
let scene: Scene;
let good: string;
let corrupt: string;
const pools: EnginePool[] = [];

beforeAll(async () => {
  scene = await redBallAndBlueBox();
  const dir = await mkdtemp(path.join(os.tmpdir(), "retouch-pool-"));
  good = path.join(dir, "red.onnx");
  corrupt = path.join(dir, "corrupt.onnx");
  await writeFile(good, redSaliencyModel());
  await writeFile(corrupt, Buffer.from("not an onnx model"));
});
afterAll(() => Promise.all(pools.map((pool) => pool.close())));

function pool(): EnginePool {
  const created = new EnginePool(1, { maxPixels: 4_000_000 }, { warn: () => {} });
  pools.push(created);
  return created;
}

/** IoU of the cut-out with the red ball: above 0.95 with the red model, below 0.8 with the classical segmenter (it keeps the box). */
async function cutOut(engine: EnginePool): Promise<number> {
  const result = await engine.edit({ image: scene.jpeg, prompt: "remove the background" });
  const { data, info } = await sharp(result.image).raw().toBuffer({ resolveWithObject: true });
  const alpha = new Uint8Array(info.width * info.height);
  for (let i = 0; i < alpha.length; i++) alpha[i] = data[i * 4 + 3] ?? 0;
  return iou(alpha, scene.truth);
}

describe("EnginePool.reconfigure", () => {
  it("switches a running thread to the model; one that cannot load leaves the old engine in place", async () => {
    const engine = pool();
    expect(await cutOut(engine)).toBeLessThan(0.8);
    await expect(engine.reconfigure({ maxPixels: 4_000_000, backgroundModel: { path: corrupt, kind: "u2net" } })).rejects.toThrow(
      /could not be loaded/,
    );
    expect(await cutOut(engine)).toBeLessThan(0.8);
    await engine.reconfigure({ maxPixels: 4_000_000, backgroundModel: { path: good, kind: "u2net" } });
    expect(await cutOut(engine)).toBeGreaterThan(0.95);
  });

  it("gives threads started later the new options", async () => {
    const engine = pool();
    await engine.reconfigure({ maxPixels: 4_000_000, backgroundModel: { path: good, kind: "u2net" } });
    expect(await cutOut(engine)).toBeGreaterThan(0.95);
  });
});
