import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import type { RgbaImage } from "../src/engine.ports";
import { diffusionFill, PatchMatchInpainter } from "../src/inpainting/patch-inpainter";
import { PARALLEL_MIN_TARGETS } from "../src/inpainting/patch-search";
import { patchSearchThread } from "../src/inpainting/patch-search-thread";
import { decodeImage } from "../src/pixels/image-codec";
import { dilate } from "../src/pixels/mask-ops";
import { blotches, flatFill, maskedError, rectangleMask, stripes, textureEnergy } from "./synthetic-scenes.fixture";

const fixturesDirectory = new URL("./fixtures/", import.meta.url);

async function fixture(name: string): Promise<RgbaImage> {
  return decodeImage(await readFile(new URL(name, fixturesDirectory)));
}

describe("PatchMatchInpainter", () => {
  const inpainter = new PatchMatchInpainter();

  it("continues a striped structure through a large hole, far better than a flat or a diffusion fill", async () => {
    const image = stripes(240, 200);
    const mask = rectangleMask(240, 200, 90, 60, 60, 70);
    const filled = await inpainter.inpaint(image, mask, {});
    const patchError = maskedError(filled, image, mask);
    const flatError = maskedError(flatFill(image, mask), image, mask);
    const diffusionError = maskedError(diffusionFill(image, mask), image, mask);
    expect(patchError).toBeLessThan(flatError * 0.1);
    expect(patchError).toBeLessThan(diffusionError * 0.1);
  });

  it("continues a photographed brick wall better than a flat or a diffusion fill", async () => {
    const image = await fixture("brick.jpg");
    const mask = rectangleMask(image.width, image.height, 120, 90, 70, 70);
    // A rectangle cut out of a wall has no soft edge: the fill starts at the hole's very edge, where the
    // bricks' alignment is (with the default margin, 1 pixel here, the error is about 560 against 380).
    const exact = new PatchMatchInpainter({ marginFactor: 0 });
    const patchError = maskedError(await exact.inpaint(image, mask, {}), image, mask);
    expect(patchError).toBeLessThan(maskedError(flatFill(image, mask), image, mask) * 0.5);
    expect(patchError).toBeLessThan(maskedError(diffusionFill(image, mask), image, mask) * 0.5);
  });

  it("fills photographed gravel with gravel-like texture, not a smear", async () => {
    // Squared error is the wrong yardstick for an irregular texture: the mean
    // colour is its best guess, and any real texture costs about twice the
    // variance. What must match the surroundings is the texture itself.
    const image = await fixture("gravel.jpg");
    const mask = rectangleMask(image.width, image.height, 120, 90, 70, 70);
    const ring = dilate(mask.data, image.width, image.height, 20).map((value, i) => (value && !mask.data[i] ? 255 : 0));
    const surroundings = textureEnergy(image, { data: ring });
    const filled = textureEnergy(await inpainter.inpaint(image, mask, {}), mask) / surroundings;
    const smeared = textureEnergy(diffusionFill(image, mask), mask) / surroundings;
    const flat = textureEnergy(flatFill(image, mask), mask) / surroundings;
    expect(filled).toBeGreaterThan(0.55);
    expect(filled).toBeLessThan(1.5);
    expect(smeared).toBeLessThan(0.35);
    expect(flat).toBe(0);
  });

  it("changes no pixel outside the mask", async () => {
    const image = blotches(160, 120);
    const mask = rectangleMask(160, 120, 40, 30, 30, 40);
    const filled = await inpainter.inpaint(image, mask, {});
    let changedOutside = 0;
    let changedInside = 0;
    for (let i = 0; i < mask.data.length; i++) {
      const changed = [0, 1, 2, 3].some((c) => filled.data[i * 4 + c] !== image.data[i * 4 + c]);
      if (changed && mask.data[i]) changedInside++;
      if (changed && !mask.data[i]) changedOutside++;
    }
    expect(changedOutside).toBe(0);
    expect(changedInside).toBeGreaterThan(30 * 40 * 0.5);
  });

  it("works on a reduced crop for large images and copies full-resolution texture back", async () => {
    const image = stripes(1200, 900, 48);
    const mask = rectangleMask(1200, 900, 500, 350, 200, 220);
    const small = new PatchMatchInpainter({ workingPixels: 60_000 });
    const filled = await small.inpaint(image, mask, {});
    expect(maskedError(filled, image, mask)).toBeLessThan(maskedError(flatFill(image, mask), image, mask) * 0.1);
    // Full-resolution texture: the fill's pixel-to-pixel variation matches the picture's, not an upscaled blur's.
    expect(textureEnergy(filled, mask) / textureEnergy(image, mask)).toBeGreaterThan(0.8);
  });

  it("is deterministic", async () => {
    const image = blotches(120, 100);
    const mask = rectangleMask(120, 100, 40, 30, 30, 30);
    const first = await inpainter.inpaint(image, mask, {});
    const second = await inpainter.inpaint(image, mask, {});
    expect(Buffer.compare(Buffer.from(first.data), Buffer.from(second.data))).toBe(0);
  });

  it("refuses a mask that leaves nothing to copy from", async () => {
    const image = blotches(80, 60);
    const mask = rectangleMask(80, 60, 0, 0, 80, 58);
    await expect(inpainter.inpaint(image, mask, {})).rejects.toMatchObject({ reason: "invalid_mask" });
  });

  it("stops when cancelled", async () => {
    const controller = new AbortController();
    controller.abort();
    const image = blotches(80, 60);
    await expect(
      inpainter.inpaint(image, rectangleMask(80, 60, 20, 20, 20, 20), { signal: controller.signal }),
    ).rejects.toMatchObject({
      reason: "cancelled",
    });
  });

  it("fills as if the hole were grown past its edge, but writes only the hole", async () => {
    // The margin keeps the edge's halo from steering the fill; what lies in it may belong to a neighbour.
    const image = blotches(160, 120);
    const mask = rectangleMask(160, 120, 40, 30, 30, 40);
    const grown = await inpainter.inpaint(image, mask, {});
    const exact = await new PatchMatchInpainter({ marginFactor: 0 }).inpaint(image, mask, {});
    // "changes no pixel outside the mask" holds for the grown search; the fill itself differs.
    expect(Buffer.compare(Buffer.from(grown.data), Buffer.from(exact.data))).not.toBe(0);
  });

  describe("with its helper thread", () => {
    // A real photograph with a hole whose finest level has more targets than one band takes.
    const gravelWithHole = async () => {
      const image = await fixture("gravel.jpg");
      const mask = rectangleMask(image.width, image.height, 120, 90, 170, 150);
      expect(170 * 150).toBeGreaterThan(PARALLEL_MIN_TARGETS);
      return { image, mask };
    };

    it("searches a large level's second band in the helper, and fills exactly as without it", async () => {
      const { image, mask } = await gravelWithHole();
      await patchSearchThread.start();
      const before = patchSearchThread.stats.bands;
      const helped = await new PatchMatchInpainter().inpaint(image, mask, {});
      const afterHelped = patchSearchThread.stats.bands;
      expect(afterHelped).toBeGreaterThan(before);
      const alone = await new PatchMatchInpainter({ helperThread: false }).inpaint(image, mask, {});
      expect(patchSearchThread.stats.bands).toBe(afterHelped);
      expect(Buffer.compare(Buffer.from(helped.data), Buffer.from(alone.data))).toBe(0);
    });

    it("finishes in its own thread when the helper goes away part way, and the next fill starts a new helper", async () => {
      const { image, mask } = await gravelWithHole();
      await patchSearchThread.start();
      const before = patchSearchThread.stats;
      const fill = new PatchMatchInpainter().inpaint(image, mask, {});
      // Close the helper once it has searched a band of this fill: the band it was given next is never answered.
      while (patchSearchThread.stats.bands === before.bands) await new Promise((resolve) => setTimeout(resolve, 5));
      await patchSearchThread.close();
      const filled = await fill;
      expect(filled.width).toBe(image.width);
      let changed = 0;
      for (let i = 0; i < mask.data.length; i++) if (mask.data[i] && filled.data[i * 4] !== image.data[i * 4]) changed++;
      expect(changed).toBeGreaterThan(0);
      // The next fill starts the helper again and is helped.
      await new PatchMatchInpainter().inpaint(image, mask, {});
      await patchSearchThread.start();
      const afterRestart = patchSearchThread.stats;
      expect(afterRestart.starts).toBe(before.starts + 1);
      const helped = await new PatchMatchInpainter().inpaint(image, mask, {});
      expect(patchSearchThread.stats.bands).toBeGreaterThan(afterRestart.bands);
      const alone = await new PatchMatchInpainter({ helperThread: false }).inpaint(image, mask, {});
      expect(Buffer.compare(Buffer.from(helped.data), Buffer.from(alone.data))).toBe(0);
    });

    it("stops when cancelled part way through a helped fill, and the next fill is whole", async () => {
      const { image, mask } = await gravelWithHole();
      await patchSearchThread.start();
      const controller = new AbortController();
      const before = patchSearchThread.stats.bands;
      const cancelled = new PatchMatchInpainter().inpaint(image, mask, { signal: controller.signal });
      // Cancel once the helper has searched a band of this fill.
      while (patchSearchThread.stats.bands === before) await new Promise((resolve) => setTimeout(resolve, 5));
      controller.abort();
      await expect(cancelled).rejects.toMatchObject({ reason: "cancelled" });
      const next = await new PatchMatchInpainter().inpaint(image, mask, {});
      const alone = await new PatchMatchInpainter({ helperThread: false }).inpaint(image, mask, {});
      expect(Buffer.compare(Buffer.from(next.data), Buffer.from(alone.data))).toBe(0);
    });
  });
});
