export {
  type BatchItem,
  type BatchStatus,
  type BatchSubmission,
  type Capabilities,
  type EditOptions,
  type JobResult,
  type JobStatus,
  type OutputFormat,
  Retouch,
  type RetouchOptions,
  type Session,
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
export type { AppRouter, ErrorShape } from "./router.generated";
export { type VerifyWebhookOptions, verifyWebhook, WebhookVerificationError } from "./webhooks";
