/**
 * The protobuf wire format as ONNX files use it: read a message's fields where
 * they lie, write varints and length-delimited fields, and rebuild a model
 * around a changed graph. No ONNX library: the engine's model rewrites
 * (model-input-size.ts, model-float32.ts, model-gain-folding.ts, model-int8-weights.ts) patch or re-encode only the few
 * messages they change and copy every other byte as it is.
 */

// Field numbers from onnx.proto.
export const MODEL_GRAPH = 7;
export const MODEL_OPSET_IMPORT = 8;
export const OPERATOR_SET = { domain: 1, version: 2 } as const;
export const GRAPH = { node: 1, initializer: 5, input: 11, output: 12, valueInfo: 13 } as const;
export const NODE = { input: 1, output: 2, opType: 4, attribute: 5, domain: 7 } as const;
export const ATTRIBUTE = { name: 1, float: 2, int: 3, tensor: 5, graph: 6, tensors: 10, graphs: 11 } as const;
export const TENSOR = { dims: 1, dataType: 2, floatData: 4, int32Data: 5, name: 8, rawData: 9, dataLocation: 14 } as const;
export const VALUE_INFO = { name: 1 } as const;
// TensorProto.DataType.
export const FLOAT = 1;
export const INT8 = 3;
export const INT64 = 7;
export const FLOAT16 = 10;

export interface Field {
  number: number;
  wireType: number;
  /** Offset of the key. */
  start: number;
  /** Offset and length of a length-delimited field's payload, or of a varint. */
  valueStart: number;
  valueEnd: number;
}

export function readVarint(bytes: Uint8Array, offset: number): { value: number; next: number } {
  let value = 0;
  let shift = 0;
  let position = offset;
  for (;;) {
    const byte = bytes[position++];
    if (byte === undefined) throw new Error("truncated varint");
    value += (byte & 0x7f) * 2 ** shift;
    if ((byte & 0x80) === 0) return { value, next: position };
    shift += 7;
    if (shift > 63) throw new Error("varint too long");
  }
}

export function writeVarint(value: number): number[] {
  const out: number[] = [];
  let rest = value;
  while (rest >= 0x80) {
    out.push((rest % 0x80) | 0x80);
    rest = Math.floor(rest / 0x80);
  }
  out.push(rest);
  return out;
}

/** The fields of one message occupying bytes[start, end). */
export function fields(bytes: Uint8Array, start: number, end: number): Field[] {
  const out: Field[] = [];
  let position = start;
  while (position < end) {
    const key = readVarint(bytes, position);
    const number = Math.floor(key.value / 8);
    const wireType = key.value % 8;
    let valueStart = key.next;
    let valueEnd: number;
    switch (wireType) {
      case 0:
        valueEnd = readVarint(bytes, valueStart).next;
        break;
      case 1:
        valueEnd = valueStart + 8;
        break;
      case 2: {
        const length = readVarint(bytes, valueStart);
        valueStart = length.next;
        valueEnd = valueStart + length.value;
        break;
      }
      case 5:
        valueEnd = valueStart + 4;
        break;
      default:
        throw new Error(`unsupported protobuf wire type ${wireType}`);
    }
    if (valueEnd > end) throw new Error("field runs past its message");
    out.push({ number, wireType, start: position, valueStart, valueEnd });
    position = valueEnd;
  }
  return out;
}

const text = new TextDecoder();
export const str = (bytes: Uint8Array, field: Field) => text.decode(bytes.subarray(field.valueStart, field.valueEnd));

export function nested(bytes: Uint8Array, field: Field | undefined, number: number): Field | undefined {
  return field ? fields(bytes, field.valueStart, field.valueEnd).find((part) => part.number === number) : undefined;
}

/** A length-delimited field (a message, bytes, a string); weights run to megabytes, so never through a number[]. */
export function lengthDelimited(number: number, payload: Uint8Array): Uint8Array {
  return joinPieces([new Uint8Array(writeVarint(number * 8 + 2)), new Uint8Array(writeVarint(payload.length)), payload]);
}

/** A varint field (an integer, an enum). */
export function varintField(number: number, value: number): Uint8Array {
  return new Uint8Array([...writeVarint(number * 8), ...writeVarint(value)]);
}

/** A copy of `model` with its graph's fields mapped (undefined drops one); where the new graph's fields lie. */
export function rebuildGraph(
  model: Uint8Array,
  graphField: Field,
  map: (field: Field) => Uint8Array | undefined,
): { out: Uint8Array; graph: Pick<Field, "valueStart" | "valueEnd"> } {
  const pieces = rebuildGraphPieces(model, graphField, map);
  const out = joinPieces(pieces);
  const graphStart = (pieces[0]?.length ?? 0) + (pieces[1]?.length ?? 0);
  const graphLength = pieces.slice(2, -1).reduce((length, piece) => length + piece.length, 0);
  return { out, graph: { valueStart: graphStart, valueEnd: graphStart + graphLength } };
}

