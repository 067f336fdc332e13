import { mkdtemp, readFile, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { withFloat32Weights } from "../src/models/model-float32";
import { withInt8MatMulWeights } from "../src/models/model-int8-weights";
import { joinPieces } from "../src/models/onnx-wire";
import { preparedDirectories, preparedModel } from "../src/models/prepared-model";
import { buildOnnxModel, float16RedSaliencyModel, redSaliencyModel } from "./onnx-model.builder";

/** The file onnxruntime loads: the model itself, or the engine's changed copy, written once and reused. */
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "retouch-prepared-"));
});

async function modelFile(name: string, bytes: Uint8Array): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, bytes);
  return file;
}

describe("preparedModel", () => {
  it("hands a model the engine does not change over as it is", async () => {
    const file = await modelFile("plain.onnx", redSaliencyModel({ size: 32 }));
    const cache = path.join(dir, "cache-plain");
    // allOutputs: nothing pruned, float32 already, no size asked.
    expect(await preparedModel({ path: file, allOutputs: true }, [cache])).toBe(file);
    expect(await preparedModel({ path: file, allOutputs: true }, [cache])).toBe(file);
  });

  it("writes a float16 model widened once, and finds it again until the source changes", async () => {
    const model = float16RedSaliencyModel({ size: 32 });
    const file = await modelFile("half.onnx", model);
    const cache = path.join(dir, "cache-half");
    const prepared = await preparedModel({ path: file }, [cache]);
    if (typeof prepared !== "string") throw new Error("expected a file");
    expect(path.dirname(prepared)).toBe(cache);
    expect(new Uint8Array(await readFile(prepared))).toEqual(joinPieces(withFloat32Weights(model) ?? []));
    const written = (await stat(prepared)).mtimeMs;
    expect(await preparedModel({ path: file }, [cache])).toBe(prepared);
    expect((await stat(prepared)).mtimeMs).toBe(written);
    // Another size of the same file, or a new file at the same path, is prepared anew.
    await writeFile(file, float16RedSaliencyModel({ size: 64 }));
    const again = await preparedModel({ path: file }, [cache]);
    expect(again).not.toBe(prepared);
    expect(withFloat32Weights(new Uint8Array(await readFile(again as string)))).toBeUndefined();
  });

  it("quantizes a model's products only when its spec asks, into a copy of its own", async () => {
    const model = buildOnnxModel({
      inputs: [{ name: "input", shape: [2, 4] }],
      outputs: [{ name: "output", shape: [2, 3] }],
      initializers: [{ name: "weights", dims: [4, 3], values: [1, -2, 3, 0.5, 0.25, -1, 2, 4, -8, 1, 1, 1] }],
      nodes: [{ op: "MatMul", inputs: ["input", "weights"], outputs: ["output"] }],
    });
    const file = await modelFile("linear.onnx", model);
    const cache = path.join(dir, "cache-int8");
    // Without the option, nothing to change: the file itself, as before the option existed.
    expect(await preparedModel({ path: file }, [cache])).toBe(file);
    const quantized = await preparedModel({ path: file, int8Weights: true }, [cache]);
    if (typeof quantized !== "string") throw new Error("expected a file");
    expect(path.dirname(quantized)).toBe(cache);
    expect(new Uint8Array(await readFile(quantized))).toEqual(joinPieces(withInt8MatMulWeights(model) ?? []));
    expect(await preparedModel({ path: file }, [cache])).toBe(file);
    expect(await preparedModel({ path: file, int8Weights: true }, [cache])).toBe(quantized);
  });

  it("writes beside the model by default, and in the next folder where that one cannot be written", async () => {
    const own = await mkdtemp(path.join(dir, "models-"));
    const file = path.join(own, "half.onnx");
    await writeFile(file, float16RedSaliencyModel({ size: 32 }));
    const [beside] = preparedDirectories(file);
    expect(beside).toBe(path.join(own, ".prepared"));
    expect(path.dirname((await preparedModel({ path: file })) as string)).toBe(beside);
    const other = await modelFile("other-half.onnx", float16RedSaliencyModel({ size: 32 }));
    const blocked = await modelFile("blocked", new Uint8Array([1]));
    const fallback = path.join(dir, "fallback");
    expect(path.dirname((await preparedModel({ path: other }, [blocked, fallback])) as string)).toBe(fallback);
  });

  it("gives the changed bytes when no directory can be written", async () => {
    const model = float16RedSaliencyModel({ size: 32 });
    const file = await modelFile("readonly.onnx", model);
    // A file where the directory should be: mkdir fails.
    const blocked = await modelFile("not-a-directory", new Uint8Array([1]));
    const prepared = await preparedModel({ path: file }, [path.join(blocked, "cache"), path.join(blocked, "other")]);
    expect(prepared).toEqual(joinPieces(withFloat32Weights(model) ?? []));
  });
});
