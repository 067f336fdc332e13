import { TRPCError } from "@trpc/server";
import { type TRPC_ERROR_CODE_KEY, TRPC_ERROR_CODES_BY_KEY } from "@trpc/server/rpc";
import { ZodError } from "zod";
import { isBlobStoreError } from "../blobs/blob-store";
import { RetouchError } from "../errors/retouch-error";

const trpcCodeByStatus: Record<number, TRPC_ERROR_CODE_KEY> = {
  400: "BAD_REQUEST",
  401: "UNAUTHORIZED",
  402: "PAYMENT_REQUIRED",
  403: "FORBIDDEN",
  404: "NOT_FOUND",
  405: "METHOD_NOT_SUPPORTED",
  408: "TIMEOUT",
  409: "CONFLICT",
  413: "PAYLOAD_TOO_LARGE",
  415: "UNSUPPORTED_MEDIA_TYPE",
  422: "UNPROCESSABLE_CONTENT",
  429: "TOO_MANY_REQUESTS",
  500: "INTERNAL_SERVER_ERROR",
  502: "BAD_GATEWAY",
  503: "SERVICE_UNAVAILABLE",
};

export function trpcCodeFor(error: RetouchError): TRPC_ERROR_CODE_KEY {
  return trpcCodeByStatus[error.status] ?? "INTERNAL_SERVER_ERROR";
}

/**
 * `error.data` of a tRPC error: the domain code and status (and `Retry-After`
 * seconds, invalid fields, or why a job failed) beside tRPC's own fields.
 */
export function trpcErrorData(domain: RetouchError, path: string | undefined) {
  return {
    code: domain.code,
    httpStatus: domain.status,
    ...(domain.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: domain.retryAfterSeconds }),
    ...(domain.issues ? { issues: domain.issues } : {}),
    ...(domain.failure ? { failure: domain.failure } : {}),
    path,
  };
}

/**
 * A whole tRPC error response, for the answers the HTTP host gives before tRPC
 * reads the request (401, 413, 503, a body it refused): the shape tRPC
 * clients parse, as the router's error formatter writes it.
 */
export function trpcErrorResponse(domain: RetouchError) {
  return {
    error: {
      message: domain.message,
      code: TRPC_ERROR_CODES_BY_KEY[trpcCodeFor(domain)],
      data: trpcErrorData(domain, undefined),
    },
  };
}

function fromZodError(error: ZodError): RetouchError {
  const issues = error.issues.map((issue) => ({ path: issue.path.join("."), message: issue.message }));
  const summary = issues.map((issue) => (issue.path ? `${issue.path}: ${issue.message}` : issue.message)).join("; ");
  return new RetouchError("invalid_request", `Invalid request: ${summary}`, { issues });
}

/**
 * Turns anything a procedure or adapter threw into the domain error that the
 * client sees. Unknown errors become a generic `internal_error`: their message
 * and stack stay in the logs.
 */
export function toRetouchError(error: unknown): RetouchError {
  if (error instanceof RetouchError) return error;
  if (outOfFileDescriptors(error)) {
    // Overload, not a fault: the process (or the system) ran out of file descriptors for a moment.
    return new RetouchError("service_unavailable", "The server is overloaded right now; retry in a few seconds.", {
      retryAfterSeconds: 5,
      cause: error,
    });
  }
  if (isBlobStoreError(error)) {
    // The store (an S3 bucket) is down or refusing: the server's condition, never the client's fault, and passing.
    return new RetouchError("service_unavailable", "The image store is not answering right now; retry in a few seconds.", {
      retryAfterSeconds: 5,
      cause: error,
    });
  }
  if (error instanceof ZodError) return fromZodError(error);
  if (error instanceof TRPCError) {
    if (error.cause instanceof RetouchError) return error.cause;
    if (error.cause instanceof ZodError) return fromZodError(error.cause);
    const cause: unknown = error.cause;
    if (isBlobStoreError(cause)) return toRetouchError(cause);
    switch (error.code) {
      case "PARSE_ERROR":
        return new RetouchError("invalid_json");
      case "BAD_REQUEST":
        if (error.cause instanceof SyntaxError) return new RetouchError("invalid_json");
        // tRPC's own input errors (e.g. a malformed batch call) carry safe messages.
        return new RetouchError("invalid_request", error.message);
      case "PAYLOAD_TOO_LARGE":
        return new RetouchError("payload_too_large");
      case "UNSUPPORTED_MEDIA_TYPE":
        return new RetouchError("unsupported_media_type");
      case "NOT_FOUND":
        return new RetouchError("not_found");
      case "METHOD_NOT_SUPPORTED":
        return new RetouchError("method_not_allowed");
      default:
        return new RetouchError("internal_error", undefined, { cause: error });
    }
  }
  return new RetouchError("internal_error", undefined, { cause: error });
}

/** EMFILE / ENFILE anywhere in the chain of causes (a database connect, a blob file, wrapped by a library or not). */
function outOfFileDescriptors(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 8 && current instanceof Error; depth++) {
    const code = (current as { code?: unknown }).code;
    if (code === "EMFILE" || code === "ENFILE") return true;
    current = current.cause;
  }
  return false;
}

/**
 * True for errors the client caused; false for the ones worth an error log line.
 * The host of a client's `image_url` failing (502) is the client's pick, and a
 * refusal that says when to retry (503 with Retry-After) is load, not a fault:
 * both are logged where they happen, as warnings, so no client can write error
 * lines with stacks at will.
 */
export function isClientError(error: RetouchError): boolean {
  return (
    error.status < 500 ||
    error.code === "image_fetch_failed" ||
    (error.code === "service_unavailable" && error.retryAfterSeconds !== undefined)
  );
}
