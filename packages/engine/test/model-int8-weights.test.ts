import ort from "onnxruntime-node";
import { describe, expect, it } from "vitest";
import { withInt8MatMulWeights } from "../src/models/model-int8-weights";
import {
  dataTypeOf,
  fields,
  GRAPH,
  graphOf,
  INT8,
  joinPieces,
  NODE,
  nameOf,
  readNode,
  str,
  TENSOR,
} from "../src/models/onnx-wire";
import { buildOnnxModel } from "./onnx-model.builder";

/** Matrix products with constant weights on 8-bit integers (the segmenter's encoder's linear layers). */
const ROWS = 5;
const K = 16;
const input = new ort.Tensor(
  "float32",
  Float32Array.from({ length: ROWS * K }, (_, i) => Math.sin(i * 0.7) * 2 + ((i * 13) % 7) / 7),
  [1, ROWS, K],
);
const values = (count: number, seed: number) => Array.from({ length: count }, (_, i) => Math.sin((i + seed) * 1.3));

/**
 * input [1,5,16] → MatMul(w1 [16,6]) → Add(b1) → Relu → MatMul(w2 [6,4]) → output, and a third product whose
 * weights w3 are also the graph's second output (read outside: they must stay float). w1's columns span six
 * orders of magnitude: with one scale for the whole matrix, its small columns would round to zero.
 */
function linearModel(): Buffer {
  const w1 = values(K * 6, 1).map((value, i) => value * 10 ** ((i % 6) - 3));
  return buildOnnxModel({
    inputs: [{ name: "input", shape: [1, ROWS, K] }],
    outputs: [
      { name: "output", shape: [1, ROWS, 4] },
      { name: "side", shape: [1, ROWS, 2] },
    ],
    initializers: [
      { name: "w1", dims: [K, 6], values: w1 },
      { name: "b1", dims: [6], values: [0.5, -0.25, 2, -3, 0.125, 1] },
      { name: "w2", dims: [6, 4], values: values(24, 5) },
      { name: "w3", dims: [K, 2], values: values(K * 2, 9) },
    ],
    nodes: [
      { op: "MatMul", inputs: ["input", "w1"], outputs: ["p1"] },
      { op: "Add", inputs: ["b1", "p1"], outputs: ["y1"] },
      { op: "Relu", inputs: ["y1"], outputs: ["a1"] },
      { op: "MatMul", inputs: ["a1", "w2"], outputs: ["output"] },
      { op: "MatMul", inputs: ["input", "w3"], outputs: ["side"] },
      { op: "Mul", inputs: ["w3", "w3"], outputs: ["w3squared"] },
    ],
  });
}

async function run(model: Uint8Array, output = "output"): Promise<Float32Array> {
  const session = await ort.InferenceSession.create(model, { logSeverityLevel: 3 });
  return (await session.run({ input }, [output]))[output]?.data as Float32Array;
}

/** Each node's operator and domain, and the int8 initializers' values by name. */
function contents(model: Uint8Array) {
  const graph = graphOf(model);
  const graphFields = fields(model, graph.valueStart, graph.valueEnd);
  const nodes = graphFields
    .filter((field) => field.number === GRAPH.node)
    .map((field) => {
      const domain = fields(model, field.valueStart, field.valueEnd).find((part) => part.number === NODE.domain);
      return { ...readNode(model, field), domain: domain ? str(model, domain) : "" };
    });
  const int8 = new Map<string, Int8Array>();
  for (const field of graphFields) {
    if (field.number !== GRAPH.initializer || dataTypeOf(model, field) !== INT8) continue;
    const raw = fields(model, field.valueStart, field.valueEnd).find((part) => part.number === TENSOR.rawData);
    if (raw) int8.set(nameOf(model, field, "tensor"), new Int8Array(model.slice(raw.valueStart, raw.valueEnd)));
  }
  return { nodes, int8 };
}

describe("withInt8MatMulWeights", () => {
  it("runs each product with weights of its own on int8, the bias joined, close to the float result", async () => {
    const model = linearModel();
    const pieces = withInt8MatMulWeights(model);
    if (!pieces) throw new Error("expected a quantized copy");
    const quantized = joinPieces(pieces);
    const { nodes, int8 } = contents(quantized);
    expect(nodes.map((node) => node.op)).toEqual(["DynamicQuantizeMatMul", "Relu", "DynamicQuantizeMatMul", "MatMul", "Mul"]);
    expect(nodes[0]).toMatchObject({ domain: "com.microsoft", inputs: ["input", "w1", "w1_scale", "", "b1"], outputs: ["y1"] });
    expect(nodes[2]).toMatchObject({ inputs: ["a1", "w2", "w2_scale"], outputs: ["output"] });
    // 7 bits, each column using its whole range.
    for (const [name, columns] of [
      ["w1", 6],
      ["w2", 4],
    ] as const) {
      const levels = int8.get(name) ?? new Int8Array();
      expect(levels.length).toBe(name === "w1" ? K * 6 : 24);
      for (let column = 0; column < columns; column++) {
        const own = levels.filter((_, i) => i % columns === column).map(Math.abs);
        expect(Math.max(...own)).toBe(63);
      }
    }
    expect(int8.has("w3")).toBe(false);

    const [before, after] = await Promise.all([run(model), run(quantized)]);
    const largest = Math.max(...before.map(Math.abs));
    for (let i = 0; i < before.length; i++) expect(Math.abs((after[i] ?? 0) - (before[i] ?? 0))).toBeLessThan(0.03 * largest);
    const [sideBefore, sideAfter] = await Promise.all([run(model, "side"), run(quantized, "side")]);
    expect(sideAfter).toEqual(sideBefore);
    expect(withInt8MatMulWeights(quantized)).toBeUndefined();
  });

  it("keeps a small column's own precision: each column has its scale", async () => {
    // The first product alone, its output the graph's: y1 of linearModel, whose columns span 1e-3 to 1e2.
    const model = buildOnnxModel({
      inputs: [{ name: "input", shape: [1, ROWS, K] }],
      outputs: [{ name: "output", shape: [1, ROWS, 6] }],
      initializers: [{ name: "w1", dims: [K, 6], values: values(K * 6, 1).map((value, i) => value * 10 ** ((i % 6) - 3)) }],
      nodes: [{ op: "MatMul", inputs: ["input", "w1"], outputs: ["output"] }],
    });
    const quantized = joinPieces(withInt8MatMulWeights(model) ?? []);
    const [before, after] = await Promise.all([run(model), run(quantized)]);
    for (let column = 0; column < 6; column++) {
      const own = (data: Float32Array) => Array.from(data).filter((_, i) => i % 6 === column);
      const expected = own(before);
      const got = own(after);
      const size = Math.max(...expected.map(Math.abs));
      // 2–6% of the column's largest value here; with one scale for the matrix, the first three columns are 0.
      for (let row = 0; row < ROWS; row++) expect(Math.abs((got[row] ?? 0) - (expected[row] ?? 0))).toBeLessThan(0.15 * size);
    }
  });

  it("leaves a model without such products as it is", () => {
    const plain = buildOnnxModel({
      inputs: [{ name: "input", shape: [1, ROWS, K] }],
      outputs: [{ name: "output", shape: [1, ROWS, ROWS] }],
      initializers: [],
      nodes: [
        { op: "Transpose", inputs: ["input"], outputs: ["t"], attributes: { perm: [0, 2, 1] } },
        { op: "MatMul", inputs: ["input", "t"], outputs: ["output"] },
      ],
    });
    expect(withInt8MatMulWeights(plain)).toBeUndefined();
  });
});
