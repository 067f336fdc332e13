import { ApiError } from "@retouch/sdk";
import { TRPCClientError } from "@trpc/client";

interface ErrorData {
  code?: string;
  httpStatus?: number;
  retryAfterSeconds?: number;
}

function dataOf(error: unknown): ErrorData | undefined {
  if (error instanceof TRPCClientError) return (error.data ?? error.shape?.data) as ErrorData | undefined;
  return undefined;
}

/** The service's error code (`unauthorized`, `rate_limited`, ...), from either client. */
export function errorCode(error: unknown): string | undefined {
  if (error instanceof ApiError) return error.code;
  return dataOf(error)?.code;
}

export function isUnauthorized(error: unknown): boolean {
  return errorCode(error) === "unauthorized";
}

/** Worth asking again: the network failed or the service had a passing problem (5xx). A 4xx will say the same again. */
export function isTransient(error: unknown): boolean {
  if (error instanceof ApiError) return error.status >= 500;
  if (error instanceof TRPCClientError) {
    const status = dataOf(error)?.httpStatus;
    return status === undefined || status >= 500;
  }
  return false;
}

/** A sentence for a person: the service's own message (it says what to do), or what went wrong on the way. */
export function errorMessage(error: unknown): string {
  if (error instanceof ApiError || error instanceof TRPCClientError) {
    const data = dataOf(error);
    if (error instanceof TRPCClientError && !data?.code) {
      return "The service could not be reached. Check your connection and try again.";
    }
    const retry = error instanceof ApiError ? error.retryAfterSeconds : data?.retryAfterSeconds;
    return retry ? `${error.message} Try again in ${retry} s.` : error.message;
  }
  return error instanceof Error ? error.message : String(error);
}
