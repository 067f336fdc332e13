export {
  type Account,
  type BatchStatus,
  type BatchSubmission,
  type BillingState,
  type Capabilities,
  type ConnectedApp,
  type JobFilters,
  type JobListing,
  type JobResult,
  type JobStatus,
  type JobsPage,
  type PaidPlan,
  Retouch,
  type RetouchOptions,
  type Session,
  type SessionState,
  type SingleSubmission,
  type WaitOptions,
} from "./client";
export {
  AbortedError,
  ApiError,
  type ErrorCode,
  JobFailedError,
  type JobFailure,
  type JobFailureCode,
  LocalError,
  NetworkError,
  TimeoutError,
} from "./errors";
export { type ImageInput, imageToBase64 } from "./images";
export { FIXED_OUTPUT_FORMATS, OUTPUT_FORMATS, type OutputFormat, outputFormatFor, type Workflow } from "./output-formats";
export type { BatchItem, EditOptions, WireItem } from "./process-item";
export { PROCESS_ITEM_FIELDS } from "./process-item.generated";
export type { AppRouter, ErrorShape } from "./router.generated";
export {
  type VerifyWebhookOptions,
  verifyWebhook,
  WEBHOOK_SIGNATURE_SCHEME,
  type WebhookRejection,
  WebhookVerificationError,
} from "./webhooks";
