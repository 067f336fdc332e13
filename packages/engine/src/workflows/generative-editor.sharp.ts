import sharp, { type Sharp } from "sharp";
import type {
  BackgroundRemover,
  FaceDetector,
  GenerativeEditor,
  GenerativeEditTask,
  RgbaImage,
  WorkContext,
} from "../engine.ports";
import { EngineError } from "../engine-error";
import { asBuffer, assertWithinPixelLimit, hasTransparency } from "../pixels/image-codec";
import { blendInside, clamp } from "../pixels/mask-ops";
import { type EditStep, parseInstructions } from "../prompts/generative-catalog";
import { BlazeFaceDetector } from "../vision/face-detector.blazeface";
import { throwIfCancelled } from "../work-checkpoint";
import { dropShadow, outline } from "./cutout-effects";
import { blurFaces } from "./face-blur";

/**
 * Carries out the catalog's steps with sharp (libvips), in prompt order. The
 * background steps (put it on a colour, blur the background, cut out) use the
 * configured background remover for the subject's matte, and the face blur
 * the face detector.
 */
export class SharpCatalogEditor implements GenerativeEditor {
  constructor(
    private readonly backgroundRemover: BackgroundRemover,
    private readonly faceDetector: FaceDetector = new BlazeFaceDetector(),
  ) {}

  async edit(task: GenerativeEditTask, context: WorkContext): Promise<RgbaImage> {
    const steps = parseInstructions(task.prompt, { hasMask: task.mask !== undefined });
    return this.editSteps(task, steps, context);
  }

  /** Carries out steps already read from a prompt (the whole prompt's, or the clauses after a background removal). */
  async editSteps(task: GenerativeEditTask, steps: EditStep[], context: WorkContext): Promise<RgbaImage> {
    if (task.mask && steps.some(changesGeometry)) {
      throw new EngineError(
        "unsupported_instruction",
        "A mask applies an edit to part of the picture; it cannot be combined with rotating, cropping, resizing, a border, an outline or a shadow.",
      );
    }
    let image = task.image;
    for (const step of steps) {
      throwIfCancelled(context.signal);
      image = await this.apply(step, image, task.maxPixels, context);
    }
    if (task.mask) image = await blendInside(task.image, image, task.mask);
    if (image.width === task.image.width && image.height === task.image.height && sameBytes(image.data, task.image.data)) {
      throw new EngineError("unsupported_instruction", `"${task.prompt.trim()}" leaves this picture unchanged.`);
    }
    return image;
  }

