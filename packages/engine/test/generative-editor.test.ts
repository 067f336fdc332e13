import { beforeAll, describe, expect, it } from "vitest";
import type { GreyImage, RgbaImage } from "../src/engine.ports";
import { decodeImage } from "../src/pixels/image-codec";
import { ClassicalBackgroundRemover } from "../src/workflows/background-removal.classical";
import { SharpCatalogEditor } from "../src/workflows/generative-editor.sharp";
import { frameFillingAnimal, gaussian, productScenes, seededRandom } from "./synthetic-scenes.fixture";

const editor = new SharpCatalogEditor(new ClassicalBackgroundRemover());
const MAX_PIXELS = 40_000_000;

/** 160x100: a horizontal colour ramp, a red square top-left, a blue disc right, mild noise. */
function testCard(): RgbaImage {
  const width = 160;
  const height = 100;
  const random = seededRandom(21);
  const data = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      let rgb = [60 + x, 90 + y, 140 - x / 2];
      if (x >= 10 && x < 40 && y >= 10 && y < 40) rgb = [210, 40, 40];
      if ((x - 120) ** 2 + (y - 50) ** 2 < 400) rgb = [40, 60, 200];
      const i = (y * width + x) * 4;
      for (let c = 0; c < 3; c++) data[i + c] = Math.round(Math.max(0, Math.min(255, (rgb[c] ?? 0) + 3 * gaussian(random))));
      data[i + 3] = 255;
    }
  }
  return { data, width, height };
}

function edit(image: RgbaImage, prompt: string, extra: { mask?: GreyImage; maxPixels?: number } = {}): Promise<RgbaImage> {
  return editor.edit({ image, prompt, maxPixels: extra.maxPixels ?? MAX_PIXELS, mask: extra.mask }, {});
}

const pixel = (image: RgbaImage, x: number, y: number) => [
  ...image.data.subarray((y * image.width + x) * 4, (y * image.width + x) * 4 + 4),
];

function stats(image: RgbaImage) {
  let r = 0;
  let g = 0;
  let b = 0;
  let luma = 0;
  let luma2 = 0;
  let spread = 0;
  let gradient = 0;
  const n = image.width * image.height;
  for (let i = 0; i < n; i++) {
    const [pr = 0, pg = 0, pb = 0] = image.data.subarray(i * 4, i * 4 + 3);
    const l = 0.299 * pr + 0.587 * pg + 0.114 * pb;
    r += pr;
    g += pg;
    b += pb;
    luma += l;
    luma2 += l * l;
    spread += Math.max(pr, pg, pb) - Math.min(pr, pg, pb);
    if (i % image.width > 0) gradient += Math.abs((image.data[i * 4 + 1] ?? 0) - (image.data[(i - 1) * 4 + 1] ?? 0));
  }
  const mean = luma / n;
  return {
    r: r / n,
    g: g / n,
    b: b / n,
    luma: mean,
    contrast: Math.sqrt(luma2 / n - mean * mean),
    saturation: spread / n,
    gradient: gradient / n,
  };
}

