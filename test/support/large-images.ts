import { readFile } from "node:fs/promises";
import sharp, { type Sharp } from "sharp";

/**
 * Camera-sized inputs, built at test time from a real photograph (coffee.jpg,
 * CC0, from scikit-image's sample data: see packages/engine/test/fixtures)
 * so that no multi-megabyte file is committed. Enlarging alone gives smooth
 * pixels that compress far better than a photo straight from a sensor; fine
 * grain (deterministic) brings the encoded size to a camera's.
 */
const photograph = new URL("../../packages/engine/test/fixtures/coffee.jpg", import.meta.url);

/**
 * The photograph (by default coffee.jpg; any of the engine's fixture photos) at
 * `width` x `height` with grain of roughly `grain` levels (standard deviation x 1.4), unencoded.
 */
export async function grainyPhoto(width: number, height: number, grain: number, photo: URL = photograph): Promise<Sharp> {
  const { data } = await sharp(await readFile(photo))
    .resize(width, height, { fit: "cover" })
    .removeAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  let state = 12345;
  const next = () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return (state >>> 16) & 255;
  };
  // The sum of two uniform draws: a triangular, roughly Gaussian grain.
  for (let i = 0; i < data.length; i++)
    data[i] = Math.max(0, Math.min(255, (data[i] ?? 0) + ((next() + next() - 255) * grain) / 74));
  return sharp(data, { raw: { width, height, channels: 3 } });
}

let jpeg: Promise<Buffer> | undefined;
let png: Promise<Buffer> | undefined;

/** A 12 MP (4000x3000) JPEG of about 5.4 MB, like a phone or camera photo at quality 95. */
export function cameraJpeg(): Promise<Buffer> {
  jpeg ??= grainyPhoto(4000, 3000, 6).then((image) => image.jpeg({ quality: 95 }).toBuffer());
  return jpeg;
}

/** A 3200x2400 PNG of about 20 MB (under the default 25 MiB limit). */
export function largePng(): Promise<Buffer> {
  png ??= grainyPhoto(3200, 2400, 1).then((image) => image.png().toBuffer());
  return png;
}
