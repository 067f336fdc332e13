import { existsSync } from "node:fs";
import path from "node:path";
import sharp from "sharp";
import type { BackgroundRemover, GreyImage, RgbaImage, SaliencyModelKind, SubjectSegmenter, WorkContext } from "../engine.ports";
import { EngineError } from "../engine-error";
import {
  type FloatTensor,
  type OnnxModelInfo,
  type OnnxModelSpec,
  type OnnxRunner,
  sharedOnnxRunner,
} from "../models/onnx-runner";
import { resizeGrey } from "../pixels/image-codec";
import { createCheckpoint, throwIfCancelled } from "../work-checkpoint";
import { cutOut, localColoursFromMatte } from "./alpha-matting";
import { toWorkingResolution } from "./background-removal.classical";

/**
 * Background removal with a salient-object / matting model in ONNX format,
 * run on the CPU by onnxruntime-node. The models that rembg and similar tools
 * use all share one contract: a 1x3xHxW float input (RGB, normalised per
 * channel) and a 1x1xHxW saliency map as the first output. They differ in the
 * normalisation, the default size and whether the output went through a
 * sigmoid; `kind` picks those.
 */
interface ModelPreset {
  mean: [number, number, number];
  std: [number, number, number];
  /** Used when the model's input has symbolic height and width. */
  size: number;
}

const IMAGENET = { mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] } as const;

const PRESETS: Record<SaliencyModelKind, ModelPreset> = {
  u2net: { mean: [...IMAGENET.mean], std: [...IMAGENET.std], size: 320 },
  // IS-Net (DIS) subtracts the ImageNet mean but does not divide by the deviation.
  isnet: { mean: [...IMAGENET.mean], std: [1, 1, 1], size: 1024 },
  birefnet: { mean: [...IMAGENET.mean], std: [...IMAGENET.std], size: 1024 },
};

/** Guesses the model family from its file name ("isnet-general-use.onnx"); U2-Net's conventions otherwise. */
export function inferModelKind(modelPath: string): SaliencyModelKind {
  const name = path.basename(modelPath).toLowerCase();
  if (name.includes("isnet")) return "isnet";
  if (name.includes("birefnet")) return "birefnet";
  return "u2net";
}

export interface OnnxBackgroundRemoverOptions {
  modelPath: string;
  /** Default: inferred from the file name. */
  kind?: SaliencyModelKind;
  /**
   * Input side. For models with symbolic height and width, the size fed (default: the kind's usual
   * size); for fixed-size exports such as IS-Net's, the model is resized to it (models/model-input-size.ts).
   */
  inputSize?: number;
  /** Per-channel normalisation of RGB in 0..1, as the model's publisher gives it. Default: the kind's. */
  mean?: [number, number, number] | undefined;
  std?: [number, number, number] | undefined;
  /** Where the model runs. Default: this thread's shared runner. */
  runner?: OnnxRunner;
  /** Working resolution for the edge colour estimates. */
  workingSize?: number;
}

export class OnnxBackgroundRemover implements BackgroundRemover, SubjectSegmenter {
  private readonly preset: ModelPreset;
  private readonly runner: OnnxRunner;
  /** With an input size, a fixed-size model is resized to it by the runner, once. */
  private readonly spec: OnnxModelSpec;
  private info: Promise<OnnxModelInfo> | undefined;

  constructor(private readonly options: OnnxBackgroundRemoverOptions) {
    // A wrong path is a configuration mistake: say so at start, not at the first job.
    if (!existsSync(options.modelPath)) throw new Error(`Background model not found: ${options.modelPath}`);
    const preset = PRESETS[options.kind ?? inferModelKind(options.modelPath)];
    this.preset = { ...preset, mean: options.mean ?? preset.mean, std: options.std ?? preset.std };
    this.runner = options.runner ?? sharedOnnxRunner();
    this.spec = { path: options.modelPath, ...(options.inputSize ? { inputSize: options.inputSize } : {}) };
  }

  /** Loads the model now instead of at the first edit. */
  async load(): Promise<OnnxModelInfo> {
    this.info ??= this.runner.load(this.spec);
    // A failed load is retried by the next edit rather than cached.
    this.info.catch(() => {
      this.info = undefined;
    });
    return this.info;
  }

  async removeBackground(image: RgbaImage, context: WorkContext): Promise<RgbaImage> {
    const checkpoint = createCheckpoint(context.signal);
    const saliency = await this.predict(image, context);
    const alpha = await resizeGrey(saliency, image.width, image.height);
    const work = await toWorkingResolution(image, this.options.workingSize ?? 800);
    const workAlpha = work === image ? alpha : await resizeGrey(saliency, work.width, work.height);
    const colours = localColoursFromMatte(work, workAlpha.data);
    return cutOut(image, alpha, colours, checkpoint);
  }

  async segmentSubject(image: RgbaImage, context: WorkContext): Promise<GreyImage> {
    return resizeGrey(await this.predict(image, context), image.width, image.height);
  }

  /** The model's saliency map, 0..255, at the model's resolution. */
  private async predict(image: RgbaImage, context: WorkContext): Promise<GreyImage> {
    const info = await this.load();
    throwIfCancelled(context.signal);
    const side = this.options.inputSize ?? this.preset.size;
    const { width, height } = info.inputSize ?? { width: side, height: side };
    const { data: rgb } = await sharp(image.data, { raw: { width: image.width, height: image.height, channels: 4 } })
      .removeAlpha()
      .resize(width, height, { fit: "fill" })
      .raw()
      .toBuffer({ resolveWithObject: true });
    const plane = width * height;
    const input = new Float32Array(3 * plane);
    const { mean, std } = this.preset;
    for (let i = 0; i < plane; i++) {
      for (let c = 0; c < 3; c++) input[c * plane + i] = ((rgb[i * 3 + c] ?? 0) / 255 - (mean[c] ?? 0)) / (std[c] ?? 1);
    }
    const output = await this.runner.run(this.spec, { data: input, dims: [1, 3, height, width] }, context.signal);
    throwIfCancelled(context.signal);
    return saliencyToGrey(output);
  }
}

/**
 * The first output's last two dimensions are the map. Logits (values outside
 * 0..1, as BiRefNet exports give) go through a sigmoid; then the map is
 * stretched to 0..1 as rembg does, unless it holds no subject at all.
 */
function saliencyToGrey(tensor: FloatTensor): GreyImage {
  const { dims } = tensor;
  const height = dims[dims.length - 2] ?? 0;
  const width = dims[dims.length - 1] ?? 0;
  if (width <= 0 || height <= 0 || tensor.data.length < width * height) {
    throw new EngineError("model_failed", `The background model's output is not a float saliency map (dims ${dims.join("x")}).`);
  }
  const values = tensor.data.subarray(0, width * height);
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const value of values) {
    if (value < min) min = value;
    if (value > max) max = value;
  }
  const logits = min < -0.01 || max > 1.01;
  const activate = (value: number) => (logits ? 1 / (1 + Math.exp(-value)) : value);
  const low = activate(min);
  const high = activate(max);
  if (!(high >= 0.3)) throw new EngineError("nothing_detected", "The background model found no subject in the image.");
  const range = Math.max(high - low, 1e-6);
  const data = new Uint8Array(width * height);
  for (let i = 0; i < data.length; i++) data[i] = Math.round((255 * (activate(values[i] ?? 0) - low)) / range);
  return { data, width, height };
}