describe("SharpCatalogEditor: each instruction moves the picture the intended way", () => {
  const card = testCard();
  const before = stats(card);

  it("black and white: no colour left", async () => {
    const out = await edit(card, "make it black and white");
    expect(stats(out).saturation).toBeLessThan(1.5);
  });

  it("sepia: warm monochrome, red > green > blue", async () => {
    const s = stats(await edit(card, "sepia"));
    expect(s.r).toBeGreaterThan(s.g);
    expect(s.g).toBeGreaterThan(s.b);
  });

  it("invert: 255 minus each channel", async () => {
    const out = await edit(card, "invert the colours");
    for (const [x, y] of [
      [5, 5],
      [20, 20],
      [120, 50],
    ] as const) {
      const a = pixel(card, x, y);
      const b = pixel(out, x, y);
      for (let c = 0; c < 3; c++) expect(Math.abs((b[c] ?? 0) - (255 - (a[c] ?? 0)))).toBeLessThanOrEqual(1);
    }
  });

  it("brightness: up and down, by words and numbers", async () => {
    const slightly = stats(await edit(card, "slightly brighter")).luma;
    const much = stats(await edit(card, "a lot brighter")).luma;
    expect(slightly).toBeGreaterThan(before.luma + 3);
    expect(much).toBeGreaterThan(slightly + 5);
    expect(stats(await edit(card, "darken it by 30%")).luma).toBeLessThan(before.luma - 15);
  });

  it("contrast: the spread of tones widens or narrows", async () => {
    expect(stats(await edit(card, "more contrast")).contrast).toBeGreaterThan(before.contrast * 1.15);
    expect(stats(await edit(card, "less contrast")).contrast).toBeLessThan(before.contrast * 0.85);
  });

  it("saturation: colours stronger or weaker", async () => {
    expect(stats(await edit(card, "more vivid")).saturation).toBeGreaterThan(before.saturation * 1.1);
    expect(stats(await edit(card, "desaturate")).saturation).toBeLessThan(before.saturation * 0.9);
  });

  it("temperature: warmer adds red over blue, cooler the reverse", async () => {
    const warm = stats(await edit(card, "make it warmer"));
    const cool = stats(await edit(card, "make it cooler"));
    expect(warm.r - warm.b).toBeGreaterThan(before.r - before.b + 10);
    expect(cool.r - cool.b).toBeLessThan(before.r - before.b - 10);
  });

  it("hue: a half turn makes the red square cyan", async () => {
    const [r = 0, g = 0, b = 0] = pixel(await edit(card, "shift the hue by 180 degrees"), 25, 25);
    expect(g).toBeGreaterThan(r);
    expect(b).toBeGreaterThan(r);
  });

  it("blur smooths and sharpen crisps", async () => {
    expect(stats(await edit(card, "blur it")).gradient).toBeLessThan(before.gradient * 0.6);
    expect(stats(await edit(card, "sharpen a lot")).gradient).toBeGreaterThan(before.gradient * 1.1);
  });

  it("rotate 90 degrees clockwise: size swapped, top-left goes to top-right", async () => {
    const out = await edit(card, "rotate 90 degrees");
    expect([out.width, out.height]).toEqual([100, 160]);
    // The red square near the top-left corner ends up near the top-right corner.
    expect(pixel(out, 100 - 25, 25)[0]).toBeGreaterThan(180);
    const left = await edit(card, "rotate left");
    expect(pixel(left, 25, 160 - 25)[0]).toBeGreaterThan(180);
  });

  it("rotate 45 degrees: a larger canvas with transparent corners", async () => {
    const out = await edit(card, "rotate 45 degrees");
    expect(out.width).toBeGreaterThan(card.width);
    expect(out.height).toBeGreaterThan(card.height);
    expect(pixel(out, 0, 0)[3]).toBe(0);
    expect(pixel(out, Math.round(out.width / 2), Math.round(out.height / 2))[3]).toBe(255);
  });

  it("flip and mirror", async () => {
    const mirrored = await edit(card, "mirror it");
    expect(pixel(mirrored, 159 - 25, 25)).toEqual(pixel(card, 25, 25));
    const flipped = await edit(card, "flip vertically");
    expect(pixel(flipped, 25, 99 - 25)).toEqual(pixel(card, 25, 25));
  });

  it("crop to a square, to a ratio, to pixels, by a margin", async () => {
    const square = await edit(card, "crop to a square");
    expect([square.width, square.height]).toEqual([100, 100]);
    const wide = await edit(card, "crop to 16:9");
    expect(wide.width / wide.height).toBeCloseTo(16 / 9, 1);
    const pixels = await edit(card, "crop to 80x60 pixels");
    expect([pixels.width, pixels.height]).toEqual([80, 60]);
    const inset = await edit(card, "crop 10% off each side");
    expect([inset.width, inset.height]).toEqual([128, 80]);
  });

  it("resize by width, factor and exact size", async () => {
    expect((await edit(card, "resize to 80 wide")).height).toBe(50);
    const half = await edit(card, "make it half the size");
    expect([half.width, half.height]).toEqual([80, 50]);
    const double = await edit(card, "upscale 2x");
    expect([double.width, double.height]).toEqual([320, 200]);
    const exact = await edit(card, "resize to 64x64");
    expect([exact.width, exact.height]).toEqual([64, 64]);
  });

  it("adds a border of the asked colour and size", async () => {
    const out = await edit(card, "add a 10px red border");
    expect([out.width, out.height]).toEqual([180, 120]);
    expect(pixel(out, 3, 60)).toEqual([220, 20, 20, 255]);
    expect(pixel(out, 10 + 25, 10 + 25)[0]).toBeGreaterThan(180);
  });

  it("normalises a dull picture and denoises a noisy one", async () => {
    const dull = { ...card, data: card.data.map((value, i) => (i % 4 === 3 ? value : 100 + value / 5)) };
    expect(stats(await edit(dull, "auto enhance")).contrast).toBeGreaterThan(stats(dull).contrast * 2);
    const random = seededRandom(5);
    const noisy = {
      ...card,
      data: card.data.map((value, i) => (i % 4 === 3 ? value : Math.max(0, Math.min(255, 128 + 25 * gaussian(random))))),
    };
    expect(stats(await edit(noisy, "remove the noise")).gradient).toBeLessThan(stats(noisy).gradient * 0.7);
  });

  it("trims a plain border, pixelates, and vignettes", async () => {
    const framed = await edit(card, "add a 12px white border");
    const trimmed = await edit(framed, "trim the white space");
    expect(Math.abs(trimmed.width - 160)).toBeLessThanOrEqual(2);
    const pixelated = await edit(card, "pixelate it");
    expect(stats(pixelated).gradient).toBeLessThan(before.gradient * 0.6);
    const vignetted = await edit(card, "add a vignette");
    const corner = (image: RgbaImage) => (pixel(image, 0, 99)[1] ?? 0) + (pixel(image, 159, 0)[1] ?? 0);
    expect(corner(vignetted)).toBeLessThan(corner(card) * 0.75);
    expect(pixel(vignetted, 80, 50)[1]).toBeGreaterThan((pixel(card, 80, 50)[1] ?? 0) - 3);
  });

  it("composes several instructions in order", async () => {
    const out = await edit(card, "make it black and white, then rotate 90 degrees and add a 5px black border");
    expect([out.width, out.height]).toEqual([110, 170]);
    expect(stats(out).saturation).toBeLessThan(1.5);
    expect(pixel(out, 2, 2)).toEqual([0, 0, 0, 255]);
  });
});

