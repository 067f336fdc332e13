import { type EngineFailureReason, isEngineError } from "@retouch/engine";
import { isBlobStoreError } from "../blobs/blob-store";

/**
 * The one table of job failure codes: why a job ended in `error`, as clients
 * read it in `error_code` and `error_message` (status, result, webhook, MCP,
 * SDK, CLI), beside the spec's generic `error: "Processing failed"`.
 *
 * Distinct from ERROR_CODES (error-codes.ts), which are the codes of HTTP
 * error answers: a failed job is a 200 on status and a 500 `job_failed` on
 * result, whatever its failure code. docs/errors.md documents both tables.
 *
 * `message` is the default sentence, shown when there is no better one.
 * `engineMessage: true` means the engine's own sentence (which names the
 * object, the size, the model to install) is shown instead, once it has passed
 * `isPublicSentence`; otherwise the default is always shown, because the
 * engine's text for that cause is for the operator (paths, library text).
 */
export const JOB_FAILURE_CODES = {
  invalid_request: {
    engineMessage: true,
    message: "The request could not be carried out as sent: check its fields (format, quality) and submit it again.",
  },
  unsupported_image: {
    engineMessage: true,
    message: "The image could not be read: send a complete JPEG, PNG or WebP file.",
  },
  image_too_large: {
    engineMessage: true,
    message: "The image is over this server's pixel limit: send a smaller image.",
  },
  invalid_mask: {
    engineMessage: true,
    message: "The mask cannot be used: send a PNG, white where the edit goes and black elsewhere, that marks part of the image.",
  },
  nothing_detected: {
    engineMessage: true,
    message: "Nothing the prompt names was found in the image: name something visible in it, or send a mask that marks it.",
  },
  target_not_detectable: {
    engineMessage: true,
    message: "What the prompt asks to remove cannot be found automatically: send a mask that marks it (white on black).",
  },
  target_too_large: {
    engineMessage: true,
    message:
      "What is to be removed covers too much of the picture to be filled in believably: send a mask if that is really meant.",
  },
  unsupported_instruction: {
    engineMessage: true,
    message: "The prompt asks for an edit this server cannot make: GET /api/capabilities lists what it can do.",
  },
  model_failed: {
    engineMessage: false,
    message:
      "A learned model on this server failed on this picture: submit it again later, or, to remove an object, send a mask that marks it. The operator's logs say why.",
  },
  model_unavailable: {
    engineMessage: true,
    message:
      "This edit needs a learned model that is not installed on this server: ask its operator to install one (`retouch models pull`), or send a mask.",
  },
  upstream_failed: {
    engineMessage: true,
    message: "The image provider this server uses failed or did not answer in time: submit the job again later.",
  },
  content_refused: {
    engineMessage: true,
    message: "The image provider refused this prompt or picture under its content policy: change the prompt or the image.",
  },
  plan_not_executable: {
    engineMessage: false,
    message:
      "This server accepted the edit, but the worker that took it is not set up to carry it out (the credit was refunded): tell the server's operator, or submit it again later.",
  },
  job_timeout: {
    engineMessage: false,
    message: "The edit took longer than this server allows one job: try a smaller image or a simpler prompt.",
  },
  worker_crashed: {
    engineMessage: false,
    message:
      "The worker editing this picture stopped on every attempt, so the job was given up: try a smaller image, or tell the operator.",
  },
  result_storage_failed: {
    engineMessage: false,
    message: "The edited image could not be stored on the server: submit the job again later.",
  },
  storage_unavailable: {
    engineMessage: false,
    message:
      "The server's image storage could not be reached while editing, so the input could not be read: submit the job again later.",
  },
  internal_error: {
    engineMessage: false,
    message: "Something went wrong on our side while editing: submit the job again later.",
  },
  not_started: {
    engineMessage: false,
    message: "This batch item could not be started, and was not charged: fix it and submit it again.",
  },
} as const satisfies Record<string, { engineMessage: boolean; message: string }>;

export type JobFailureCode = keyof typeof JOB_FAILURE_CODES;

/**
 * The engine's reasons, each to its public code. `cancelled` only happens to a
 * job when its time ran out (a lost claim also cancels, but then another worker
 * settles the job), so the processor reports it as `job_timeout`; here it is
 * the fallback for a cancellation nobody expected.
 */