/**
 * The same model in pieces, in order: what precedes the graph, the graph's key and length, its fields, what
 * follows it. Joined, they are the model; written one after the other to a file, they never need the one
 * more copy of a model's weights that joining takes.
 */
export function rebuildGraphPieces(
  model: Uint8Array,
  graphField: Field,
  map: (field: Field) => Uint8Array | undefined,
): Uint8Array[] {
  const parts: Uint8Array[] = [];
  let graphLength = 0;
  for (const field of fields(model, graphField.valueStart, graphField.valueEnd)) {
    const bytes = map(field);
    if (!bytes) continue;
    parts.push(bytes);
    graphLength += bytes.length;
  }
  const graphHeader = new Uint8Array([...writeVarint(MODEL_GRAPH * 8 + 2), ...writeVarint(graphLength)]);
  return [model.subarray(0, graphField.start), graphHeader, ...parts, model.subarray(graphField.valueEnd)];
}

export function joinPieces(pieces: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(pieces.reduce((length, piece) => length + piece.length, 0));
  let position = 0;
  for (const piece of pieces) {
    out.set(piece, position);
    position += piece.length;
  }
  return out;
}

/** The message's fields, each as `map` gives it or, where it gives undefined, copied as it is. */
export function rewrite(bytes: Uint8Array, message: Field, map: (field: Field) => Uint8Array | undefined): Uint8Array {
  return joinPieces(
    fields(bytes, message.valueStart, message.valueEnd).map((field) => map(field) ?? bytes.subarray(field.start, field.valueEnd)),
  );
}

export function dataTypeOf(bytes: Uint8Array, tensor: Field): number | undefined {
  const dataType = nested(bytes, tensor, TENSOR.dataType);
  return dataType ? readVarint(bytes, dataType.valueStart).value : undefined;
}

/** A TensorProto's or a ValueInfoProto's name. */
export function nameOf(bytes: Uint8Array, message: Field, kind: "tensor" | "valueInfo"): string {
  const name = nested(bytes, message, kind === "tensor" ? TENSOR.name : VALUE_INFO.name);
  return name ? str(bytes, name) : "";
}

/** The model's graph field; throws when the bytes are no ONNX model. */
export function graphOf(model: Uint8Array): Field {
  const graph = fields(model, 0, model.length).find((field) => field.number === MODEL_GRAPH);
  if (!graph) throw new Error("not an ONNX model: no graph");
  return graph;
}

/** A graph's node, as the rewrites look at it: its operator, what it reads and writes, and where it lies. */
export interface GraphNode {
  field: Field;
  op: string;
  inputs: string[];
  outputs: string[];
}

export function readNode(bytes: Uint8Array, field: Field): GraphNode {
  const node: GraphNode = { field, op: "", inputs: [], outputs: [] };
  for (const part of fields(bytes, field.valueStart, field.valueEnd)) {
    if (part.number === NODE.input) node.inputs.push(str(bytes, part));
    else if (part.number === NODE.output) node.outputs.push(str(bytes, part));
    else if (part.number === NODE.opType) node.op = str(bytes, part);
  }
  return node;
}

/** The values of a repeated integer field among a message's `parts`, packed (one field) or not (one field each). */
export function repeatedVarints(bytes: Uint8Array, parts: readonly Field[], number: number): number[] {
  const values: number[] = [];
  for (const part of parts) {
    if (part.number !== number) continue;
    if (part.wireType === 0) {
      values.push(readVarint(bytes, part.valueStart).value);
      continue;
    }
    for (let position = part.valueStart; position < part.valueEnd; ) {
      const value = readVarint(bytes, position);
      values.push(value.value);
      position = value.next;
    }
  }
  return values;
}

/** A tensor's dimensions. */
export function dimsOf(bytes: Uint8Array, tensor: Field): number[] {
  return repeatedVarints(bytes, fields(bytes, tensor.valueStart, tensor.valueEnd), TENSOR.dims);
}

/** A float32 tensor's values, from raw_data or float_data; undefined for another type or data kept outside the file. */
export function floatValues(bytes: Uint8Array, tensor: Field): Float32Array | undefined {
  const parts = fields(bytes, tensor.valueStart, tensor.valueEnd);
  if (dataTypeOf(bytes, tensor) !== FLOAT || parts.some((part) => part.number === TENSOR.dataLocation)) return undefined;
  const raw = parts.find((part) => part.number === TENSOR.rawData);
  if (raw) return floatsOf(bytes.subarray(raw.valueStart, raw.valueEnd));
  // Packed (one field) or not (one field a value): the bytes are the values either way.
  const packed = parts
    .filter((part) => part.number === TENSOR.floatData)
    .map((part) => bytes.subarray(part.valueStart, part.valueEnd));
  return floatsOf(joinPieces(packed));
}

/** Little-endian float32s, copied: aligned for the view (and Buffer's slice() would be no copy at all). */
export function floatsOf(bytes: Uint8Array): Float32Array {
  const copy = new Uint8Array(bytes);
  return new Float32Array(copy.buffer, 0, Math.floor(copy.length / 4));
}