  private async apply(step: EditStep, image: RgbaImage, maxPixels: number, context: WorkContext): Promise<RgbaImage> {
    switch (step.op) {
      case "greyscale":
        return pipe(image, (s) => s.recomb(mix(GREY, 1)));
      case "sepia":
        return pipe(image, (s) => s.recomb(mix(SEPIA, step.strength)));
      case "invert":
        return pipe(image, (s) => s.negate({ alpha: false }));
      case "brightness":
        return pipe(image, (s) => s.modulate({ brightness: step.factor }));
      case "contrast":
        // Stretch around mid-grey: out = f * (in - 128) + 128.
        return pipe(image, (s) => s.linear([step.factor, step.factor, step.factor], Array(3).fill(128 * (1 - step.factor))));
      case "saturation":
        return pipe(image, (s) => s.modulate({ saturation: step.factor }));
      case "temperature":
        return pipe(image, (s) =>
          s.recomb([
            [1 + step.amount, 0, 0],
            [0, 1 + step.amount / 4, 0],
            [0, 0, 1 - step.amount],
          ]),
        );
      case "hue":
        return pipe(image, (s) => s.modulate({ hue: Math.round(step.degrees) }));
      case "blur":
        return pipe(image, (s) => s.blur(step.sigma));
      case "sharpen":
        return unsharpMask(image, step.sigma);
      case "rotate": {
        const degrees = ((step.degrees % 360) + 360) % 360;
        if (degrees === 0)
          throw new EngineError("unsupported_instruction", "Rotating by a full turn leaves the picture unchanged.");
        const radians = (degrees * Math.PI) / 180;
        const width = Math.ceil(Math.abs(image.width * Math.cos(radians)) + Math.abs(image.height * Math.sin(radians)));
        const height = Math.ceil(Math.abs(image.width * Math.sin(radians)) + Math.abs(image.height * Math.cos(radians)));
        assertWithinPixelLimit(width, height, maxPixels, "The rotated image");
        // The corners a free rotation uncovers are transparent (white once encoded as JPEG).
        return pipe(image, (s) => s.rotate(degrees, { background: { r: 0, g: 0, b: 0, alpha: 0 } }));
      }
      case "flip":
        return pipe(image, (s) => (step.axis === "horizontal" ? s.flop() : s.flip()));
      case "crop_aspect": {
        const current = image.width / image.height;
        const width = current > step.ratio ? Math.round(image.height * step.ratio) : image.width;
        const height = current > step.ratio ? image.height : Math.round(image.width / step.ratio);
        if (width === image.width && height === image.height) {
          throw new EngineError(
            "unsupported_instruction",
            "The picture already has that aspect ratio: there is nothing to crop.",
          );
        }
        return pipe(image, (s) => s.resize(width, height, { fit: "cover", position: sharp.strategy.attention }));
      }
      case "crop_pixels": {
        if (step.width > image.width || step.height > image.height) {
          throw new EngineError(
            "unsupported_instruction",
            `Cannot crop a ${image.width}x${image.height} picture to ${step.width}x${step.height}: the crop is larger than the picture.`,
          );
        }
        return pipe(image, (s) => s.resize(step.width, step.height, { fit: "cover", position: sharp.strategy.attention }));
      }
      case "crop_inset": {
        const left = Math.round(image.width * step.fraction);
        const top = Math.round(image.height * step.fraction);
        return pipe(image, (s) => s.extract({ left, top, width: image.width - 2 * left, height: image.height - 2 * top }));
      }
      case "resize":
        return resize(image, step, maxPixels);
      case "border": {
        // Around a cut-out, a border follows the subject (a sticker's outline): a frame around a transparent canvas would outline nothing.
        if (isCutOut(image)) return outline(image, this.strokeWidth(step, image), step.colour, maxPixels);
        const size = Math.max(1, Math.round(step.unit === "px" ? step.size : step.size * Math.min(image.width, image.height)));
        assertWithinPixelLimit(image.width + 2 * size, image.height + 2 * size, maxPixels, "The framed image");
        const [r, g, b] = step.colour;
        return pipe(image, (s) =>
          s.extend({ top: size, bottom: size, left: size, right: size, background: { r, g, b, alpha: 1 } }),
        );
      }
      case "cutout":
        return this.backgroundRemover.removeBackground(image, context);
      case "flatten": {
        const subject = hasTransparency(image) ? image : await this.backgroundRemover.removeBackground(image, context);
        const [r, g, b] = step.colour;
        return pipe(subject, (s) => s.flatten({ background: { r, g, b } }));
      }
      case "blur_background":
        return this.blurBackground(image, step.strength, context);
      case "normalize":
        return pipe(image, (s) => s.normalise({ lower: 1, upper: 99 }));
      case "denoise":
        return pipe(image, (s) => s.median(3));
      case "trim":
        return trim(image);
      case "pixelate": {
        const block = Math.max(2, Math.round(Math.max(image.width, image.height) / step.blocks));
        const small = await pipe(image, (s) =>
          s.resize(Math.max(1, Math.round(image.width / block)), Math.max(1, Math.round(image.height / block)), {
            kernel: "cubic",
          }),
        );
        return pipe(small, (s) => s.resize(image.width, image.height, { kernel: "nearest", fit: "fill" }));
      }
      case "vignette":
        return vignette(image, step.strength);
      case "outline":
        return outline(image, this.strokeWidth(step, image), step.colour, maxPixels);
      case "drop_shadow":
        return dropShadow(image, step, maxPixels);
      case "blur_faces":
        return this.blurFaces(image, step, context);
    }
  }

  private strokeWidth(step: { size: number; unit: "px" | "fraction" }, image: RgbaImage): number {
    return Math.max(1, step.unit === "px" ? step.size : step.size * Math.min(image.width, image.height));
  }

  private async blurFaces(
    image: RgbaImage,
    step: Extract<EditStep, { op: "blur_faces" }>,
    context: WorkContext,
  ): Promise<RgbaImage> {
    const faces = await this.faceDetector.detectFaces(image, context);
    if (faces.length === 0) {
      throw new EngineError(
        "nothing_detected",
        'No face was found in the picture, so there is nothing to blur. Faces turned away, covered, or smaller than about 20 pixels (a 60th of a 12 MP photo\'s width) are not found; send a mask over what to blur with the prompt "blur".',
      );
    }
    if (step.one && faces.length > 1) {
      throw new EngineError(
        "unsupported_instruction",
        `The prompt names one face and the picture has ${faces.length}: say "blur all the faces", or send a mask over the face to blur with the prompt "blur".`,
      );
    }
    throwIfCancelled(context.signal);
    return blurFaces(
      image,
      faces.map((face) => face.box),
      step.style,
      step.strength,
    );
  }

  /** Portrait-mode look: the subject, sharp, over a blurred copy of the whole picture. */
  private async blurBackground(image: RgbaImage, strength: number, context: WorkContext): Promise<RgbaImage> {
    const subject = await this.backgroundRemover.removeBackground(image, context);
    const sigma = Math.max(2, (Math.max(image.width, image.height) / 150) * strength);
    // One pipeline: the blurred copy is never a whole frame in memory of its own.
    const { data, info } = await sharp(image.data, raw(image))
      .blur(sigma)
      .composite([{ input: asBuffer(subject.data), raw: { width: subject.width, height: subject.height, channels: 4 } }])
      .raw()
      .toBuffer({ resolveWithObject: true });
    return { data, width: info.width, height: info.height };
  }
}

