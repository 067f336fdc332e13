import type { MessagePort } from "node:worker_threads";
import type { EditRequest, EditResult } from "../engine.ports";
import type { EngineFailureReason } from "../engine-error";
import type { OnnxModelSpec } from "../models/onnx-runner";
import type { ImageEngineOptions } from "../workflows/engine";

/**
 * The messages between the engine pool and its threads, in one place so that
 * neither side imports the other.
 */

/** Options of the engine in each thread: plain data only, since they are copied into it (no port implementations). */
export type EngineWorkerOptions = Pick<
  ImageEngineOptions,
  | "maxPixels"
  | "backgroundModel"
  | "backgroundModelPath"
  | "inpaintingModel"
  | "generativeProvider"
  | "backgroundProvider"
  | "objectRemovalProvider"
  | "objectSegmenter"
  | "segmenterModel"
  | "objectDetector"
>;

/** What crosses the thread boundary: plain data, the bytes as transferable arrays. */
export type WorkerRequest = Omit<EditRequest, "image" | "mask" | "signal"> & { image: Uint8Array; mask?: Uint8Array };

export type WorkerMessage =
  | { kind: "edit"; id: number; request: WorkerRequest }
  | { kind: "cancel"; id: number }
  | { kind: "configure"; options: EngineWorkerOptions }
  /** The port to the pool's inference thread (again after that thread was restarted). */
  | { kind: "inference"; port: MessagePort }
  /** The port to the pool's vision thread (vision-thread.ts), given once when the thread starts. */
  | { kind: "vision"; port: MessagePort };

export type WorkerReply =
  | { kind: "edited"; id: number; ok: true; result: Omit<EditResult, "image"> & { image: Uint8Array } }
  | { kind: "edited"; id: number; ok: false; error: { message: string; reason?: EngineFailureReason } }
  | { kind: "configured"; ok: boolean; error?: string };

/** What the pool tells its inference thread directly; engine threads reach it through their ports. */
export type InferenceMessage = { kind: "connect"; port: MessagePort } | { kind: "retain"; keep: OnnxModelSpec[] };

/** What the inference thread tells the pool: a model's session was made, and how long that took. */
export type InferenceReply = { kind: "loaded"; file: string; seconds: number };
