import { readFile } from "node:fs/promises";
import sharp from "sharp";
import type { RgbaImage } from "../src/engine.ports";
import { seededRandom } from "../src/pixels/seeded-random";

export { seededRandom };

/**
 * Product-style scenes with a known alpha: shapes drawn with 4x4 supersampling
 * (so edges are anti-aliased like a photo's), composited over a background,
 * then JPEG-encoded like an upload. Deterministic (seeded noise).
 */

/** Normal noise from a uniform generator (Box-Muller). */
export function gaussian(random: () => number): number {
  return Math.sqrt(-2 * Math.log(random() + 1e-12)) * Math.cos(2 * Math.PI * random());
}

/** True when (x, y), in units of the image's short side, is inside the shape. */
type Shape = (x: number, y: number) => boolean;
type Colour = (x: number, y: number) => [number, number, number];

export interface Scene {
  name: string;
  /** JPEG bytes of the composited scene. */
  jpeg: Buffer;
  /** Coverage of the foreground, 0..255, one byte per pixel. */
  truth: Uint8Array;
  width: number;
  height: number;
}

const circle =
  (cx: number, cy: number, r: number): Shape =>
  (x, y) =>
    (x - cx) ** 2 + (y - cy) ** 2 <= r * r;
const ellipse =
  (cx: number, cy: number, rx: number, ry: number): Shape =>
  (x, y) =>
    ((x - cx) / rx) ** 2 + ((y - cy) / ry) ** 2 <= 1;
const roundedRect =
  (x0: number, y0: number, x1: number, y1: number, r: number): Shape =>
  (x, y) => {
    const dx = Math.max(x0 + r - x, 0, x - (x1 - r));
    const dy = Math.max(y0 + r - y, 0, y - (y1 - r));
    return x >= x0 && x <= x1 && y >= y0 && y <= y1 && dx * dx + dy * dy <= r * r;
  };
const union =
  (...shapes: Shape[]): Shape =>
  (x, y) =>
    shapes.some((shape) => shape(x, y));
const minus =
  (shape: Shape, hole: Shape): Shape =>
  (x, y) =>
    shape(x, y) && !hole(x, y);

const plain =
  (r: number, g: number, b: number): Colour =>
  () => [r, g, b];
const verticalGradient =
  (top: [number, number, number], bottom: [number, number, number]): Colour =>
  (_x, y) =>
    [0, 1, 2].map((c) => (top[c] ?? 0) + ((bottom[c] ?? 0) - (top[c] ?? 0)) * Math.min(1, Math.max(0, y))) as [
      number,
      number,
      number,
    ];
/** A lit object: brighter top-left, darker bottom-right, with fine stripes of texture. */
const shaded =
  (base: [number, number, number], stripes = 0): Colour =>
  (x, y) => {
    const light = 1.15 - 0.35 * (x + y);
    const texture = stripes ? stripes * Math.sin(x * 180) : 0;
    return base.map((value) => Math.max(0, Math.min(255, value * light + texture))) as [number, number, number];
  };

function render(
  name: string,
  width: number,
  height: number,
  shape: Shape,
  foreground: Colour,
  background: Colour,
  noise: number,
  seed: number,
): { name: string; rgb: Uint8Array; truth: Uint8Array; width: number; height: number } {
  const random = seededRandom(seed);
  const unit = Math.min(width, height);
  const rgb = new Uint8Array(width * height * 3);
  const truth = new Uint8Array(width * height);
  const samples = 4;
  for (let py = 0; py < height; py++) {
    for (let px = 0; px < width; px++) {
      let covered = 0;
      for (let sy = 0; sy < samples; sy++) {
        for (let sx = 0; sx < samples; sx++) {
          if (shape((px + (sx + 0.5) / samples) / unit, (py + (sy + 0.5) / samples) / unit)) covered++;
        }
      }
      const a = covered / (samples * samples);
      const u = (px + 0.5) / unit;
      const v = (py + 0.5) / unit;
      const f = foreground(u, v);
      const b = background(u, v * (unit / height));
      for (let c = 0; c < 3; c++) {
        const value = a * (f[c] ?? 0) + (1 - a) * (b[c] ?? 0) + noise * gaussian(random);
        rgb[(py * width + px) * 3 + c] = Math.max(0, Math.min(255, Math.round(value)));
      }
      truth[py * width + px] = Math.round(a * 255);
    }
  }
  return { name, rgb, truth, width, height };
}

