import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { decodeImage } from "../src/pixels/image-codec";
import { EnginePool } from "../src/runtime/engine-pool";
import { meanColourLamaModel, redSaliencyModel } from "./onnx-model.builder";
import { loadPhoto } from "./real-photos.fixture";
import { changeInside, loadReference } from "./removal-quality.fixture";
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

function pool(
  size = 1,
  options: ConstructorParameters<typeof EnginePool>[1] = { maxPixels: 4_000_000 },
  poolOptions: ConstructorParameters<typeof EnginePool>[3] = {},
): EnginePool {
  const created = new EnginePool(size, options, { warn: () => {} }, poolOptions);
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

describe("EnginePool with a model", () => {
  it("runs edits of two threads side by side through the one inference thread", async () => {
    const engine = pool(2, { maxPixels: 4_000_000, backgroundModel: { path: good, kind: "u2net" } });
    // Background removal and a background edit at once: both engine threads ask the inference thread.
    const [first, flattened, second] = await Promise.all([
      cutOut(engine),
      engine.edit({ image: scene.jpeg, prompt: "put it on a white background", format: "png" }),
      cutOut(engine),
    ]);
    expect(first).toBeGreaterThan(0.95);
    expect(second).toBeGreaterThan(0.95);
    const { data, info } = await sharp(flattened.image).raw().toBuffer({ resolveWithObject: true });
    // The blue box is not salient to the red model: it disappears into white.
    const boxCentre = (100 * info.width + 224) * info.channels;
    expect(data.subarray(boxCentre, boxCentre + 3).every((value) => value > 245)).toBe(true);
  });
});

describe("EnginePool with a learned inpainter", () => {
  it("loads it at start to check it, gives it back, and loads it in the inference thread for the first fill", async () => {
    const lama = path.join(path.dirname(good), "lama-mean.onnx");
    await writeFile(lama, meanColourLamaModel());
    const loads: string[] = [];
    const engine = pool(
      1,
      { maxPixels: 4_000_000, inpaintingModel: { path: lama, kind: "lama" } },
      { onModelLoaded: (file) => loads.push(file) },
    );
    const mask = await sharp({ create: { width: 320, height: 240, channels: 3, background: "black" } })
      .composite([{ input: { create: { width: 40, height: 30, channels: 3, background: "white" } }, left: 140, top: 100 }])
      .png()
      .toBuffer();
    const removal = () => engine.edit({ image: scene.jpeg, mask, prompt: "remove the box" });
    await removal();
    // Once to check it at start and once for the fill: given back between them, through the thread's port.
    expect(loads).toEqual([lama, lama]);
    await removal();
    expect(loads).toEqual([lama, lama]);
  });
});

/**
 * The built-in detector and the pose model run in the pool's one vision thread, kept between
 * removals: a thread, TensorFlow.js and the model started for each removal were 0.2 to 0.4 s of
 * a 2 s removal (docs/engine.md). Counted by the pool, never timed.
 */
describe("EnginePool's vision thread", () => {
  it("serves the detections and body keypoints of both engine threads from one thread that stays up between removals", async () => {
    const engine = pool(2);
    const source = await loadPhoto("messi5");
    const [image, player] = await Promise.all([decodeImage(source), loadReference("objects/messi5-player")]);
    const removals = await Promise.all([
      engine.edit({ image: source, prompt: "remove the person", format: "png" }),
      engine.edit({ image: source, prompt: "remove the person", format: "png" }),
    ]);
    const third = await engine.edit({ image: source, prompt: "remove the person", format: "png" });
    for (const result of [...removals, third]) {
      // The keypoints reached the segmenter: without them a spectator is removed instead of the player.
      expect(changeInside(image, await decodeImage(result.image), player)).toBeGreaterThan(20);
    }
    expect(engine.visionThread).toEqual({ starts: 1, running: true });
  }, 120_000);

  it("ends the thread once idle, and starts it again for the next removal", async () => {
    const engine = pool(1, { maxPixels: 4_000_000 }, { visionIdleMs: 300 });
    const source = await loadPhoto("boats");
    await engine.edit({ image: source, prompt: "remove the boat on the left", format: "png" });
    expect(engine.visionThread.starts).toBe(1);
    await vi.waitFor(() => expect(engine.visionThread.running).toBe(false), { timeout: 10_000 });
    await engine.edit({ image: source, prompt: "remove the boat on the left", format: "png" });
    expect(engine.visionThread.starts).toBe(2);
  }, 120_000);

  it("gives the thread back as soon as a picture over 4 MP needs it no more: it never lives beside such a frame", async () => {
    const engine = pool(1, { maxPixels: 40_000_000 });
    // basketball.jpg at 2400x1800 (4.3 MP): the detection, then the keypoints, each in a thread given back after.
    const source = await sharp(await loadPhoto("basketball"))
      .resize(2400, 1800)
      .jpeg({ quality: 90 })
      .toBuffer();
    await engine.edit({ image: source, prompt: "remove the person on the left", format: "jpeg" });
    // Well before the 30 s an idle thread is kept.
    await vi.waitFor(() => expect(engine.visionThread.running).toBe(false), { timeout: 5_000 });
    expect(engine.visionThread.starts).toBe(2);
  }, 120_000);

  it("ends the idle thread while a picture over 4 MP is edited: not kept beside that frame for the next removal", async () => {
    const engine = pool(1, { maxPixels: 40_000_000 });
    const small = await loadPhoto("boats");
    await engine.edit({ image: small, prompt: "remove the boat on the left", format: "png" });
    // Kept for the next small removal (30 s idle).
    expect(engine.visionThread).toEqual({ starts: 1, running: true });
    const large = await sharp(await loadPhoto("coffee"))
      .resize(2600, 1950)
      .jpeg({ quality: 90 })
      .toBuffer();
    const edit = engine.edit({ image: large, prompt: "make it black and white" });
    await vi.waitFor(() => expect(engine.visionThread.running).toBe(false), { timeout: 5_000, interval: 5 });
    await edit;
    // The next small removal starts it again.
    await engine.edit({ image: small, prompt: "remove the boat on the left", format: "png" });
    expect(engine.visionThread).toEqual({ starts: 2, running: true });
  }, 120_000);

  it("a removal cancelled while it waits on the thread does not take the thread down for the next", async () => {
    const engine = pool(1);
    const source = await loadPhoto("boats");
    const controller = new AbortController();
    const cancelled = engine.edit({ image: source, prompt: "remove the boat on the left", signal: controller.signal });
    await vi.waitFor(() => expect(engine.visionThread.running).toBe(true), { timeout: 10_000, interval: 5 });
    controller.abort();
    await expect(cancelled).rejects.toThrow(/cancelled/);
    const result = await engine.edit({ image: source, prompt: "remove the boat on the left", format: "png" });
    expect(result.image.byteLength).toBeGreaterThan(0);
    expect(engine.visionThread.starts).toBe(1);
  }, 120_000);
});
