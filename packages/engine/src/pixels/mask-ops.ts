import type { GreyImage, RgbaImage } from "../engine.ports";

/**
 * Operations on one-channel rasters (masks, mattes, distance maps). Masks are
 * Uint8Array with 0 = off and 255 = on. All run in linear time in the number
 * of pixels, whatever the radius.
 */

/**
 * Square max filter (dilation) with a running window: O(pixels), any radius.
 * Only the rectangle around the on pixels is filtered (a hole in a 12 MP frame
 * is a small part of it); finding it is one quick scan.
 */
export function dilate(mask: Uint8Array, width: number, height: number, radius: number): Uint8Array {
  if (radius <= 0) return copyBytes(mask);
  const bounds = onBounds(mask, width, height);
  return bounds ? dilateAround(mask, width, height, radius, bounds) : new Uint8Array(mask.length);
}

/** The bounds of the pixels that are on (255), or undefined when none is. */
function onBounds(
  mask: Uint8Array,
  width: number,
  height: number,
): { x: number; y: number; width: number; height: number } | undefined {
  let x0 = width;
  let x1 = -1;
  let y0 = -1;
  let y1 = -1;
  for (let y = 0; y < height; y++) {
    const row = y * width;
    let left = 0;
    while (left < width && mask[row + left] !== 255) left++;
    if (left === width) continue;
    let right = width - 1;
    while (mask[row + right] !== 255) right--;
    if (y0 < 0) y0 = y;
    y1 = y;
    if (left < x0) x0 = left;
    if (right > x1) x1 = right;
  }
  return y0 < 0 ? undefined : { x: x0, y: y0, width: x1 - x0 + 1, height: y1 - y0 + 1 };
}

/**
 * The same as `dilate` when every on pixel lies in `bounds` (x, y, width,
 * height): only the rectangle that the dilation can reach is worked on, and
 * the rest of the full-size result is off. A hole of a 12 MP photo is a small
 * part of it, and a full-size pass costs tens of milliseconds.
 */
export function dilateAround(
  mask: Uint8Array,
  width: number,
  height: number,
  radius: number,
  bounds: { x: number; y: number; width: number; height: number },
): Uint8Array {
  const x0 = Math.max(0, bounds.x - radius);
  const y0 = Math.max(0, bounds.y - radius);
  const x1 = Math.min(width, bounds.x + bounds.width + radius);
  const y1 = Math.min(height, bounds.y + bounds.height + radius);
  const localWidth = x1 - x0;
  const localHeight = y1 - y0;
  const out = new Uint8Array(mask.length);
  if (localWidth <= 0 || localHeight <= 0) return out;
  const local = new Uint8Array(localWidth * localHeight);
  for (let y = 0; y < localHeight; y++) local.set(mask.subarray((y0 + y) * width + x0, (y0 + y) * width + x1), y * localWidth);
  const grown = morphology(local, localWidth, localHeight, radius, 255);
  for (let y = 0; y < localHeight; y++) out.set(grown.subarray(y * localWidth, (y + 1) * localWidth), (y0 + y) * width + x0);
  return out;
}

/** Square min filter (erosion). */
export function erode(mask: Uint8Array, width: number, height: number, radius: number): Uint8Array {
  return morphology(mask, width, height, radius, 0);
}

// For a binary mask, "any pixel equal to `hit` in the window" is the whole of max/min.
function morphology(mask: Uint8Array, width: number, height: number, radius: number, hit: 0 | 255): Uint8Array {
  if (radius <= 0) return copyBytes(mask);
  const miss = 255 - hit;
  const horizontal = new Uint8Array(mask.length);
  for (let y = 0; y < height; y++) {
    const row = y * width;
    let count = 0;
    for (let x = 0; x < Math.min(radius, width); x++) if (mask[row + x] === hit) count++;
    for (let x = 0; x < width; x++) {
      const enter = x + radius;
      const leave = x - radius - 1;
      if (enter < width && mask[row + enter] === hit) count++;
      if (leave >= 0 && mask[row + leave] === hit) count--;
      horizontal[row + x] = count > 0 ? hit : miss;
    }
  }
  const out = new Uint8Array(mask.length);
  for (let x = 0; x < width; x++) {
    let count = 0;
    for (let y = 0; y < Math.min(radius, height); y++) if (horizontal[y * width + x] === hit) count++;
    for (let y = 0; y < height; y++) {
      const enter = y + radius;
      const leave = y - radius - 1;
      if (enter < height && horizontal[enter * width + x] === hit) count++;
      if (leave >= 0 && horizontal[leave * width + x] === hit) count--;
      out[y * width + x] = count > 0 ? hit : miss;
    }
  }
  return out;
}