async function toScene(rendered: ReturnType<typeof render>): Promise<Scene> {
  const jpeg = await sharp(rendered.rgb, { raw: { width: rendered.width, height: rendered.height, channels: 3 } })
    .jpeg({ quality: 88 })
    .toBuffer();
  return { name: rendered.name, jpeg, truth: rendered.truth, width: rendered.width, height: rendered.height };
}

type SceneRenderer = (width: number, height: number) => ReturnType<typeof render>;

const SCENES: SceneRenderer[] = [
  (w: number, h: number) =>
    render("red ball on white", w, h, circle(0.62, 0.5, 0.3), shaded([210, 40, 40]), plain(250, 250, 250), 1.5, 1),
  (w: number, h: number) =>
    render(
      "blue box on a grey gradient",
      w,
      h,
      roundedRect(0.35, 0.2, 0.9, 0.8, 0.06),
      shaded([40, 70, 190], 12),
      verticalGradient([235, 235, 238], [170, 170, 176]),
      2,
      2,
    ),
  (w: number, h: number) =>
    render(
      "green bottle on noisy beige",
      w,
      h,
      union(roundedRect(0.5, 0.35, 0.75, 0.92, 0.05), roundedRect(0.58, 0.1, 0.67, 0.4, 0.02)),
      shaded([40, 140, 60], 8),
      plain(225, 210, 180),
      5,
      3,
    ),
  (w: number, h: number) =>
    render(
      "orange ring on white: the hole is background",
      w,
      h,
      minus(circle(0.62, 0.5, 0.35), circle(0.62, 0.5, 0.17)),
      shaded([240, 140, 30]),
      plain(252, 252, 252),
      1.5,
      4,
    ),
  (w: number, h: number) =>
    render(
      "white mug on black",
      w,
      h,
      union(roundedRect(0.35, 0.25, 0.75, 0.85, 0.04), minus(circle(0.78, 0.52, 0.14), circle(0.78, 0.52, 0.08))),
      shaded([235, 235, 230]),
      plain(12, 12, 14),
      2,
      5,
    ),
  (w: number, h: number) =>
    render(
      "vase cut by the bottom edge",
      w,
      h,
      union(ellipse(0.62, 0.75, 0.25, 0.35), roundedRect(0.55, 0.15, 0.69, 0.5, 0.03)),
      shaded([120, 60, 150], 6),
      plain(244, 240, 236),
      2,
      6,
    ),
  (w: number, h: number) =>
    render(
      "two objects on light blue",
      w,
      h,
      union(circle(0.35, 0.5, 0.2), roundedRect(0.7, 0.3, 1.05, 0.75, 0.05)),
      shaded([200, 170, 40]),
      plain(200, 225, 245),
      2,
      7,
    ),
  (w: number, h: number) =>
    render(
      "grey object with a white label on white",
      w,
      h,
      minus(roundedRect(0.4, 0.15, 0.85, 0.85, 0.05), roundedRect(0.5, 0.45, 0.54, 0.49, 0)),
      shaded([110, 110, 115]),
      plain(248, 248, 248),
      1.5,
      8,
    ),
];

/** The label of the last scene is a small white square inside the object: not a hole, so part of the truth. */
function addLabelToTruth(rendered: ReturnType<typeof render>): void {
  const unit = Math.min(rendered.width, rendered.height);
  for (let y = 0; y < rendered.height; y++) {
    for (let x = 0; x < rendered.width; x++) {
      const u = (x + 0.5) / unit;
      const v = (y + 0.5) / unit;
      if (u >= 0.5 && u <= 0.54 && v >= 0.45 && v <= 0.49) rendered.truth[y * rendered.width + x] = 255;
    }
  }
}

/** The synthetic set used by the tests and the bench (scaled by `size`, the short side; `only` picks scenes by index). */
export async function productScenes(size = 240, only?: number[]): Promise<Scene[]> {
  const w = Math.round(size * 1.25);
  const h = size;
  const indices = only ?? SCENES.map((_, index) => index);
  const rendered = indices.map((index) => {
    const scene = (SCENES[index] as SceneRenderer)(w, h);
    if (index === SCENES.length - 1) addLabelToTruth(scene);
    return scene;
  });
  return Promise.all(rendered.map(toScene));
}

/**
 * A product shot as a studio takes it: a bottle on a paper sweep that darkens
 * towards the bottom and the corners, a soft contact shadow under it (not part
 * of the truth) and sensor noise.
 */