describe("SharpCatalogEditor: background instructions", () => {
  let product: RgbaImage;
  let truth: Uint8Array;

  beforeAll(async () => {
    const scene = (await productScenes(160))[0];
    if (!scene) throw new Error("no scene");
    product = await decodeImage(scene.jpeg);
    truth = scene.truth;
  });

  it("puts the subject on a new colour", async () => {
    const out = await edit(product, "put it on a light blue background");
    let background = 0;
    let blue = 0;
    let object = 0;
    let kept = 0;
    let transparent = 0;
    for (let i = 0; i < truth.length; i++) {
      const [r = 0, g = 0, b = 0, a = 0] = out.data.subarray(i * 4, i * 4 + 4);
      if (a < 255) transparent++;
      if (truth[i] === 0) {
        background++;
        if (Math.abs(r - 173) < 12 && Math.abs(g - 216) < 12 && Math.abs(b - 230) < 12) blue++;
      } else if (truth[i] === 255) {
        object++;
        if (Math.abs(r - (product.data[i * 4] ?? 0)) < 8) kept++;
      }
    }
    expect(transparent).toBe(0);
    expect(blue / background).toBeGreaterThan(0.97);
    expect(kept / object).toBeGreaterThan(0.97);
  });

  it("blurs the background and keeps the subject sharp", async () => {
    const noisy = { ...product, data: new Uint8Array(product.data) };
    const random = seededRandom(9);
    for (let i = 0; i < truth.length; i++) {
      if (truth[i] !== 0) continue;
      for (let c = 0; c < 3; c++)
        noisy.data[i * 4 + c] = Math.max(0, Math.min(255, (noisy.data[i * 4 + c] ?? 0) - 20 + 20 * gaussian(random)));
    }
    const out = await edit(noisy, "blur the background");
    const energy = (image: RgbaImage, inObject: boolean) => {
      let sum = 0;
      let count = 0;
      for (let i = 1; i < truth.length; i++) {
        const inside = truth[i] === 255 && truth[i - 1] === 255;
        const outside = truth[i] === 0 && truth[i - 1] === 0;
        if (inObject ? !inside : !outside) continue;
        sum += Math.abs((image.data[i * 4] ?? 0) - (image.data[(i - 1) * 4] ?? 0));
        count++;
      }
      return sum / count;
    };
    expect(energy(out, false)).toBeLessThan(energy(noisy, false) * 0.4);
    expect(energy(out, true)).toBeGreaterThan(energy(noisy, true) * 0.8);
  });

  it("cuts out when asked to remove the background among other steps; the border then follows the subject", async () => {
    const out = await edit(product, "remove the background and add a 4px red border");
    // The subject does not touch the edges: a 4 px outline needs no larger canvas.
    expect([out.width, out.height]).toEqual([product.width, product.height]);
    expect(pixel(out, 1, 1)[3]).toBe(0);
    // Red pixels ring the subject: outside it, within 4 px (and a pixel of antialiasing) of it.
    const near = (x: number, y: number, reach: number) => {
      for (let dy = -reach; dy <= reach; dy++)
        for (let dx = -reach; dx <= reach; dx++) {
          const [sx, sy] = [x + dx, y + dy];
          if (sx >= 0 && sy >= 0 && sx < out.width && sy < out.height && truth[sy * out.width + sx]) return true;
        }
      return false;
    };
    let red = 0;
    let stray = 0;
    for (let y = 0; y < out.height; y++)
      for (let x = 0; x < out.width; x++) {
        if (!isRed(pixel(out, x, y))) continue;
        red++;
        if (!near(x, y, 6)) stray++;
      }
    expect(red).toBeGreaterThan(200);
    expect(stray).toBe(0);
    // Beyond the ring, transparency.
    let opaqueFar = 0;
    for (let y = 0; y < out.height; y++)
      for (let x = 0; x < out.width; x++) if ((pixel(out, x, y)[3] ?? 0) > 0 && !near(x, y, 7)) opaqueFar++;
    expect(opaqueFar).toBe(0);
  });

  it("refuses every background edit where the cut-out would be refused (no model, a frame-filling animal)", async () => {
    const animal = await decodeImage((await frameFillingAnimal(240)).jpeg);
    for (const prompt of [
      "blur the background",
      "put it on a white background",
      "make it warmer and change the background to light blue",
      "remove the background and add a 4px red border",
    ]) {
      await expect(edit(animal, prompt), prompt).rejects.toMatchObject({ reason: "model_unavailable" });
    }
    // Edits that need no cut-out still run on the same picture.
    expect((await edit(animal, "make it black and white")).width).toBe(animal.width);
  });
});

