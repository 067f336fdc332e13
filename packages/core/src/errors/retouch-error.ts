import { ERROR_CODES, type ErrorCode } from "./error-codes";

export interface ErrorIssue {
  path: string;
  message: string;
}

/** The body of every error response. */
export interface ErrorBody {
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

  constructor(
    code: ErrorCode,
    message?: string,
    options: { retryAfterSeconds?: number; issues?: ErrorIssue[]; cause?: unknown } = {},
  ) {
    super(message ?? ERROR_CODES[code].message, { cause: options.cause });
    this.name = "RetouchError";
    this.code = code;
    this.status = ERROR_CODES[code].status;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.issues = options.issues;
  }

  toBody(): ErrorBody {
    return { code: this.code, message: this.message, ...(this.issues ? { issues: this.issues } : {}) };
  }

  /** Headers that belong with this error (for now only `Retry-After`). */
  headers(): Record<string, string> {
    return this.retryAfterSeconds === undefined ? {} : { "Retry-After": String(this.retryAfterSeconds) };
  }
}