export async function studioProductShot(size = 240): Promise<Scene> {
  const w = Math.round(size * 1.25);
  const bottle = union(roundedRect(0.47, 0.34, 0.78, 0.86, 0.06), roundedRect(0.57, 0.12, 0.68, 0.4, 0.02));
  const sweep: Colour = (x, y) => {
    const light = 246 - 30 * y ** 2 - 18 * ((x - 0.62) / 0.62) ** 2;
    // The shadow: up to a fifth darker, fading over a few percent of the frame.
    const shadow = 0.2 * Math.exp(-(((x - 0.63) / 0.22) ** 2) - ((y - 0.87) / 0.05) ** 2);
    return [light * (1 - shadow), (light - 3) * (1 - shadow), (light - 8) * (1 - shadow)];
  };
  return toScene(render("bottle on a studio sweep", w, size, bottle, shaded([30, 110, 120], 6), sweep, 3, 21));
}

/** Smooth random field in 0..1 (bilinear value noise over a grid of `cells` per unit, several octaves). */
function valueNoise(seed: number, cells: number, octaves = 3): (x: number, y: number) => number {
  const layers = Array.from({ length: octaves }, (_, octave) => {
    const random = seededRandom(seed + octave);
    const side = cells * 2 ** octave + 2;
    const grid = Array.from({ length: side * side }, () => random());
    return (x: number, y: number) => {
      const gx = Math.min(side - 2, Math.max(0, x * cells * 2 ** octave));
      const gy = Math.min(side - 2, Math.max(0, y * cells * 2 ** octave));
      const x0 = Math.floor(gx);
      const y0 = Math.floor(gy);
      const tx = gx - x0;
      const ty = gy - y0;
      const at = (a: number, b: number) => grid[b * side + a] ?? 0;
      return (
        (at(x0, y0) * (1 - tx) + at(x0 + 1, y0) * tx) * (1 - ty) + (at(x0, y0 + 1) * (1 - tx) + at(x0 + 1, y0 + 1) * tx) * ty
      );
    };
  });
  return (x, y) => layers.reduce((sum, layer, octave) => sum + layer(x, y) / 2 ** octave, 0) / (2 - 2 ** (1 - octaves));
}

/**
 * An animal's face filling the whole frame, as in a close-up portrait: tabby
 * fur (stripes and blotches under uneven light) to every edge, a white muzzle
 * running off the bottom, two green eyes and a pink nose. All of it is the
 * subject: the truth is the whole frame. A segmenter that models the border as
 * background keeps the eyes and the nose.
 */
export async function frameFillingAnimal(size = 240): Promise<Scene> {
  const w = Math.round(size * 1.25);
  const blotches = valueNoise(31, 6);
  const light = valueNoise(37, 1.5, 2);
  const eye = (cx: number) => ellipse(cx, 0.42, 0.11, 0.09);
  const pupil = (cx: number) => ellipse(cx, 0.42, 0.025, 0.07);
  const nose = ellipse(0.63, 0.72, 0.06, 0.04);
  const face: Colour = (x, y) => {
    if (pupil(0.4)(x, y) || pupil(0.86)(x, y)) return [15, 15, 12];
    if (eye(0.4)(x, y) || eye(0.86)(x, y)) return [150, 170, 60];
    if (nose(x, y)) return [215, 120, 110];
    const stripe = 0.5 + 0.5 * Math.sin(x * 40 + 6 * blotches(x, y) + y * 8);
    const shade = (0.4 + 1.0 * light(x, y)) * (0.75 + 0.35 * blotches(x * 1.7, y * 1.7)) * (1 - 0.45 * stripe ** 3);
    // The muzzle: white fur fading into the tabby around the bottom centre.
    const muzzle = Math.max(0, Math.min(1, 1.6 - Math.hypot((x - 0.63) / 0.3, (y - 1) / 0.22)));
    const fur = [200 * shade, 145 * shade, 95 * shade];
    const white = [235 * (0.8 + 0.2 * blotches(x, y)), 228 * (0.8 + 0.2 * blotches(x, y)), 218 * (0.8 + 0.2 * blotches(x, y))];
    return fur.map((value, c) => Math.min(255, value * (1 - muzzle) + (white[c] ?? 0) * muzzle)) as [number, number, number];
  };
  return toScene(render("an animal's face filling the frame", w, size, () => true, face, plain(0, 0, 0), 3, 33));
}

/** Intersection over union of two masks thresholded at 50%. */
export function iou(alpha: Uint8Array, truth: Uint8Array): number {
  let intersection = 0;
  let union = 0;
  for (let i = 0; i < truth.length; i++) {
    const a = (alpha[i] ?? 0) >= 128;
    const t = (truth[i] ?? 0) >= 128;
    if (a && t) intersection++;
    if (a || t) union++;
  }
  return union === 0 ? 1 : intersection / union;
}

