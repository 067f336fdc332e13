import { createHash, randomUUID } from "node:crypto";
import { mkdir, open, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { collectGarbage } from "../runtime/garbage-collection";
import { withFloat32Weights } from "./model-float32";
import { withGainsFolded } from "./model-gain-folding";
import { declaredInputSize, resizeModelInput, withFirstOutputOnly } from "./model-input-size";
import { withInt8MatMulWeights } from "./model-int8-weights";
import { joinPieces } from "./onnx-wire";

/** Bump when a change here or in the rewrites makes earlier prepared files stale. */
const PREPARATION_VERSION = 2;

/**
 * Where a prepared model is written, in order: a `.prepared` folder beside the model (on the disk that
 * holds the models: RETOUCH_MODELS_DIR for the catalog's), then the system's temporary folder. Beside
 * the model first because a temporary folder is often a tmpfs, where a prepared IS-Net's 176 MB would
 * sit in memory, and is emptied at each boot, where the model would be prepared again.
 */
export function preparedDirectories(modelPath: string): string[] {
  return [path.join(path.dirname(path.resolve(modelPath)), ".prepared"), path.join(os.tmpdir(), "retouch-prepared-models")];
}

export interface ModelPreparation {
  path: string;
  /** A fixed-size model's square input size to resize it to; undefined keeps the declared one. */
  inputSize?: number;
  /** Keep every output (by default all but the first are pruned: the only one read). */
  allOutputs?: boolean;
  /** Run its matrix products with constant weights on 8-bit integers (model-int8-weights.ts). */
  int8Weights?: boolean;
}

/**
 * The file onnxruntime loads for a model: the model itself when it loads as
 * it is, or, when the engine changes it (side outputs pruned, a fixed input
 * resized, scalar gains folded into convolutions, products moved to 8-bit integers where the model asks,
 * float16 weights widened: model-input-size.ts, model-gain-folding.ts, model-int8-weights.ts, model-float32.ts),
 * the changed model, written once to the first of `directories` that can be
 * written and found there by every later load, in this process and the next
 * (keyed by the source's path, size and time, and what is changed).
 *
 * onnxruntime reads a path itself, so the JavaScript side holds no copy of
 * the weights while a session is built. Handed the changed bytes instead, a
 * load held the file, each changed copy and onnxruntime's own at once:
 * measured with the IS-Net test weights widened, the 12 MP memory bench's
 * first round (the one that loads it) peaked at 1258 MiB (docs/engine.md).
 * Where no directory can be written, the bytes are returned instead.
 */
export async function preparedModel(
  spec: ModelPreparation,
  directories: readonly string[] = preparedDirectories(spec.path),
): Promise<string | Uint8Array> {
  const source = await stat(spec.path);
  const key = createHash("sha256")
    .update(
      JSON.stringify([
        PREPARATION_VERSION,
        path.resolve(spec.path),
        source.size,
        source.mtimeMs,
        spec.inputSize ?? null,
        spec.allOutputs === true,
        // Only when asked: the keys of the files prepared before this option are kept.
        ...(spec.int8Weights ? ["int8 weights"] : []),
      ]),
    )
    .digest("hex")
    .slice(0, 24);
  const name = `${path.basename(spec.path, ".onnx")}-${key}.onnx`;
  for (const directory of directories) {
    const target = path.join(directory, name);
    if (await stat(`${target}.unchanged`).catch(() => undefined)) return spec.path;
    if (await stat(target).catch(() => undefined)) return target;
  }

  const pieces = await preparedPieces(spec);
  for (const directory of directories) {
    const target = path.join(directory, name);
    try {
      await mkdir(directory, { recursive: true });
      if (!pieces) {
        await writeFile(`${target}.unchanged`, "");
        return spec.path;
      }
      await writePieces(target, pieces);
      return target;
    } catch {
      // Read-only, full, or not a folder: the next one.
    }
  }
  if (!pieces) return spec.path;
  return pieces.length === 1 ? (pieces[0] as Uint8Array) : joinPieces(pieces);
}

/**
 * The changed model in pieces (in order), or undefined when the engine changes nothing. Each step's
 * input is collected before the next step's copy is made: at most the last copy and the widened
 * pieces (264 MB for the IS-Net test weights) are held at once, never every copy.
 */
async function preparedPieces(spec: ModelPreparation): Promise<Uint8Array[] | undefined> {
  // The only reference to each copy, so that the step after it can let it go.
  let model: Uint8Array = await readFile(spec.path);
  let changed = false;
  const step = (next: Uint8Array | undefined) => {
    if (!next || next === model) return;
    model = next;
    changed = true;
    collectGarbage();
  };
  if (!spec.allOutputs) step(withFirstOutputOnly(model));
  // A model with symbolic height and width takes any size as it is.
  if (spec.inputSize && declaredInputSize(model)) step(resizeModelInput(model, spec.inputSize));
  const folded = withGainsFolded(model);
  if (folded) step(joinPieces(folded));
  if (spec.int8Weights) {
    const quantized = withInt8MatMulWeights(model);
    if (quantized) step(joinPieces(quantized));
  }
  const widened = withFloat32Weights(model);
  if (widened) return widened;
  return changed ? [model] : undefined;
}

/** Written under a name of its own, then renamed: a process reading the target never sees half a file. */
async function writePieces(target: string, pieces: readonly Uint8Array[]): Promise<void> {
  const partial = `${target}.${randomUUID()}.partial`;
  const handle = await open(partial, "w");
  try {
    for (const piece of pieces) await handle.write(piece);
  } finally {
    await handle.close();
  }
  try {
    await rename(partial, target);
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  }
}
