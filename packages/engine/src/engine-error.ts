/**
 * Why an edit failed. The jobs pipeline turns any of these into a job in
 * `error` with a refund; the caller only sees the spec's generic text, the
 * reason and message go to the logs.
 */
export type EngineFailureReason =
  /** A request field is out of range (quality, format). */
  | "invalid_request"
  /** The bytes are not a JPEG, PNG or WebP image, or cannot be decoded. */
  | "unsupported_image"
  /** The image (or a requested output size) is over the pixel limit. */
  | "image_too_large"
  /** The mask cannot be used: not an image, marks nothing, or marks almost everything. */
  | "invalid_mask"
  /** Nothing named by the prompt or `detect` was found in the image. */
  | "nothing_detected"
  /** The removal target is not something the detector knows (and no mask was given). */
  | "target_not_detectable"
  /** The detected object to remove is too large a part of the picture to fill believably. */
  | "target_too_large"
  /** The prompt asks for something the engine cannot carry out. */
  | "unsupported_instruction"
  /** A configured model could not be loaded or did not produce a usable output. */
  | "model_failed"
  /**
   * The edit needs a learned model that is not installed: without one, the
   * built-in fallback declined this picture rather than give a wrong answer.
   */
  | "model_unavailable"
  /** The hosted generative provider failed (timeout, 5xx after retries, unusable answer). */
  | "upstream_failed"
  /** The hosted provider refused the prompt or the picture under its content policy. */
  | "content_refused"
  /**
   * The stored plan cannot be carried out here: it names the hosted provider and this engine has none,
   * or it is not a plan this engine can read. Never replanned: that would make a different edit.
   */
  | "plan_not_executable"
  /** The request's AbortSignal fired. */
  | "cancelled"
  /** Anything unexpected (a bug or a library failure); the cause is attached. */
  | "internal_error";

/** Any failure of an edit that the job should turn into "error" + refund. */
export class EngineError extends Error {
  readonly reason: EngineFailureReason;

  constructor(reason: EngineFailureReason, message: string, options: { cause?: unknown } = {}) {
    super(message, options);
    this.name = "EngineError";
    this.reason = reason;
  }
}

export function isEngineError(error: unknown): error is EngineError {
  return error instanceof EngineError;
}
