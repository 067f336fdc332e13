/**
 * The engine's public types and its ports: one interface per workflow, so a
 * hosted provider can replace a built-in implementation without the jobs
 * pipeline noticing. Ports work on decoded pixels; decoding (limits, EXIF
 * orientation) and encoding (the spec's format rules) stay in `engine.ts`.
 */

/**
 * The formats an edit can be written in: the one list the request schema, the capabilities, the engine's checks
 * and the dashboard read (the SDK, which loads none of this code, gets it written into process-item.generated.ts by
 * `pnpm --filter @retouch/sdk generate`).
 */
export const OUTPUT_FORMATS = ["jpeg", "png", "webp"] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

export function isOutputFormat(value: unknown): value is OutputFormat {
  return OUTPUT_FORMATS.includes(value as OutputFormat);
}

/** Families of ONNX salient-object models, which differ in input normalisation and size. */
export const SALIENCY_MODEL_KINDS = ["u2net", "isnet", "birefnet"] as const;
export type SaliencyModelKind = (typeof SALIENCY_MODEL_KINDS)[number];
export const WORKFLOWS = ["background_removal", "object_removal", "generative_edit"] as const;
export type Workflow = (typeof WORKFLOWS)[number];

/**
 * What an edit is written in (the spec): a background removal always yields PNG, for its transparency, whatever
 * `format` says; any other edit the requested format, JPEG by default. Read at submission (the job's recorded
 * format) and by the engine's encoder, so the two never disagree.
 */
export function outputFormatFor(workflow: Workflow, requested: OutputFormat | undefined): OutputFormat {
  return workflow === "background_removal" ? "png" : (requested ?? "jpeg");
}

export interface EditRequest {
  /** JPEG, PNG or WebP bytes. */
  image: Buffer;
  prompt: string;
  negativePrompt?: string;
  /** Ignored by background removal, which always yields PNG. Default JPEG. */
  format?: OutputFormat;
  /** 1 to 100, for JPEG and WebP. */
  quality?: number;
  /** An image whose white (opaque) pixels mark the area to edit; resized to the image. */
  mask?: Buffer;
  /** Terms separated by " . ": forces object removal and replaces the derived vocabulary. */
  detect?: string;
  /**
   * The plan the submission accepted (planEdit's answer, stored with the job): executed as given, never
   * planned again from this engine's configuration. Absent (a job queued before plans were stored, a
   * direct caller): the engine plans the prompt itself.
   */
  plan?: PlannedEdit;
  signal?: AbortSignal;
}

export interface EditResult {
  image: Buffer;
  format: OutputFormat;
  width: number;
  height: number;
  workflow: Workflow;
  /** Present when a hosted provider made (part of) the edit. */
  provider?: ProviderRecord;
  /**
   * What the engine left out on its own judgement, for the job's log (not the client's):
   * detections the segmenter did not confirm in a removal that went ahead without them.
   */
  notes?: string[];
  /** Where the edit's time went, stage by stage in order (the job's log and the worker's metrics). */
  stages?: StageTiming[];
}

/**
 * The stages of an edit, each timed from the end of the one before: the early
 * detection (an object removal's detector and segmenter's encoder, side by
 * side), the decode, the hole of an object removal, the workflow's own work
 * (the cut-out, the fill, the hosted call), and the encode (with the
 * collection of the edit's garbage before it).
 */
export const EDIT_STAGES = ["detect", "decode", "mask", "edit", "encode"] as const;
export type EditStage = (typeof EDIT_STAGES)[number];

export interface StageTiming {
  stage: EditStage;
  ms: number;
}

/** Which hosted model made an edit, for the job's record. */
export interface ProviderRecord {
  name: string;
  model: string;
  /** Time spent waiting on the vendor, retries included. */
  latencyMs: number;
}

export interface Route {
  workflow: Workflow;
  /** What object removal should look for; empty for the other workflows. */
  removalTerms: string[];
}

/** Who carries out an accepted prompt: the built-in engine, or the hosted generative provider. */
export const EXECUTORS = ["builtin", "provider"] as const;
export type Executor = (typeof EXECUTORS)[number];

/**
 * An accepted prompt's plan (planEdit): the workflow, who carries it out, and the prompt's reading.
 * Plain JSON, made once at submission and stored with the job; the worker's engine executes it as
 * stored (readPlannedEdit checks one read back), so an api and a worker configured differently cannot
 * make two different edits of one prompt. A change to this shape must keep reading the stored one.
 */