const CODE_OF_ENGINE_REASON: Record<EngineFailureReason, JobFailureCode> = {
  invalid_request: "invalid_request",
  unsupported_image: "unsupported_image",
  image_too_large: "image_too_large",
  invalid_mask: "invalid_mask",
  nothing_detected: "nothing_detected",
  target_not_detectable: "target_not_detectable",
  target_too_large: "target_too_large",
  unsupported_instruction: "unsupported_instruction",
  model_failed: "model_failed",
  model_unavailable: "model_unavailable",
  upstream_failed: "upstream_failed",
  content_refused: "content_refused",
  plan_not_executable: "plan_not_executable",
  cancelled: "internal_error",
  internal_error: "internal_error",
};

/** A job's failure: what the client reads (`code`, `message`) and what only the logs and `error_reason` keep. */
export interface JobFailure {
  code: JobFailureCode;
  message: string;
  /** The whole internal account (engine reason and message, or the error's text): never shown to clients. */
  reason: string;
}

/** What a client reads of a failed job, wherever it reads it: the spec's text, then the code and sentence that say why. */
export interface PublicJobFailure {
  /** The spec's generic text ("Processing failed"), or a batch item's reason for not starting. */
  error: string;
  error_code: JobFailureCode;
  error_message: string;
}

export function isJobFailureCode(value: unknown): value is JobFailureCode {
  return typeof value === "string" && Object.hasOwn(JOB_FAILURE_CODES, value);
}

/** The longest engine sentence shown as is; the detector's list of labels fits. */
const MAX_PUBLIC_CHARS = 1200;

/**
 * Patterns of text that must never reach a client: file paths, URLs, stack
 * frames, error class prefixes from libraries, and anything shaped like a key
 * or token. A sentence that matches any is replaced by the code's default.
 */
const INTERNAL_TEXT: readonly RegExp[] = [
  /(?:^|[\s("'`=])(?:~|\.{1,2})?\/[\w.@+-]+\/[\w.@+/-]*/, // a POSIX path with at least two segments
  /\b[A-Za-z]:\\/, // a Windows path
  /\b[a-z][a-z0-9+.-]*:\/\//i, // a URL of any scheme
  /\bnode_modules\b/,
  /^\s*at\s.+\(.*\)\s*$/m, // a stack frame
  /:\d+:\d+\b/, // file:line:column
  /\b[A-Z]\w*(?:Error|Exception):\s/, // "TypeError: ...", a library's raw message
  /\bE(?:NOENT|ACCES|PERM|EXIST|NOTDIR|ISDIR|NOSPC|MFILE|PIPE|IO|CONNREFUSED|CONNRESET|TIMEDOUT|ADDRINUSE|AI_AGAIN|NOTFOUND)\b/, // errno codes
  /\b(?:sk|pk|rk|key|token|secret)[-_][A-Za-z0-9_-]{6,}/i, // API keys and their kin
  /\bBearer\s/i,
  /[A-Za-z0-9+/_=-]{40,}/, // a long opaque token (base64, hex)
];

/** True when `text` is a sentence fit for a client: short enough and free of internals. */
export function isPublicSentence(text: string): boolean {
  const trimmed = text.trim();
  return trimmed.length > 0 && trimmed.length <= MAX_PUBLIC_CHARS && !INTERNAL_TEXT.some((pattern) => pattern.test(trimmed));
}

/** A failure of one of the service's own causes (timeout, crashes, storage), with its default message. */
export function jobFailure(code: JobFailureCode, reason: string): JobFailure {
  return { code, message: JOB_FAILURE_CODES[code].message, reason };
}

/**
 * What an edit's error becomes. `timedOut`: the job's own deadline fired (the
 * engine then answers `cancelled`). `stage`: which step threw, so that a
 * failure to store the result is told apart from one in the edit.
 */
export function jobFailureFromError(
  error: unknown,
  context: { timedOut: boolean; stage: "edit" | "store" | "settle" },
): JobFailure {
  // An edit that still answered something else (nothing found, say) keeps that answer.
  if (context.timedOut && (!isEngineError(error) || error.reason === "cancelled"))
    return jobFailure("job_timeout", `timed out: ${describe(error)}`);
  if (isEngineError(error)) {
    const code = CODE_OF_ENGINE_REASON[error.reason];
    const reason = `${error.reason}: ${error.message}`;
    const usable = JOB_FAILURE_CODES[code].engineMessage && isPublicSentence(error.message);
    return { code, message: usable ? error.message.trim() : JOB_FAILURE_CODES[code].message, reason };
  }
  if (context.stage === "store") return jobFailure("result_storage_failed", `result storage: ${describe(error)}`);
  if (isBlobStoreError(error)) return jobFailure("storage_unavailable", `input storage: ${describe(error)}`);
  return jobFailure("internal_error", `internal: ${describe(error)}`);
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
