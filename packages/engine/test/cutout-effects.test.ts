import { beforeAll, describe, expect, it } from "vitest";
import { fetchIsnetModel } from "../../../scripts/fetch-test-models";
import type { BackgroundRemover, ImageEngine, RgbaImage } from "../src/engine.ports";
import { LocalOnnxRunner } from "../src/models/onnx-runner";
import { decodeImage } from "../src/pixels/image-codec";
import { readPrompt } from "../src/prompts/prompt-reading";
import { ClassicalBackgroundRemover } from "../src/workflows/background-removal.classical";
import { distanceToShape, dropShadow, outline } from "../src/workflows/cutout-effects";
import { createImageEngine } from "../src/workflows/engine";
import { fixture } from "./faces.fixture";

/**
 * "Remove the background and add a drop shadow / a border" does both: the
 * cut-out, then the other clauses on it, still a PNG with transparency.
 */

const alphaAt = (image: RgbaImage, x: number, y: number) => image.data[(y * image.width + x) * 4 + 3] ?? 0;

/** What a follow-up drew: pixels of `out` that are not the plain cut-out's (placed at `left`, `top` in `out`). */
function added(
  out: RgbaImage,
  plain: RgbaImage,
  left = 0,
  top = 0,
): { count: number; meanX: number; meanY: number; dark: number; maxAlpha: number } {
  let count = 0;
  let dark = 0;
  let maxAlpha = 0;
  let sumX = 0;
  let sumY = 0;
  for (let y = 0; y < out.height; y++)
    for (let x = 0; x < out.width; x++) {
      const [px, py] = [x - left, y - top];
      const plainAlpha = px >= 0 && py >= 0 && px < plain.width && py < plain.height ? alphaAt(plain, px, py) : 0;
      if (plainAlpha === 0 && alphaAt(out, x, y) > 0) {
        count++;
        const i = (y * out.width + x) * 4;
        if ((out.data[i] ?? 0) < 40 && (out.data[i + 1] ?? 0) < 40 && (out.data[i + 2] ?? 0) < 40) dark++;
        maxAlpha = Math.max(maxAlpha, alphaAt(out, x, y));
        sumX += x;
        sumY += y;
      }
    }
  return { count, meanX: sumX / count, meanY: sumY / count, dark, maxAlpha };
}

function centroid(image: RgbaImage): { x: number; y: number; area: number } {
  let area = 0;
  let sx = 0;
  let sy = 0;
  for (let y = 0; y < image.height; y++)
    for (let x = 0; x < image.width; x++)
      if (alphaAt(image, x, y) === 255) {
        area++;
        sx += x;
        sy += y;
      }
  return { x: sx / area, y: sy / area, area };
}

/**
 * Subject pixels (opaque in the plain cut-out) that differ in `out`, where the
 * canvas grew by an offset found from a sample of them (the subject may touch
 * the picture's edge, and the canvas then grows on that side too).
 */
function subjectChanged(out: RgbaImage, plain: RgbaImage): { changed: number; dx: number; dy: number } {
  const opaque: number[] = [];
  for (let i = 0; i < plain.width * plain.height; i++) if ((plain.data[i * 4 + 3] ?? 0) === 255) opaque.push(i);
  const sample = opaque.filter((_, k) => k % Math.max(1, Math.floor(opaque.length / 300)) === 0);
  const differs = (index: number, dx: number, dy: number) => {
    const [x, y] = [index % plain.width, Math.floor(index / plain.width)];
    const [i, j] = [index * 4, ((y + dy) * out.width + x + dx) * 4];
    return [0, 1, 2, 3].some((c) => plain.data[i + c] !== out.data[j + c]);
  };
  let best = { dx: 0, dy: 0, misses: Number.POSITIVE_INFINITY };
  for (let dy = 0; dy <= out.height - plain.height; dy++)
    for (let dx = 0; dx <= out.width - plain.width; dx++) {
      const misses = sample.filter((index) => differs(index, dx, dy)).length;
      if (misses < best.misses) best = { dx, dy, misses };
    }
  return { changed: opaque.filter((index) => differs(index, best.dx, best.dy)).length, dx: best.dx, dy: best.dy };
}

async function edit(engine: ImageEngine, name: string, prompt: string): Promise<RgbaImage> {
  const result = await engine.edit({ image: await fixture(name), prompt, format: "jpeg" });
  expect(result.format).toBe("png");
  expect(result.workflow).toBe("background_removal");
  return decodeImage(result.image);
}