/** Alpha channel of an RGBA image. */
export function alphaOf(image: RgbaImage): Uint8Array {
  const alpha = new Uint8Array(image.width * image.height);
  for (let i = 0; i < alpha.length; i++) alpha[i] = image.data[i * 4 + 3] ?? 0;
  return alpha;
}

/**
 * A red ball and a blue box on white. `truth` is the red ball only: what a
 * model that finds red things should keep, while a colour-contrast segmenter
 * keeps both.
 */
export async function redBallAndBlueBox(size = 200): Promise<Scene> {
  const w = Math.round(size * 1.5);
  const ball = circle(0.45, 0.5, 0.28);
  const box = roundedRect(0.95, 0.25, 1.3, 0.75, 0.04);
  const colours: Colour = (x, y) => (ball(x, y) ? [215, 30, 30] : [40, 60, 200]);
  const both = render("red ball and blue box", w, size, union(ball, box), colours, plain(250, 250, 250), 1.5, 9);
  const ballOnly = render("red ball", w, size, ball, colours, plain(250, 250, 250), 0, 9);
  return toScene({ ...both, truth: ballOnly.truth });
}

/** Diagonal colour stripes with a little noise: a structure a fill must continue. */
export function stripes(width: number, height: number, period = 24, seed = 11): RgbaImage {
  const random = seededRandom(seed);
  const data = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const v = 128 + 90 * Math.sin(((x + 0.6 * y) * 2 * Math.PI) / period);
      const i = (y * width + x) * 4;
      const values = [v, 0.5 * v + 60, 200 - 0.6 * v];
      for (let c = 0; c < 3; c++) data[i + c] = Math.max(0, Math.min(255, Math.round((values[c] ?? 0) + 4 * gaussian(random))));
      data[i + 3] = 255;
    }
  }
  return { data, width, height };
}

/** Irregular blotches (smoothed noise) on a base colour: a texture with no period, like gravel or foliage. */
export function blotches(width: number, height: number, seed = 12): RgbaImage {
  const random = seededRandom(seed);
  const cells = 6;
  const gridW = Math.ceil(width / cells) + 2;
  const gridH = Math.ceil(height / cells) + 2;
  const grid = Array.from({ length: gridW * gridH }, () => random());
  const data = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const gx = x / cells;
      const gy = y / cells;
      const x0 = Math.floor(gx);
      const y0 = Math.floor(gy);
      const tx = gx - x0;
      const ty = gy - y0;
      const at = (a: number, b: number) => grid[b * gridW + a] ?? 0;
      const n =
        (at(x0, y0) * (1 - tx) + at(x0 + 1, y0) * tx) * (1 - ty) + (at(x0, y0 + 1) * (1 - tx) + at(x0 + 1, y0 + 1) * tx) * ty;
      const i = (y * width + x) * 4;
      data[i] = Math.round(60 + 150 * n);
      data[i + 1] = Math.round(90 + 110 * n);
      data[i + 2] = Math.round(40 + 60 * n);
      data[i + 3] = 255;
    }
  }
  return { data, width, height };
}

/** A mask with one filled rectangle. */
export function rectangleMask(width: number, height: number, x0: number, y0: number, w: number, h: number) {
  const data = new Uint8Array(width * height);
  for (let y = y0; y < y0 + h; y++) for (let x = x0; x < x0 + w; x++) data[y * width + x] = 255;
  return { data, width, height };
}

/** The hole filled with the mean colour of a ring of known pixels around it: the naive baseline. */
export function flatFill(image: RgbaImage, mask: { data: Uint8Array }): RgbaImage {
  const { width, height } = image;
  const sum = [0, 0, 0];
  let count = 0;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = y * width + x;
      if (mask.data[i]) continue;
      let nearHole = false;
      for (let dy = -3; dy <= 3 && !nearHole; dy++) {
        for (let dx = -3; dx <= 3; dx++) {
          const nx = x + dx;
          const ny = y + dy;
          if (nx >= 0 && ny >= 0 && nx < width && ny < height && mask.data[ny * width + nx]) {
            nearHole = true;
            break;
          }
        }
      }
      if (!nearHole) continue;
      for (let c = 0; c < 3; c++) sum[c] = (sum[c] ?? 0) + (image.data[i * 4 + c] ?? 0);
      count++;
    }
  }
  const data = new Uint8Array(image.data);
  for (let i = 0; i < width * height; i++) {
    if (!mask.data[i]) continue;
    for (let c = 0; c < 3; c++) data[i * 4 + c] = Math.round((sum[c] ?? 0) / count);
  }
  return { data, width, height };
}

