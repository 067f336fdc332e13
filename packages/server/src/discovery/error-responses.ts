import { ERROR_CODES, type ErrorCode, JOB_FAILURE_CODES } from "@retouch/core";

/**
 * The error table (core's errors/error-codes.ts) as OpenAPI: the `Error`
 * schema and the error responses of an operation. trpc-to-openapi's generator
 * documents errors in tRPC's own shape (`errorResponses` takes status codes or
 * descriptions, never a schema or examples), so each operation's declared
 * codes become responses here.
 */

/** A piece of the OpenAPI document written as JSON (what the generator cannot derive from a zod schema). */
export type Json = Record<string, unknown>;
/** One operation of the document, as the host's own routes describe themselves. */
export type Operation = Json & { responses: Record<string, Json>; parameters?: Json[]; requestBody?: Json; security?: unknown };

/** Where every error answer's schema is: `components.schemas.Error`. */
export const ERROR_SCHEMA = "#/components/schemas/Error";

/** The one error shape of the error table, `{ code, message }` and what a failed job adds, as a JSON Schema. */
export const errorSchema: Json = {
  type: "object",
  description: "Every error answer has this shape.",
  required: ["code", "message"],
  properties: {
    code: { type: "string", enum: Object.keys(ERROR_CODES), description: "Stable machine-readable code" },
    message: { type: "string", description: "What went wrong, in words a person can act on" },
    issues: {
      type: "array",
      description: "For invalid input: each field and its problem",
      items: {
        type: "object",
        required: ["path", "message"],
        properties: { path: { type: "string" }, message: { type: "string" } },
      },
    },
    error: { type: "string", description: 'With `job_failed`: the spec\'s generic text, "Processing failed"' },
    error_code: {
      type: "string",
      enum: Object.keys(JOB_FAILURE_CODES),
      description: "With `job_failed`: why the job failed, as its status says it (a job failure code)",
    },
    error_message: { type: "string", description: "With `job_failed`: why the job failed, in a sentence a person can act on" },
  },
};

const retryAfter = {
  "Retry-After": { description: "Seconds to wait before retrying", schema: { type: "integer", minimum: 1 } },
};

const STATUS_TEXT: Record<number, string> = {
  400: "Invalid request",
  401: "Authentication required or invalid credentials",
  402: "Not enough credits",
  403: "Forbidden",
  404: "Not found",
  408: "The request body stopped arriving",
  413: "Request body too large",
  415: "Unsupported body type",
  422: "Unprocessable",
  429: "Too many requests",
  500: "Server error",
  502: "Upstream provider failure",
  503: "Too many large requests in flight; retry after Retry-After",
};

/** An error body as the service writes it; a failed job's says why it failed. */
function exampleBody(code: ErrorCode): Json {
  if (code !== "job_failed") return { code, message: ERROR_CODES[code].message };
  const why = JOB_FAILURE_CODES.nothing_detected.message;
  return {
    code,
    message: `Job job_01jz8q5n7d3k2m4p6r8t0v2x4y failed (nothing_detected): ${why} Its credit was refunded.`,
    error: "Processing failed",
    error_code: "nothing_detected",
    error_message: why,
  };
}

/**
 * The error answers of an operation, grouped by status, each with an example
 * per code, from the error table (core's errors/error-codes.ts).
 */
export function errorResponses(codes: readonly ErrorCode[]): Record<string, Json> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const { status } = ERROR_CODES[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus.entries()]
      .sort(([a], [b]) => a - b)
      .map(([status, statusCodes]) => [
        String(status),
        {
          description: `${STATUS_TEXT[status] ?? "Error"}: ${statusCodes.map((code) => `\`${code}\``).join(", ")}`,
          ...(status === 429 || status === 503 ? { headers: retryAfter } : {}),
          content: {
            "application/json": {
              schema: { $ref: ERROR_SCHEMA },
              examples: Object.fromEntries(statusCodes.map((code) => [code, { value: exampleBody(code) }])),
            },
          },
        },
      ]),
  );
}