describe("remove the background and ... on a product photo (classical segmenter)", () => {
  const engine = createImageEngine();
  let plain: RgbaImage;

  beforeAll(async () => {
    plain = await edit(engine, "apple.jpg", "remove the background");
  }, 60_000);

  it("adds a drop shadow down and to the right, on a canvas grown to hold it, the subject as it was", async () => {
    const out = await edit(engine, "apple.jpg", "remove the background and add a drop shadow");
    expect(out.width).toBeGreaterThan(plain.width);
    expect(out.height).toBeGreaterThan(plain.height);
    const { changed, dx, dy } = subjectChanged(out, plain);
    expect(changed).toBe(0);
    const shadow = added(out, plain, dx, dy);
    const subject = centroid(plain);
    expect(shadow.count).toBeGreaterThan(subject.area * 0.05);
    expect(shadow.meanX).toBeGreaterThan(subject.x + dx);
    expect(shadow.meanY).toBeGreaterThan(subject.y + dy);
    // Still a cut-out: the corner away from the shadow is transparent; the shadow is black, partly see-through.
    expect(alphaAt(out, 0, 0)).toBe(0);
    expect(shadow.dark / shadow.count).toBeGreaterThan(0.99);
    expect(shadow.maxAlpha).toBeLessThan(255);
  }, 60_000);

  it("adds a border that follows the subject (an outline), keeping the transparency around it", async () => {
    const out = await edit(engine, "apple.jpg", "Remove the background and add a border");
    const { changed, dx, dy } = subjectChanged(out, plain);
    expect(changed).toBe(0);
    const ring = added(out, plain, dx, dy);
    // An outline 3% of the short side wide (15 px here) around the apple's outline, white and opaque.
    expect(ring.count).toBeGreaterThan(2000);
    let white = 0;
    let counted = 0;
    const inside = new Uint8Array(out.width * out.height);
    // Where the cut-out had a soft edge, the subject's own partly transparent pixels lie over the stroke.
    const soft = new Uint8Array(out.width * out.height);
    for (let y = 0; y < plain.height; y++)
      for (let x = 0; x < plain.width; x++) {
        inside[(y + dy) * out.width + x + dx] = alphaAt(plain, x, y) >= 128 ? 1 : 0;
        soft[(y + dy) * out.width + x + dx] = alphaAt(plain, x, y) > 0 ? 1 : 0;
      }
    const distance = distanceToShape(inside, out.width, out.height);
    for (let i = 0; i < inside.length; i++) {
      const d = distance[i] ?? 0;
      if (d < 1 || d > 13 || soft[i]) continue;
      counted++;
      if (out.data[i * 4 + 3] === 255 && out.data[i * 4] === 255 && out.data[i * 4 + 1] === 255 && out.data[i * 4 + 2] === 255)
        white++;
    }
    expect(white / counted).toBeGreaterThan(0.99);
    // Beyond it, transparency.
    let far = 0;
    for (let i = 0; i < inside.length; i++) if ((distance[i] ?? 0) > 17 && (out.data[i * 4 + 3] ?? 0) > 0) far++;
    expect(far).toBe(0);
  }, 60_000);

  it("fails the whole edit, naming the clause, when one clause cannot be done, before any cut-out", async () => {
    let cutOuts = 0;
    const classical = new ClassicalBackgroundRemover();
    const counting: BackgroundRemover = {
      removeBackground: (image, context) => {
        cutOuts++;
        return classical.removeBackground(image, context);
      },
    };
    const strict = createImageEngine({ backgroundRemover: counting });
    await expect(
      strict.edit({ image: await fixture("apple.jpg"), prompt: "remove the background, add a drop shadow and make it smile" }),
    ).rejects.toMatchObject({ reason: "unsupported_instruction", message: expect.stringContaining('"make it smile"') });
    expect(cutOuts).toBe(0);
  });
});

