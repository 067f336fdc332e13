/**
 * A positive scalar gain after a leaky ReLU folded into the convolution before it, once, when the model loads.
 *
 * Generators of the StyleGAN family (MI-GAN among them) scale every activation by a constant gain (√2):
 * Conv → LeakyRelu → Mul(√2), or Conv → Add(a constant map) → LeakyRelu → Mul(√2). onnxruntime runs the
 * convolutions in its blocked NCHWc layout, which a multiplication by a scalar cannot take, so each gain costs a
 * reorder out of the layout, the multiplication, and a reorder back. Since LeakyRelu(c·z) = c·LeakyRelu(z) for
 * c > 0, the gain can go into the convolution's weights and bias (and the constant added after it) instead, and
 * the Mul goes: the same function, each weight rounded once more to float32.
 *
 * Measured on MI-GAN's pipeline (61 gains folded), one 512² pass on two cores, alternating runs: medians 826 →
 * 767 ms and 737 → 665 ms; on a photo 4 of the 786,432 output values differ, by one level (docs/engine.md).
 * The Clip(±256) after each gain stays: it also keeps the layout from going on, but real photos reach 222 there,
 * so it is not a no-op to drop.
 *
 * Undefined when there is nothing to fold. A chain is folded only where each tensor in it has one reader and is
 * no graph output, and each weight is a float32 initializer in the file: then nothing else sees what changes.
 */

import {
  ATTRIBUTE,
  type Field,
  fields,
  floatsOf,
  floatValues,
  GRAPH,
  type GraphNode,
  graphOf,
  joinPieces,
  lengthDelimited,
  NODE,
  nameOf,
  readNode,
  rebuildGraphPieces,
  rewrite,
  str,
  TENSOR,
} from "./onnx-wire";

export function withGainsFolded(model: Uint8Array): Uint8Array[] | undefined {
  const graphField = graphOf(model);
  const graphFields = fields(model, graphField.valueStart, graphField.valueEnd);
  const nodes = graphFields.filter((field) => field.number === GRAPH.node).map((field) => readNode(model, field));
  // Most models have no Mul after a LeakyRelu: looked for first, so that they are never read further.
  const producers = new Map<string, GraphNode>();
  for (const node of nodes) for (const output of node.outputs) producers.set(output, node);
  const gains = nodes.filter(
    (node) => node.op === "Mul" && node.inputs.some((input) => producers.get(input)?.op === "LeakyRelu"),
  );
  if (gains.length === 0) return undefined;

  const readers = new Map<string, number>();
  for (const node of nodes) for (const input of node.inputs) readers.set(input, (readers.get(input) ?? 0) + 1);
  for (const field of graphFields) {
    if (field.number !== GRAPH.output) continue;
    // A graph output is read from outside: never changed in place.
    readers.set(nameOf(model, field, "valueInfo"), Number.POSITIVE_INFINITY);
  }
  const onlyReader = (name: string) => readers.get(name) === 1;
  const initializers = new Map<string, Field>();
  for (const field of graphFields) {
    if (field.number === GRAPH.initializer) initializers.set(nameOf(model, field, "tensor"), field);
  }
  const floats = (name: string) => {
    const field = initializers.get(name);
    return field ? floatValues(model, field) : undefined;
  };
  const scalar = (name: string): number | undefined => {
    const values = floats(name) ?? constantValues(model, producers.get(name));
    return values?.length === 1 ? values[0] : undefined;
  };

  const scaled = new Map<string, number>();
  // Graph fields by their offset: the rebuild reads them afresh.
  const dropped = new Set<number>();
  const renamed = new Map<number, string>();
  for (const mul of gains) {
    const [left, right] = mul.inputs;
    if (mul.inputs.length !== 2 || left === undefined || right === undefined) continue;
    const activation = producers.get(left)?.op === "LeakyRelu" ? left : right;
    const gain = scalar(activation === left ? right : left);
    const leaky = producers.get(activation) as GraphNode;
    if (gain === undefined || !(gain > 0) || !Number.isFinite(gain) || !onlyReader(activation)) continue;
    const beforeLeaky = leaky.inputs[0];
    if (beforeLeaky === undefined || !onlyReader(beforeLeaky)) continue;
    // The convolution, and the constant map added after it where there is one.
    let conv = producers.get(beforeLeaky);
    const weights: string[] = [];
    if (conv?.op === "Add") {
      const [a, b] = conv.inputs;
      const added = a !== undefined && initializers.has(a) ? a : b;
      const convOutput = added === a ? b : a;
      if (added === undefined || convOutput === undefined || !onlyReader(convOutput)) continue;
      weights.push(added);
      conv = producers.get(convOutput);
    }
    if (conv?.op !== "Conv") continue;
    weights.push(...conv.inputs.slice(1).filter((input) => input !== ""));
    if (!weights.every((name) => onlyReader(name) && !scaled.has(name) && floats(name) !== undefined)) continue;
    for (const name of weights) scaled.set(name, gain);
    dropped.add(mul.field.start);
    renamed.set(leaky.field.start, mul.outputs[0] as string);
  }
  if (dropped.size === 0) return undefined;

  return rebuildGraphPieces(model, graphField, (field) => {
    if (dropped.has(field.start)) return undefined;
    const output = renamed.get(field.start);
    if (output !== undefined) return lengthDelimited(GRAPH.node, withOutput(model, field, output));
    const gain = field.number === GRAPH.initializer ? scaled.get(nameOf(model, field, "tensor")) : undefined;
    if (gain !== undefined) return lengthDelimited(GRAPH.initializer, scaledTensor(model, field, gain));
    return model.subarray(field.start, field.valueEnd);
  });
}

/** A Constant node's float values (its `value` tensor or `value_float`); undefined for anything else. */
function constantValues(bytes: Uint8Array, node: GraphNode | undefined): Float32Array | undefined {
  if (node?.op !== "Constant") return undefined;
  for (const part of fields(bytes, node.field.valueStart, node.field.valueEnd)) {
    if (part.number !== NODE.attribute) continue;
    const attribute = fields(bytes, part.valueStart, part.valueEnd);
    const name = attribute.find((value) => value.number === ATTRIBUTE.name);
    const text = name ? str(bytes, name) : "";
    if (text === "value") {
      const tensor = attribute.find((value) => value.number === ATTRIBUTE.tensor);
      return tensor ? floatValues(bytes, tensor) : undefined;
    }
    const single = attribute.find((value) => value.number === ATTRIBUTE.float);
    if (text === "value_float" && single) return floatsOf(bytes.subarray(single.valueStart, single.valueEnd));
  }
  return undefined;
}

/** The tensor's body with its values times `gain` (rounded to float32), in raw_data. */
function scaledTensor(bytes: Uint8Array, tensor: Field, gain: number): Uint8Array {
  const values = floatValues(bytes, tensor) as Float32Array;
  for (let i = 0; i < values.length; i++) values[i] = (values[i] as number) * gain;
  const kept = fields(bytes, tensor.valueStart, tensor.valueEnd)
    .filter((part) => part.number !== TENSOR.rawData && part.number !== TENSOR.floatData)
    .map((part) => bytes.subarray(part.start, part.valueEnd));
  return joinPieces([...kept, lengthDelimited(TENSOR.rawData, new Uint8Array(values.buffer))]);
}

/** The node's body with its one output named `output`. */
function withOutput(bytes: Uint8Array, node: Field, output: string): Uint8Array {
  const name = new TextEncoder().encode(output);
  return rewrite(bytes, node, (part) => (part.number === NODE.output ? lengthDelimited(NODE.output, name) : undefined));
}
