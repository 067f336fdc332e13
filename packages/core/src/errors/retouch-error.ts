import { ERROR_CODES, type ErrorCode } from "./error-codes";
import type { PublicJobFailure } from "./job-failure-codes";

export interface ErrorIssue {
  path: string;
  message: string;
}

/** The body of every error response; a failed job's (`job_failed`) also says why it failed. */
export interface ErrorBody extends Partial<PublicJobFailure> {
  code: ErrorCode;
  message: string;
  issues?: ErrorIssue[];
}

/**
 * A domain error a client may see. Services throw it; the edges (REST, tRPC,
 * MCP) turn it into their own format using `status` and `toBody()`.
 */
export class RetouchError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** Seconds, sent as the `Retry-After` header. */
  readonly retryAfterSeconds: number | undefined;
  readonly issues: ErrorIssue[] | undefined;
  /** For `job_failed`: why the job failed, as its status says it. */
  readonly failure: PublicJobFailure | undefined;

  constructor(
    code: ErrorCode,
    message?: string,
    options: { retryAfterSeconds?: number; issues?: ErrorIssue[]; failure?: PublicJobFailure; cause?: unknown } = {},
  ) {
    super(message ?? ERROR_CODES[code].message, { cause: options.cause });
    this.name = "RetouchError";
    this.code = code;
    this.status = ERROR_CODES[code].status;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.issues = options.issues;
    this.failure = options.failure;
  }

  toBody(): ErrorBody {
    return {
      code: this.code,
      message: this.message,
      ...(this.issues ? { issues: this.issues } : {}),
      ...(this.failure ?? {}),
    };
  }

  /** Headers that belong with this error (for now only `Retry-After`). */
  headers(): Record<string, string> {
    return this.retryAfterSeconds === undefined ? {} : { "Retry-After": String(this.retryAfterSeconds) };
  }
}