/** Mean squared error over the masked pixels (RGB). */
export function maskedError(result: RgbaImage, truth: RgbaImage, mask: { data: Uint8Array }): number {
  let sum = 0;
  let count = 0;
  for (let i = 0; i < mask.data.length; i++) {
    if (!mask.data[i]) continue;
    for (let c = 0; c < 3; c++) {
      const d = (result.data[i * 4 + c] ?? 0) - (truth.data[i * 4 + c] ?? 0);
      sum += d * d;
    }
    count += 3;
  }
  return sum / count;
}

/** Mean absolute difference between horizontally adjacent pixels inside the mask (texture energy, green channel). */
export function textureEnergy(image: RgbaImage, mask: { data: Uint8Array }): number {
  let sum = 0;
  let count = 0;
  for (let y = 0; y < image.height; y++) {
    for (let x = 1; x < image.width; x++) {
      const i = y * image.width + x;
      if (!mask.data[i] || !mask.data[i - 1]) continue;
      sum += Math.abs((image.data[i * 4 + 1] ?? 0) - (image.data[(i - 1) * 4 + 1] ?? 0));
      count++;
    }
  }
  return sum / count;
}

/** A scene with two things in it and where each one is, 0..255 per pixel. */
export interface TwoThingScene {
  jpeg: Buffer;
  width: number;
  height: number;
  person: Uint8Array;
  ball: Uint8Array;
}

/**
 * A person with a ball beside her, inside her detector box: the astronaut
 * portrait (a real photograph, fixtures/astronaut.jpg) cut out along its
 * reference matte and set against a plain wall, with a tennis ball (yellow-green
 * felt, white seams, lit from the top left) drawn at `ball` with 4x4
 * supersampling. The object detector sees a person and, for these colours, a
 * sports ball. 800x600, JPEG like an upload.
 */
export async function personWithBall(ball: { x: number; y: number; radius: number }): Promise<TwoThingScene> {
  const width = 800;
  const height = 600;
  const fixtures = new URL("./fixtures/", import.meta.url);
  const size = 440;
  const left = 60;
  const top = height - size;
  const [photo, matte] = await Promise.all([
    sharp(await readFile(new URL("astronaut.jpg", fixtures)))
      .resize(size, size)
      .removeAlpha()
      .raw()
      .toBuffer(),
    sharp(await readFile(new URL("mattes/astronaut.png", fixtures)))
      .resize(size, size)
      .greyscale()
      .raw()
      .toBuffer(),
  ]);
  const rgb = new Uint8Array(width * height * 3);
  const person = new Uint8Array(width * height);
  const ballTruth = new Uint8Array(width * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      // A wall, lighter at the top.
      const t = y / height;
      let colour = [190 - 40 * t, 200 - 30 * t, 170 - 50 * t];
      const px = x - left;
      const py = y - top;
      if (px >= 0 && py >= 0 && px < size && py < size) {
        const a = (matte[py * size + px] ?? 0) / 255;
        colour = colour.map((value, c) => a * (photo[(py * size + px) * 3 + c] ?? 0) + (1 - a) * value);
        person[y * width + x] = Math.round(a * 255);
      }
      let covered = 0;
      for (let s = 0; s < 16; s++) {
        const sx = x + ((s % 4) + 0.5) / 4;
        const sy = y + (Math.floor(s / 4) + 0.5) / 4;
        if ((sx - ball.x) ** 2 + (sy - ball.y) ** 2 <= ball.radius ** 2) covered++;
      }
      if (covered > 0) {
        const a = covered / 16;
        const u = (x - ball.x) / ball.radius;
        const v = (y - ball.y) / ball.radius;
        const light = 1.2 - 0.25 * (u + v + 2);
        const seam = Math.abs(Math.hypot(u - 1.1, v + 0.2) - 0.8) < 0.06 || Math.abs(Math.hypot(u + 1.1, v - 0.2) - 0.8) < 0.06;
        const felt = seam ? [240, 240, 235] : [200, 225, 60];
        colour = colour.map((value, c) => a * Math.min(255, (felt[c] ?? 0) * light) + (1 - a) * value);
        ballTruth[y * width + x] = Math.round(a * 255);
        // Where the ball stands in front of her, she is hidden.
        person[y * width + x] = Math.round((person[y * width + x] ?? 0) * (1 - a));
      }
      for (let c = 0; c < 3; c++) rgb[(y * width + x) * 3 + c] = Math.max(0, Math.min(255, Math.round(colour[c] ?? 0)));
    }
  }
  const jpeg = await sharp(rgb, { raw: { width, height, channels: 3 } })
    .jpeg({ quality: 90 })
    .toBuffer();
  return { jpeg, width, height, person, ball: ballTruth };
}
