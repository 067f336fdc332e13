import { describe, expect, it } from "vitest";
import { dilate, dilateAround } from "../src/mask-ops";
import { seededRandom } from "../src/seeded-random";

describe("dilateAround", () => {
  it("gives what a full-size dilation gives when every on pixel lies in the bounds, at the image's edges too", () => {
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
      expect(dilateAround(mask, width, height, radius, bounds)).toEqual(dilate(mask, width, height, radius));
    }
  });
});