describe("SharpCatalogEditor: limits and refusals", () => {
  const card = testCard();

  it("applies an edit inside a mask only", async () => {
    const mask = { data: new Uint8Array(160 * 100), width: 160, height: 100 };
    for (let y = 0; y < 100; y++) mask.data.fill(255, y * 160, y * 160 + 60);
    const out = await edit(card, "make it black and white", { mask });
    const [r = 0, g = 0, b = 0] = pixel(out, 25, 25);
    expect(Math.max(r, g, b) - Math.min(r, g, b)).toBeLessThan(2);
    expect(pixel(out, 120, 50)).toEqual(pixel(card, 120, 50));
    await expect(edit(card, "rotate 90 degrees", { mask })).rejects.toMatchObject({ reason: "unsupported_instruction" });
  });

  it("refuses an edit that would change nothing", async () => {
    const square = { data: new Uint8Array(64 * 64 * 4).fill(200), width: 64, height: 64 };
    await expect(edit(square, "crop to a square")).rejects.toThrow(/already has that aspect ratio/);
    await expect(edit(card, "rotate 360 degrees")).rejects.toMatchObject({ reason: "unsupported_instruction" });
    await expect(edit(square, "make it black and white")).rejects.toThrow(/leaves this picture unchanged/);
    await expect(edit(card, "trim")).rejects.toThrow(/no plain border/);
  });

  it("refuses an output over the pixel limit", async () => {
    await expect(edit(card, "upscale 10x", { maxPixels: 1_000_000 })).rejects.toMatchObject({
      reason: "image_too_large",
      message: expect.stringContaining("The requested output is 1600x1000 pixels"),
    });
  });

  it("refuses what it cannot do", async () => {
    await expect(edit(card, "make the sky dramatic with lightning")).rejects.toMatchObject({ reason: "unsupported_instruction" });
  });
});

function isRed(rgba: number[]): boolean {
  return (rgba[3] ?? 0) === 255 && (rgba[0] ?? 0) === 220 && (rgba[1] ?? 0) === 20 && (rgba[2] ?? 0) === 20;
}
