import path from "node:path";
import { INPAINTING_MODEL_KINDS, type InpaintingModelKind } from "../src/models/model-catalog";

/**
 * A learned inpainter for a bench's removals: RETOUCH_BENCH_INPAINTING_MODEL (an .onnx file) of kind
 * RETOUCH_BENCH_INPAINTING_KIND (migan by default); undefined (PatchMatch) without.
 */
export function benchInpaintingModel(): { path: string; kind: InpaintingModelKind } | undefined {
  const file = process.env.RETOUCH_BENCH_INPAINTING_MODEL;
  if (!file) return undefined;
  const kind = INPAINTING_MODEL_KINDS.find((candidate) => candidate === (process.env.RETOUCH_BENCH_INPAINTING_KIND ?? "migan"));
  if (!kind) throw new Error(`RETOUCH_BENCH_INPAINTING_KIND must be one of ${INPAINTING_MODEL_KINDS.join(", ")}`);
  return { path: path.resolve(file), kind };
}