export interface PlannedEdit {
  workflow: Workflow;
  executor: Executor;
  route: Route & {
    /** The prompt's clauses after a removal, for the built-in catalog (PromptRoute's). */
    followUpInstructions: string[];
  };
}

export interface ImageEngine {
  edit(request: EditRequest): Promise<EditResult>;
  /** Loads models ahead of the first edit (a worker calls it at start); optional for other engines. */
  warmUp?(): Promise<void>;
}

/** 8-bit RGBA pixels, row-major, 4 bytes per pixel, no padding. */
export interface RgbaImage {
  data: Uint8Array;
  width: number;
  height: number;
}

/** One byte per pixel: an alpha matte or a mask (255 = selected). */
export interface GreyImage {
  data: Uint8Array;
  width: number;
  height: number;
}

/** What every workflow receives besides its pixels. */
export interface WorkContext {
  signal?: AbortSignal;
  /** A hosted port (background or object removal by a vendor) reports here that it made part of the edit. */
  recordProvider?: (record: ProviderRecord) => void;
  /** A step reports here what it left out on its own judgement (EditResult.notes). */
  recordNote?: (note: string) => void;
  /** A step reports here that a stage of the edit ended (EditResult.stages): an object remover, once its hole is made. */
  endStage?: (stage: EditStage) => void;
}

export interface BackgroundRemover {
  /** Returns the image with the background made transparent (straight, not premultiplied, alpha). */
  removeBackground(image: RgbaImage, context: WorkContext): Promise<RgbaImage>;
}

/**
 * A learned salient-object model: how much each pixel belongs to the
 * picture's main subject. Background removal is built on it, and object
 * removal uses it to find a detected object's own shape inside its box.
 */
export interface SubjectSegmenter {
  /** A 0..255 matte of the main subject, at the image's size. */
  segmentSubject(image: RgbaImage, context: WorkContext): Promise<GreyImage>;
}

export interface ObjectRemovalTask {
  image: RgbaImage;
  /** Already resized to the image; when present, detection is skipped. */
  mask?: GreyImage;
  /** From `detect` or derived from the prompt by the router. */
  terms: string[];
  prompt: string;
}

export interface ObjectRemover {
  removeObjects(task: ObjectRemovalTask, context: WorkContext): Promise<RgbaImage>;
}

export interface GenerativeEditTask {
  image: RgbaImage;
  prompt: string;
  negativePrompt?: string;
  /** Already resized to the image: the edit applies inside it only. */
  mask?: GreyImage;
  /** The largest output the engine accepts (pixels). */
  maxPixels: number;
}

export interface GenerativeEditor {
  edit(task: GenerativeEditTask, context: WorkContext): Promise<RgbaImage>;
}

/** A rectangle in pixels of the image that was searched. */
export interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface Detection {
  /** One of the detector's `labels`. */
  label: string;
  /** 0 to 1. */
  score: number;
  box: Box;
}

/** Used by the built-in object remover; a hosted detector can replace it. */
export interface ObjectDetector {
  /** Every label the detector can report. */
  readonly labels: readonly string[];
  /**
   * The side of the square picture the detector looks at, when it resizes
   * every image to one (boxes still come in the given image's pixels). The
   * engine then detects on the input decoded at that size, before decoding
   * it at full size.
   */
  readonly inputSize?: number;
  /**
   * It finds what it is told to (Grounding DINO): `labels` is empty, any term is accepted,
   * and `detect` is given the phrases to look for, each detection labelled with its phrase.
   */
  readonly openVocabulary?: boolean;
  detect(image: RgbaImage, context: WorkContext, phrases?: readonly string[]): Promise<Detection[]>;
}

/** Used by the built-in object remover; fills the masked pixels from the rest of the image. */
export interface Inpainter {
  inpaint(image: RgbaImage, mask: GreyImage, context: WorkContext): Promise<RgbaImage>;
}

/** A face found in a picture. */
export interface FaceDetection {
  /** 0 to 1. */
  score: number;
  /** The face itself (about brows to chin), in pixels of the image searched. */
  box: Box;
}

/** Used by the built-in editor's face blur; a hosted detector can replace it. */
export interface FaceDetector {
  /** Every face found; none is an empty list, not an error. */
  detectFaces(image: RgbaImage, context: WorkContext): Promise<FaceDetection[]>;
}