/** Box blur of a float raster with `channels` interleaved values per pixel (edges clamp). */
export function boxBlur(values: Float32Array, width: number, height: number, radius: number, channels = 1): Float32Array {
  if (radius <= 0) return values.slice();
  const temp = new Float32Array(values.length);
  const out = new Float32Array(values.length);
  const sums = new Float64Array(channels);
  const size = 2 * radius + 1;
  for (let y = 0; y < height; y++) {
    for (let c = 0; c < channels; c++) {
      let sum = 0;
      for (let k = -radius; k <= radius; k++) sum += values[(y * width + clamp(k, 0, width - 1)) * channels + c] ?? 0;
      sums[c] = sum;
    }
    for (let x = 0; x < width; x++) {
      const enter = (y * width + Math.min(x + radius + 1, width - 1)) * channels;
      const leave = (y * width + Math.max(x - radius, 0)) * channels;
      for (let c = 0; c < channels; c++) {
        const sum = sums[c] ?? 0;
        temp[(y * width + x) * channels + c] = sum / size;
        sums[c] = sum + (values[enter + c] ?? 0) - (values[leave + c] ?? 0);
      }
    }
  }
  for (let x = 0; x < width; x++) {
    for (let c = 0; c < channels; c++) {
      let sum = 0;
      for (let k = -radius; k <= radius; k++) sum += temp[(clamp(k, 0, height - 1) * width + x) * channels + c] ?? 0;
      sums[c] = sum;
    }
    for (let y = 0; y < height; y++) {
      const enter = (Math.min(y + radius + 1, height - 1) * width + x) * channels;
      const leave = (Math.max(y - radius, 0) * width + x) * channels;
      for (let c = 0; c < channels; c++) {
        const sum = sums[c] ?? 0;
        out[(y * width + x) * channels + c] = sum / size;
        sums[c] = sum + (temp[enter + c] ?? 0) - (temp[leave + c] ?? 0);
      }
    }
  }
  return out;
}

/**
 * A copy of pixel bytes. Not `.slice()`: sharp hands out Node Buffers, whose
 * `slice` is a view on the same memory.
 */
export function copyBytes(bytes: Uint8Array): Uint8Array {
  return new Uint8Array(bytes);
}

export function clamp(value: number, low: number, high: number): number {
  return Math.max(low, Math.min(value, high));
}

export interface Components {
  /** 0 = not part of the mask; otherwise the component's number, from 1. */
  labels: Int32Array;
  /** sizes[label] in pixels; sizes[0] is unused. */
  sizes: number[];
  /** touchesBorder[label]: whether the component reaches the image edge. */
  touchesBorder: boolean[];
}

/** 4-connected components of the pixels where `inside(i)` holds. */
export function labelComponents(width: number, height: number, inside: (index: number) => boolean): Components {
  const labels = new Int32Array(width * height);
  const sizes = [0];
  const touchesBorder = [false];
  const stack = new Int32Array(width * height);
  let next = 1;
  for (let start = 0; start < labels.length; start++) {
    if (labels[start] !== 0 || !inside(start)) continue;
    let top = 0;
    stack[top++] = start;
    labels[start] = next;
    let size = 0;
    let border = false;
    while (top > 0) {
      const index = stack[--top] ?? 0;
      size++;
      const x = index % width;
      const y = (index - x) / width;
      if (x === 0 || y === 0 || x === width - 1 || y === height - 1) border = true;
      if (x > 0 && labels[index - 1] === 0 && inside(index - 1)) {
        labels[index - 1] = next;
        stack[top++] = index - 1;
      }
      if (x < width - 1 && labels[index + 1] === 0 && inside(index + 1)) {
        labels[index + 1] = next;
        stack[top++] = index + 1;
      }
      if (y > 0 && labels[index - width] === 0 && inside(index - width)) {
        labels[index - width] = next;
        stack[top++] = index - width;
      }
      if (y < height - 1 && labels[index + width] === 0 && inside(index + width)) {
        labels[index + width] = next;
        stack[top++] = index + width;
      }
    }
    sizes.push(size);
    touchesBorder.push(border);
    next++;
  }
  return { labels, sizes, touchesBorder };
}

/** Fraction of pixels set in a mask. */
export function coverage(mask: Uint8Array): number {
  let on = 0;
  for (let i = 0; i < mask.length; i++) if ((mask[i] ?? 0) >= 128) on++;
  return mask.length === 0 ? 0 : on / mask.length;
}

/** The edit inside the mask, the original outside, with a 2-pixel feather so no seam shows. */
export async function blendInside(original: RgbaImage, edited: RgbaImage, mask: GreyImage): Promise<RgbaImage> {
  const weights = new Float32Array(mask.data.length);
  for (let i = 0; i < weights.length; i++) weights[i] = (mask.data[i] ?? 0) / 255;
  const feathered = boxBlur(weights, mask.width, mask.height, 2);
  const data = new Uint8Array(original.data.length);
  for (let i = 0; i < feathered.length; i++) {
    const w = clamp(feathered[i] ?? 0, 0, 1);
    for (let c = 0; c < 4; c++)
      data[i * 4 + c] = Math.round((edited.data[i * 4 + c] ?? 0) * w + (original.data[i * 4 + c] ?? 0) * (1 - w));
  }
  return { data, width: original.width, height: original.height };
}
