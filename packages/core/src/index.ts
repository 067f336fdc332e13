export { AUTH_BASE_PATH, sessionCookieName } from "./auth/auth";
export { type Config, ConfigError, loadConfig, parseConfig, parseDuration } from "./config/env";
export { isPlanName, PLAN_LIMITS, PLAN_NAMES, type PlanName } from "./config/plans";
export { type DatabaseHandle, type Db, openDatabase } from "./db/database";
export { migrateToLatest } from "./db/migrate";
export { ClassicalBackgroundRemover, type ClassicalSegmenterOptions } from "./engine/background-removal.classical";
export { inferModelKind, OnnxBackgroundRemover, type OnnxBackgroundRemoverOptions } from "./engine/background-removal.onnx";
export { COCO_LABELS } from "./engine/detection-vocabulary";
export {
  type BackgroundModelOptions,
  createImageEngine,
  type ImageEngineOptions,
  imageEngineOptions,
} from "./engine/engine";
export {
  type BackgroundRemover,
  type Box,
  type Detection,
  type EditRequest,
  type EditResult,
  type GenerativeEditor,
  type GenerativeEditTask,
  type GreyImage,
  type ImageEngine,
  type Inpainter,
  type ObjectDetector,
  type ObjectRemovalTask,
  type ObjectRemover,
  type OutputFormat,
  type RgbaImage,
  type Route,
  SALIENCY_MODEL_KINDS,
  type SaliencyModelKind,
  type WorkContext,
  type Workflow,
} from "./engine/engine.ports";
export { EngineError, type EngineFailureReason, isEngineError } from "./engine/engine-error";
export { CATALOG, type EditStep, parseInstructions } from "./engine/generative-catalog";
export { SharpCatalogEditor } from "./engine/generative-editor.sharp";
export {
  DEFAULT_MAX_PIXELS,
  DEFAULT_QUALITY,
  decodeImage,
  decodeMask,
  type EncodedImage,
  encodeImage,
  type ImageInfo,
  inspectImage,
} from "./engine/image-codec";
export {
  type BackgroundModelEntry,
  BUILT_IN_CATALOG,
  isPermissive,
  MODEL_TASKS,
  type ModelCatalog,
  type ModelEntry,
  type ModelTask,
  PERMISSIVE_LICENCES,
} from "./engine/models/model-catalog";
export { checkFile, type DownloadProgress, downloadModel, downloadUrls } from "./engine/models/model-download";
export { isModelError, ModelError, type ModelFailureReason } from "./engine/models/model-error";
export {
  ModelLibrary,
  type ModelState,
  type ModelStatus,
  type PullOptions,
  type PullResult,
} from "./engine/models/model-library";
export { HumanObjectDetector, type HumanObjectDetectorOptions } from "./engine/object-detector.human";
export { type DetectAndInpaintOptions, DetectAndInpaintRemover } from "./engine/object-removal";
export { type PatchInpainterOptions, PatchMatchInpainter } from "./engine/patch-inpainter";
export { type PromptRoute, parseDetectQuery, type RouteInput, routePrompt } from "./engine/prompt-router";
export { ERROR_CODES, type ErrorCode } from "./errors/error-codes";
export { type ErrorBody, RetouchError } from "./errors/retouch-error";
export { newId } from "./lib/ids";
export { createLogger, type Logger } from "./lib/logger";
export { constantTimeEqual, randomHex, sha256Hex } from "./lib/secrets";
export { UrlSigner } from "./lib/signed-urls";
export { createMailer, type Mailer, type MailMessage } from "./mail/mailer";
export { EnginePool } from "./processing/engine-pool";
export { ImageProcessor, MAX_ATTEMPTS } from "./processing/image-processor";
export { JobQueue, PROCESS_IMAGE, QUEUE_CHANNEL } from "./processing/job-queue";
export { runMaintenance } from "./processing/maintenance";
export { catalogModelOptions, ModelProvisioner } from "./processing/model-provisioner";
export { MAX_BATCH_SIZE, MAX_PROMPT_CHARS, processItemSchema } from "./schemas/process.schemas";
export { bearerToken, type Principal, type RequestInfo } from "./services/principal";
export { createAdminService, createServices, type ServiceDependencies, type Services } from "./services/services";
export { authenticate, type CredentialKind } from "./trpc/authenticate";
export { type Context, createContext } from "./trpc/context";
export { isClientError, toRetouchError, trpcErrorResponse } from "./trpc/errors";
export { type AppRouter, appRouter } from "./trpc/router";
export { createCallerFactory, type ProcedureMeta } from "./trpc/trpc";