const GREY = [
  [0.299, 0.587, 0.114],
  [0.299, 0.587, 0.114],
  [0.299, 0.587, 0.114],
];
const SEPIA = [
  [0.393, 0.769, 0.189],
  [0.349, 0.686, 0.168],
  [0.272, 0.534, 0.131],
];

/** `strength` of the way from the identity to `matrix`. */
function mix(
  matrix: number[][],
  strength: number,
): [[number, number, number], [number, number, number], [number, number, number]] {
  const row = (r: number) =>
    [0, 1, 2].map((c) => (r === c ? 1 - strength : 0) + strength * (matrix[r]?.[c] ?? 0)) as [number, number, number];
  return [row(0), row(1), row(2)];
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return asBuffer(a).equals(asBuffer(b));
}

function changesGeometry(step: EditStep): boolean {
  return ["rotate", "crop_aspect", "crop_pixels", "crop_inset", "resize", "border", "trim", "outline", "drop_shadow"].includes(
    step.op,
  );
}

/** A picture with fully transparent pixels: a subject cut out of its background (or a free rotation's corners). */
function isCutOut(image: RgbaImage): boolean {
  for (let i = 3; i < image.data.length; i += 4) if (image.data[i] === 0) return true;
  return false;
}

function raw(image: RgbaImage): { raw: { width: number; height: number; channels: 4 } } {
  return { raw: { width: image.width, height: image.height, channels: 4 } };
}

/** Runs one sharp operation on raw RGBA and returns raw RGBA. */
async function pipe(image: RgbaImage, operation: (pipeline: Sharp) => Sharp): Promise<RgbaImage> {
  const { data, info } = await operation(sharp(image.data, raw(image)))
    .ensureAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

async function resize(image: RgbaImage, step: Extract<EditStep, { op: "resize" }>, maxPixels: number): Promise<RgbaImage> {
  let width: number;
  let height: number;
  if (step.width && step.height) {
    width = step.width;
    height = step.height;
  } else if (step.width) {
    width = step.width;
    height = Math.round((image.height * step.width) / image.width);
  } else if (step.height) {
    height = step.height;
    width = Math.round((image.width * step.height) / image.height);
  } else if (step.longSide) {
    const scale = step.longSide / Math.max(image.width, image.height);
    width = Math.round(image.width * scale);
    height = Math.round(image.height * scale);
  } else {
    const scale = step.scale ?? 1;
    width = Math.round(image.width * scale);
    height = Math.round(image.height * scale);
  }
  width = Math.max(1, width);
  height = Math.max(1, height);
  assertWithinPixelLimit(width, height, maxPixels, "The requested output");
  if (width === image.width && height === image.height) {
    throw new EngineError("unsupported_instruction", `The picture is already ${width}x${height}.`);
  }
  return pipe(image, (s) => s.resize(width, height, { fit: "cover", position: sharp.strategy.attention }));
}

async function trim(image: RgbaImage): Promise<RgbaImage> {
  const trimmed = await pipe(image, (s) => s.trim({ threshold: 12 }));
  if (trimmed.width === image.width && trimmed.height === image.height) {
    throw new EngineError("unsupported_instruction", "There is no plain border around the picture to trim.");
  }
  return trimmed;
}

/**
 * Unsharp mask in RGB: out = in + (in - blur(in)). libvips' own sharpen works
 * in LAB and is ten times slower at 12 MP on one thread.
 */
async function unsharpMask(image: RgbaImage, sigma: number): Promise<RgbaImage> {
  const blurred = await pipe(image, (s) => s.blur(Math.max(0.3, sigma)));
  const data = new Uint8Array(image.data.length);
  for (let i = 0; i < data.length; i++) {
    const value = image.data[i] ?? 0;
    data[i] = (i & 3) === 3 ? value : clamp(2 * value - (blurred.data[i] ?? 0), 0, 255);
  }
  return { data, width: image.width, height: image.height };
}

/** Darkens towards the corners: multiply by 1 - strength * r^2, r = 1 at the corners. */
function vignette(image: RgbaImage, strength: number): RgbaImage {
  const { width, height } = image;
  const data = new Uint8Array(image.data);
  const cx = (width - 1) / 2;
  const cy = (height - 1) / 2;
  const reach = cx * cx + cy * cy || 1;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const gain = 1 - (strength * ((x - cx) ** 2 + (y - cy) ** 2)) / reach;
      const i = (y * width + x) * 4;
      for (let c = 0; c < 3; c++) data[i + c] = Math.round((data[i + c] ?? 0) * gain);
    }
  }
  return { data, width, height };
}