describe("remove the background and add a drop shadow, with IS-Net weights on a portrait", () => {
  let engine: ImageEngine;

  beforeAll(async () => {
    const modelPath = await fetchIsnetModel();
    engine = createImageEngine({
      backgroundModel: { path: modelPath, kind: "isnet", inputSize: 704 },
      onnxRunner: new LocalOnnxRunner({ threads: 1 }),
    });
    await engine.warmUp?.();
  }, 600_000);

  it("cuts Grace Hopper out and puts a soft shadow behind her", async () => {
    const plain = await edit(engine, "grace-hopper.jpg", "remove the background");
    const out = await edit(engine, "grace-hopper.jpg", "remove the background and add a soft drop shadow");
    const { changed, dx, dy } = subjectChanged(out, plain);
    expect(changed).toBe(0);
    const shadow = added(out, plain, dx, dy);
    const subject = centroid(plain);
    expect(shadow.count).toBeGreaterThan(1000);
    expect(shadow.meanX).toBeGreaterThan(subject.x + dx);
    expect(shadow.dark / shadow.count).toBeGreaterThan(0.99);
    // The portrait runs off the bottom edge: the canvas grows to the right and below, and the corner at the top left stays clear.
    expect(out.width).toBeGreaterThan(plain.width);
    expect(alphaAt(out, 0, 0)).toBe(0);
  }, 120_000);
});

describe("drop shadow and outline on their own", () => {
  // A disc touching the left and bottom edges of a 60x50 canvas.
  const disc: RgbaImage = { data: new Uint8Array(60 * 50 * 4), width: 60, height: 50 };
  for (let y = 0; y < 50; y++)
    for (let x = 0; x < 60; x++)
      if ((x - 15) ** 2 + (y - 35) ** 2 <= 15 ** 2) disc.data.set([200, 30, 30, 255], (y * 60 + x) * 4);

  it("grows the canvas so that no part of the shadow is clipped", async () => {
    const shadow = { distance: 0.1, softness: 0.05, opacity: 0.5, colour: [0, 0, 0] as const };
    const mass = (image: RgbaImage) => {
      let sum = 0;
      for (let i = 0; i < image.width * image.height; i++) sum += (image.data[i * 4 + 3] ?? 0) / 255;
      return sum;
    };
    // The same disc in the middle of a canvas large enough for any shadow: what the shadow should add.
    const roomy: RgbaImage = { data: new Uint8Array(200 * 200 * 4), width: 200, height: 200 };
    for (let y = 0; y < 50; y++)
      for (let x = 0; x < 60; x++)
        roomy.data.set(disc.data.subarray((y * 60 + x) * 4, (y * 60 + x) * 4 + 4), ((y + 75) * 200 + x + 70) * 4);
    const [atEdge, inMiddle] = [await dropShadow(disc, shadow, 1e7), await dropShadow(roomy, shadow, 1e7)];
    expect([inMiddle.width, inMiddle.height]).toEqual([200, 200]);
    expect(atEdge.width).toBeGreaterThan(disc.width);
    expect(atEdge.height).toBeGreaterThan(disc.height);
    expect(Math.abs(mass(atEdge) - mass(inMiddle))).toBeLessThan(mass(inMiddle) * 0.005);
  });

  it("draws an outline of the asked width, and distances are exact", () => {
    const out = outline(disc, 4, [255, 255, 255], 1e7);
    // The disc touched the left and bottom edges: 5 more pixels there.
    expect([out.width, out.height]).toEqual([65, 55]);
    const inside = new Uint8Array(25);
    inside[12] = 1;
    const distance = distanceToShape(inside, 5, 5);
    expect(distance[0]).toBeCloseTo(Math.SQRT2 * 2, 5);
    expect(distance[2]).toBe(2);
    expect(distance[12]).toBe(0);
  });
});

describe("readPrompt: a whole prompt, clause by clause", () => {
  it.each([
    ["remove the background and add a drop shadow", "background_removal", ["drop_shadow"]],
    ["remove the background and add a white border", "background_removal", ["border"]],
    ["blur the faces and make it black and white", "generative_edit", ["blur_faces", "greyscale"]],
    ["remove the car and blur the faces", "object_removal", ["blur_faces"]],
  ])("%j → %s with its steps", (prompt, workflow, ops) => {
    const reading = readPrompt({ prompt });
    expect(reading.route.workflow).toBe(workflow);
    expect(reading.steps.map((step) => step.op)).toEqual(ops);
    expect(reading.problems).toEqual([]);
  });

  it.each([
    ["remove the background and make it smile", "make it smile"],
    ["remove the background and add a drop shadow and a dragon", "a dragon"],
    ["blur the license plate", "blur the license plate"],
    ["remove the background and keep the shadow", "keep the shadow"],
  ])("%j → the clause %j is not understood", (prompt, clause) => {
    expect(readPrompt({ prompt }).problems.map((problem) => problem.clause)).toEqual([clause]);
  });

  it("lets a mask say which part to blur", () => {
    expect(readPrompt({ prompt: "blur the license plate", hasMask: true }).problems).toEqual([]);
  });
});
