import path from "node:path";
import { testModelsDirectory } from "../../../scripts/fetch-test-models";
import { BUILT_IN_CATALOG, INPAINTING_MODEL_KINDS, type InpaintingModelKind } from "../src/models/model-catalog";
import { ModelLibrary } from "../src/models/model-library";

/**
 * A learned inpainter for a bench's removals: RETOUCH_BENCH_INPAINTING_MODEL (an .onnx file) of kind
 * RETOUCH_BENCH_INPAINTING_KIND (migan by default); undefined (PatchMatch) without.
 */
export function benchInpaintingModel(): { path: string; kind: InpaintingModelKind } | undefined {
  const file = process.env.RETOUCH_BENCH_INPAINTING_MODEL;
  if (!file) return undefined;
  return {
    path: path.resolve(file),
    kind: inpaintingKind(process.env.RETOUCH_BENCH_INPAINTING_KIND ?? "migan", "RETOUCH_BENCH_INPAINTING_KIND"),
  };
}

/** `value` as an inpainting model kind; an error naming `setting` (where it came from) when it is none. */
export function inpaintingKind(value: string, setting: string): InpaintingModelKind {
  const kind = INPAINTING_MODEL_KINDS.find((candidate) => candidate === value);
  if (!kind) throw new Error(`${setting} must be one of ${INPAINTING_MODEL_KINDS.join(", ")}, not ${value}`);
  return kind;
}

/**
 * The catalog's MI-GAN (the service's fill where it can be fetched) in the test models' cache, pulled if missing;
 * undefined, with why on stderr, where it cannot be fetched.
 */
export async function pulledMigan(): Promise<string | undefined> {
  const library = new ModelLibrary({ dir: testModelsDirectory(), catalog: BUILT_IN_CATALOG });
  try {
    return (await library.pull("migan", { retryDelayMs: 200 })).path;
  } catch (error) {
    console.error(`MI-GAN could not be fetched (${error instanceof Error ? error.message : String(error)}).`);
    return undefined;
  }
}
