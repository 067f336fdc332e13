import { readFile } from "node:fs/promises";
import sharp, { type OverlayOptions } from "sharp";
import type { Box, RgbaImage } from "../src/engine.ports";

export const fixture = (name: string) => readFile(new URL(`./fixtures/${name}`, import.meta.url));

/**
 * The face in each portrait among the fixtures, brows to chin as BlazeFace
 * boxes it (checked by eye on the blurred outputs): the truth the tests
 * measure against.
 */
export const FACES: Record<string, Box> = {
  "astronaut.jpg": { x: 172, y: 74, width: 106, height: 106 },
  "grace-hopper.jpg": { x: 184, y: 126, width: 197, height: 197 },
  "cameraman.jpg": { x: 187, y: 124, width: 70, height: 70 },
  "basketball.jpg": { x: 70, y: 101, width: 32, height: 32 },
};

/**
 * A group picture: each portrait's head cut out (twice the face's size around
 * it) and pasted, at several face sizes, over a real landscape scaled to
 * `width` x `height`; no Debian package ships a group photograph under a
 * licence we can use. The faces are real photographs, only their placement
 * is made; `faces` are their boxes in the picture.
 */
export async function groupPicture(width: number, height: number, sizes: number[]): Promise<{ jpeg: Buffer; faces: Box[] }> {
  const portraits = Object.entries(FACES);
  const layers: OverlayOptions[] = [];
  const faces: Box[] = [];
  for (const [row, [file, face]] of portraits.entries()) {
    const bytes = await fixture(file);
    const meta = await sharp(bytes).metadata();
    for (const [column, size] of sizes.entries()) {
      const crop = 2.2 * face.width;
      const left = Math.max(0, Math.round(face.x + face.width / 2 - crop / 2));
      const top = Math.max(0, Math.round(face.y + face.height / 2 - crop / 2));
      const cropWidth = Math.min(Math.round(crop), (meta.width ?? 0) - left);
      const cropHeight = Math.min(Math.round(crop), (meta.height ?? 0) - top);
      const scale = size / face.width;
      const pasteWidth = Math.round(cropWidth * scale);
      const pasteHeight = Math.round(cropHeight * scale);
      const x = Math.round(((column + 0.5) * width) / sizes.length - pasteWidth / 2);
      const y = Math.round(((row + 0.5) * height) / portraits.length - pasteHeight / 2);
      const head = await sharp(bytes)
        .extract({ left, top, width: cropWidth, height: cropHeight })
        .resize(pasteWidth, pasteHeight)
        .toBuffer();
      layers.push({ input: head, left: x, top: y });
      faces.push({ x: x + (face.x - left) * scale, y: y + (face.y - top) * scale, width: size, height: size });
    }
  }
  const jpeg = await sharp(await fixture("boats.jpg"))
    .resize(width, height, { fit: "fill" })
    .composite(layers)
    .jpeg({ quality: 90 })
    .toBuffer();
  return { jpeg, faces };
}

/** Variance of the 4-neighbour Laplacian of luma inside `box`: how much fine detail (edges, texture) it holds. */
export function laplacianVariance(image: RgbaImage, box: Box): number {
  const luma = (x: number, y: number) => {
    const i = (y * image.width + x) * 4;
    return 0.299 * (image.data[i] ?? 0) + 0.587 * (image.data[i + 1] ?? 0) + 0.114 * (image.data[i + 2] ?? 0);
  };
  const values: number[] = [];
  const x1 = Math.max(1, Math.round(box.x));
  const y1 = Math.max(1, Math.round(box.y));
  const x2 = Math.min(image.width - 1, Math.round(box.x + box.width));
  const y2 = Math.min(image.height - 1, Math.round(box.y + box.height));
  for (let y = y1; y < y2; y++)
    for (let x = x1; x < x2; x++) values.push(4 * luma(x, y) - luma(x - 1, y) - luma(x + 1, y) - luma(x, y - 1) - luma(x, y + 1));
  const mean = values.reduce((sum, value) => sum + value, 0) / values.length;
  return values.reduce((sum, value) => sum + (value - mean) ** 2, 0) / values.length;
}

/** Whether the centres of two boxes lie within half a face of each other. */
export function sameFace(a: Box, b: Box): boolean {
  const reach = Math.max(a.width, b.width) / 2;
  return Math.abs(a.x + a.width / 2 - (b.x + b.width / 2)) < reach && Math.abs(a.y + a.height / 2 - (b.y + b.height / 2)) < reach;
}
