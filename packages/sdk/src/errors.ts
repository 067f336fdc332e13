import type { ErrorShape } from "./router.generated";

export type ErrorCode = ErrorShape["data"]["code"];

/** The Retouch API answered with an error: `code` is the spec's code, `status` the HTTP status. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** Seconds to wait before retrying (429). */
  readonly retryAfterSeconds: number | undefined;
  /** For invalid input: each field and its problem. */
  readonly issues: Array<{ path: string; message: string }> | undefined;

  constructor(options: {
    code: ErrorCode;
    status: number;
    message: string;
    retryAfterSeconds?: number;
    issues?: Array<{ path: string; message: string }>;
  }) {
    super(options.message);
    this.name = "ApiError";
    this.code = options.code;
    this.status = options.status;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.issues = options.issues;
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
