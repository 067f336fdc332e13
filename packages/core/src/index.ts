export { AUTH_BASE_PATH, sessionCookieName } from "./auth/auth";
export {
  defaultClientMetadataFetch,
  MCP_ACCESS_TOKEN_PREFIX,
  MCP_PATH,
  MCP_REFRESH_TOKEN_PREFIX,
  MCP_SCOPE,
  mcpResource,
  OAUTH_CONSENT_PAGE,
  OAUTH_ERROR_PAGE,
  OAUTH_LOGIN_PAGE,
  OAUTH_SCOPES,
} from "./auth/mcp-oauth.plugin";
export {
  type BlobStore,
  BlobStoreError,
  FileBlobStore,
  isBlobStoreError,
  type PutOptions,
} from "./blobs/blob-store";
export { openBlobStore } from "./blobs/open-blob-store";
// The S3 store itself is loaded on demand (openBlobStore): importing it here would load the AWS SDK at every start.
export type { S3BlobStore, S3BlobStoreOptions } from "./blobs/s3-blob-store";
export {
  type BlobStoreConfig,
  type Config,
  ConfigError,
  isPaidPlanName,
  loadConfig,
  type PaidPlanName,
  type PaymentsConfig,
  parseConfig,
  parseDuration,
} from "./config/env";
export { isPlanName, PLAN_LIMITS, PLAN_NAMES, type PlanName } from "./config/plans";
export { type DatabaseHandle, type Db, openDatabase } from "./db/database";
export { migrateToLatest } from "./db/migrate";
export { ERROR_CODES, type ErrorCode } from "./errors/error-codes";
export {
  isPublicSentence,
  JOB_FAILURE_CODES,
  type JobFailure,
  type JobFailureCode,
  jobFailure,
  jobFailureFromError,
  type PublicJobFailure,
} from "./errors/job-failure-codes";
export { type ErrorBody, RetouchError } from "./errors/retouch-error";
export { newId } from "./lib/ids";
export { createLogger, type Logger } from "./lib/logger";
export {
  type BodyAllowance,
  modelFileLabel,
  type QueueDepth,
  RetouchMetrics,
  type WebhookAttemptOutcome,
} from "./lib/metrics";
export { constantTimeEqual, randomHex, sha256Hex } from "./lib/secrets";
export { UrlSigner } from "./lib/signed-urls";
export { createMailer, type Mailer, type MailMessage } from "./mail/mailer";
export { QUEUE_CHANNEL } from "./processing/agenda-formats";
export { ImageProcessor, MAX_ATTEMPTS } from "./processing/image-processor";
export { JobQueue, PROCESS_IMAGE } from "./processing/job-queue";
export { runMaintenance } from "./processing/maintenance";
export {
  catalogInpaintingOptions,
  catalogModelOptions,
  imageEngineOptions,
  ModelProvisioner,
} from "./processing/model-provisioner";
export { createQueueWorker, type QueueWorker, runServiceMaintenance } from "./processing/queue-worker";
export {
  MAX_BATCH_SIZE,
  MAX_INLINE_IMAGE_BYTES,
  MAX_PROMPT_CHARS,
  MAX_WAIT_SECONDS,
  processInputSchema,
  processItemSchema,
} from "./schemas/process.schemas";
export {
  type BlobMigrationEvent,
  type BlobMigrationSummary,
  MAX_MIGRATION_FAILURES,
  type MigrationTarget,
  migrateBlobs,
  openMigrationTarget,
} from "./services/blob-migration.service";
export {
  type EventTarget,
  JobEventsService,
  type ProgressEvent,
  type ProgressStream,
} from "./services/job-events.service";
export { READY_CHECK_TIMEOUT_MS, type Readiness } from "./services/operations.service";
export { bearerToken, type Principal, type RequestInfo } from "./services/principal";
export {
  createAdminService,
  createServices,
  type ServiceDependencies,
  type Services,
} from "./services/services";
export { ServiceSecretsStore } from "./stores/service-secrets.store";
export { authenticate, type CredentialKind, type ProcedureCredentialKind } from "./trpc/authenticate";
export { type Context, createContext } from "./trpc/context";
export { isClientError, toRetouchError, trpcErrorResponse } from "./trpc/errors";
export { RATE_LIMIT_HEADERS, type RateLimitHeaderName } from "./trpc/rate-limit-headers";
export { type AppRouter, appRouter } from "./trpc/router";
export { type RouterOperation, routerOperations } from "./trpc/router-operations";
export { createCallerFactory, type MultipartForm, type ProcedureMeta } from "./trpc/trpc";
