import type { ErrorShape } from "./router.generated";

export type ErrorCode = ErrorShape["data"]["code"];

/** Why a job failed, as the service says it (status, result, webhook): the spec's `error` plus code and sentence. */
export type JobFailure = NonNullable<ErrorShape["data"]["failure"]>;
/** A job failure code: `nothing_detected`, `model_unavailable`, `upstream_failed`, ... (docs/errors.md). */
export type JobFailureCode = JobFailure["error_code"];

/** The Retouch API answered with an error: `code` is the spec's code, `status` the HTTP status. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** Seconds to wait before retrying (429). */
  readonly retryAfterSeconds: number | undefined;
  /** For invalid input: each field and its problem. */
  readonly issues: Array<{ path: string; message: string }> | undefined;
  /** For `job_failed`: why the job failed. */
  readonly failure: JobFailure | undefined;

  constructor(options: {
    code: ErrorCode;
    status: number;
    message: string;
    retryAfterSeconds?: number;
    issues?: Array<{ path: string; message: string }>;
    failure?: JobFailure;
  }) {
    super(options.message);
    this.name = "ApiError";
    this.code = options.code;
    this.status = options.status;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.issues = options.issues;
    this.failure = options.failure;
  }
}

/**
 * A job ended in `error` (its credit was refunded): `code` is `job_failed`,
 * `errorCode` says why (`nothing_detected`, `upstream_failed`, ...) and the
 * message is the service's sentence about what to do.
 */
export class JobFailedError extends ApiError {
  readonly jobId: string;
  readonly errorCode: JobFailureCode;
  /** The service's sentence alone (the message also names the job). */
  readonly errorMessage: string;

  constructor(jobId: string, failure: JobFailure) {
    const refund = failure.error_code === "not_started" ? "" : " Its credit was refunded.";
    super({
      code: "job_failed",
      status: 500,
      message: `Job ${jobId} failed (${failure.error_code}): ${failure.error_message}${refund}`,
      failure,
    });
    this.name = "JobFailedError";
    this.jobId = jobId;
    this.errorCode = failure.error_code;
    this.errorMessage = failure.error_message;
  }

  /** From a failed job's status; one from a server older than failure codes says only the spec's text. */
  static fromStatus(jobId: string, status: { error?: string; error_code?: JobFailureCode; error_message?: string }) {
    const error = status.error ?? "Processing failed";
    return new JobFailedError(jobId, {
      error,
      error_code: status.error_code ?? "internal_error",
      error_message: status.error_message ?? error,
    });
  }
}

/** Something went wrong on this side: no answer, too slow, or cancelled. */
export class LocalError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "LocalError";
  }
}

/** The server could not be reached, or the connection broke. */
export class NetworkError extends LocalError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "NetworkError";
  }
}

/** A wait (for a job, a download) took longer than allowed. */
export class TimeoutError extends LocalError {
  constructor(message: string) {
    super(message);
    this.name = "TimeoutError";
  }
}

/** The caller's AbortSignal fired. */
export class AbortedError extends LocalError {
  constructor(message = "The operation was aborted.", options?: { cause?: unknown }) {
    super(message, options);
    this.name = "AbortedError";
  }
}
