import ort from "onnxruntime-node";
import { describe, expect, it } from "vitest";
import { withGainsFolded } from "../src/models/model-gain-folding";
import { fields, GRAPH, graphOf, joinPieces, readNode } from "../src/models/onnx-wire";
import { buildOnnxModel, type OnnxNode } from "./onnx-model.builder";

/** A gain after a leaky ReLU folded into the convolution before it (MI-GAN's √2 gains). */
const SIDE = 8;
const input = new ort.Tensor(
  "float32",
  Float32Array.from({ length: 2 * SIDE * SIDE }, (_, i) => ((i * 37) % 101) / 25 - 2),
  [1, 2, SIDE, SIDE],
);
const values = (count: number, seed: number) => Array.from({ length: count }, (_, i) => (((i + seed) * 53) % 17) / 8 - 1);

/**
 * Two StyleGAN-style blocks: Conv → LeakyRelu → Mul(√2, a Constant) → Clip(±256), then Conv → Add(a constant map)
 * → LeakyRelu → Mul(an initializer's 0.5), and, when `sharedActivation`, the first LeakyRelu's output read twice.
 */
function gainModel(options: { sharedActivation?: boolean; gainAfterClip?: boolean } = {}): Buffer {
  const block: OnnxNode[] = options.gainAfterClip
    ? [
        { op: "Clip", inputs: ["a1", "low", "high"], outputs: ["g1"] },
        { op: "Mul", inputs: ["g1", "root2"], outputs: ["c1"] },
      ]
    : [
        { op: "Mul", inputs: ["a1", "root2"], outputs: ["g1"] },
        { op: "Clip", inputs: ["g1", "low", "high"], outputs: ["c1"] },
      ];
  const nodes: OnnxNode[] = [
    { op: "Conv", inputs: ["input", "w1", "b1"], outputs: ["z1"], attributes: { pads: [1, 1, 1, 1] } },
    { op: "LeakyRelu", inputs: ["z1"], outputs: ["a1"], attributes: { alpha: { float: 0.2 } } },
    { op: "Constant", inputs: [], outputs: ["root2"], attributes: { value_float: { float: Math.SQRT2 } } },
    ...block,
    { op: "Conv", inputs: ["c1", "w2"], outputs: ["z2"] },
    { op: "Add", inputs: ["z2", "map"], outputs: ["y2"] },
    { op: "LeakyRelu", inputs: ["y2"], outputs: ["a2"], attributes: { alpha: { float: 0.2 } } },
    { op: "Mul", inputs: ["half", "a2"], outputs: ["output"] },
  ];
  if (options.sharedActivation) {
    nodes.push({ op: "Identity", inputs: ["a1"], outputs: ["side"] });
  }
  return buildOnnxModel({
    inputs: [{ name: "input", shape: [1, 2, SIDE, SIDE] }],
    outputs: [
      { name: "output", shape: [1, 2, SIDE, SIDE] },
      ...(options.sharedActivation ? [{ name: "side", shape: [1, 3, SIDE, SIDE] }] : []),
    ],
    initializers: [
      { name: "w1", dims: [3, 2, 3, 3], values: values(54, 1) },
      { name: "b1", dims: [3], values: [0.1, -0.2, 0.3] },
      { name: "low", dims: [], values: [-1] },
      { name: "high", dims: [], values: [1] },
      { name: "w2", dims: [2, 3, 1, 1], values: values(6, 7) },
      { name: "map", dims: [SIDE, SIDE], values: values(SIDE * SIDE, 3) },
      { name: "half", dims: [], values: [0.5] },
    ],
    nodes,
  });
}

async function run(model: Uint8Array): Promise<Float32Array> {
  const session = await ort.InferenceSession.create(model, { logSeverityLevel: 3 });
  return (await session.run({ input })).output?.data as Float32Array;
}

function opTypes(model: Uint8Array): string[] {
  const graph = graphOf(model);
  return fields(model, graph.valueStart, graph.valueEnd)
    .filter((field) => field.number === GRAPH.node)
    .map((node) => readNode(model, node).op);
}

describe("withGainsFolded", () => {
  it("folds both gains into the convolutions: the Muls go, the output stays (the clip bounds the same values)", async () => {
    const model = gainModel();
    const pieces = withGainsFolded(model);
    if (!pieces) throw new Error("expected a folded copy");
    const folded = joinPieces(pieces);
    expect(opTypes(model).filter((op) => op === "Mul")).toHaveLength(2);
    expect(opTypes(folded).filter((op) => op === "Mul")).toHaveLength(0);
    const [before, after, misplaced] = await Promise.all([run(model), run(folded), run(gainModel({ gainAfterClip: true }))]);
    expect(after.length).toBe(2 * SIDE * SIDE);
    // The clip at ±1 binds here (with the gain after it, the output differs), so the gain must reach it as before.
    expect(misplaced.some((value, i) => Math.abs(value - (before[i] ?? 0)) > 1e-3)).toBe(true);
    for (let i = 0; i < after.length; i++) expect(after[i]).toBeCloseTo(before[i] ?? Number.NaN, 5);
    // Nothing is left to fold.
    expect(withGainsFolded(folded)).toBeUndefined();
  });

  it("leaves a gain whose activation something else reads too", async () => {
    const model = gainModel({ sharedActivation: true });
    const pieces = withGainsFolded(model);
    if (!pieces) throw new Error("expected the second gain folded");
    const folded = joinPieces(pieces);
    // The first Mul stays (its LeakyRelu's output is also the graph's "side"); the second goes.
    expect(opTypes(folded).filter((op) => op === "Mul")).toHaveLength(1);
    const [before, after] = await Promise.all([run(model), run(folded)]);
    for (let i = 0; i < after.length; i++) expect(after[i]).toBeCloseTo(before[i] ?? Number.NaN, 5);
  });

  it("leaves models without such gains as they are", () => {
    const plain = buildOnnxModel({
      inputs: [{ name: "input", shape: [1, 2, SIDE, SIDE] }],
      outputs: [{ name: "output", shape: [1, 2, SIDE, SIDE] }],
      initializers: [{ name: "two", dims: [], values: [2] }],
      nodes: [{ op: "Mul", inputs: ["input", "two"], outputs: ["output"] }],
    });
    expect(withGainsFolded(plain)).toBeUndefined();
  });
});
