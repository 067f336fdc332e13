import { describe, expect, it } from "vitest";
import { dilate, dilateAround } from "../src/pixels/mask-ops";
import { seededRandom } from "../src/pixels/seeded-random";

/** The dilation by definition: on where any pixel of the (2r+1)² square around is 255. */
function reference(mask: Uint8Array, width: number, height: number, radius: number): Uint8Array {
  const out = new Uint8Array(mask.length);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      let hit = false;
      for (let dy = -radius; dy <= radius && !hit; dy++) {
        for (let dx = -radius; dx <= radius && !hit; dx++) {
          const nx = x + dx;
          const ny = y + dy;
          hit = nx >= 0 && ny >= 0 && nx < width && ny < height && mask[ny * width + nx] === 255;
        }
      }
      out[y * width + x] = hit ? 255 : 0;
    }
  }
  return out;
}

describe("dilateAround", () => {
  it("gives the full-size dilation when every on pixel lies in the bounds, at the image's edges too", () => {
    const random = seededRandom(7);
    const width = 97;
    const height = 61;
    for (const [bounds, radius] of [
      [{ x: 30, y: 20, width: 25, height: 18 }, 4],
      [{ x: 0, y: 0, width: 12, height: 9 }, 6],
      [{ x: 80, y: 50, width: 17, height: 11 }, 9],
      [{ x: 40, y: 10, width: 1, height: 1 }, 0],
    ] as const) {
      const mask = new Uint8Array(width * height);
      for (let y = bounds.y; y < bounds.y + bounds.height; y++) {
        for (let x = bounds.x; x < bounds.x + bounds.width; x++) if (random() < 0.2) mask[y * width + x] = 255;
      }
      expect(dilateAround(mask, width, height, radius, bounds)).toEqual(reference(mask, width, height, radius));
      expect(dilate(mask, width, height, radius)).toEqual(reference(mask, width, height, radius));
    }
  });
});

describe("dilate", () => {
  it("takes in every pixel within the radius of an on pixel, and nothing else, on a frame mostly empty", () => {
    const width = 400;
    const height = 300;
    const mask = new Uint8Array(width * height);
    mask[150 * width + 200] = 255;
    mask[10 * width + 3] = 255;
    // Not on: only 255 is.
    mask[290 * width + 390] = 128;
    const out = dilate(mask, width, height, 5);
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const near = (Math.abs(x - 200) <= 5 && Math.abs(y - 150) <= 5) || (Math.abs(x - 3) <= 5 && Math.abs(y - 10) <= 5);
        if ((out[y * width + x] === 255) !== near) throw new Error(`wrong at ${x}, ${y}`);
      }
    }
    expect(dilate(new Uint8Array(width * height), width, height, 5).every((value) => value === 0)).toBe(true);
  });
});
