export type ModelFailureReason =
  /** No catalog entry by that name. */
  | "unknown_model"
  /** The catalog has no checksum for it: it is never downloaded unverified. */
  | "unverifiable"
  /** The bytes arrived but are not the published file (deleted). */
  | "checksum_mismatch"
  /** The host could not be reached, answered an error, or the transfer stopped. */
  | "download_failed"
  /** Another process is downloading the same file into the same directory. */
  | "busy"
  | "cancelled";

/** A model could not be found, fetched or verified; `message` says what to do. */
export class ModelError extends Error {
  constructor(
    readonly reason: ModelFailureReason,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "ModelError";
  }
}

export function isModelError(error: unknown): error is ModelError {
  return error instanceof ModelError;
}
