/**
 * Writes small ONNX models by hand: a minimal protobuf encoder and the few
 * ONNX messages a graph needs (onnx.proto field numbers). Enough to build a
 * saliency model shaped like ISNet/U2-Net/BiRefNet in a test, with nothing
 * downloaded.
 */

class ProtoWriter {
  private readonly chunks: Buffer[] = [];

  private varint(value: number | bigint): void {
    let v = BigInt(value);
    if (v < 0n) v += 1n << 64n;
    const bytes: number[] = [];
    do {
      let byte = Number(v & 0x7fn);
      v >>= 7n;
      if (v > 0n) byte |= 0x80;
      bytes.push(byte);
    } while (v > 0n);
    this.chunks.push(Buffer.from(bytes));
  }

  private key(field: number, wireType: 0 | 2 | 5): void {
    this.varint((field << 3) | wireType);
  }

  int(field: number, value: number): this {
    this.key(field, 0);
    this.varint(value);
    return this;
  }

  float(field: number, value: number): this {
    this.key(field, 5);
    const bytes = Buffer.alloc(4);
    bytes.writeFloatLE(value);
    this.chunks.push(bytes);
    return this;
  }

  bytes(field: number, value: Buffer): this {
    this.key(field, 2);
    this.varint(value.length);
    this.chunks.push(value);
    return this;
  }

  string(field: number, value: string): this {
    return this.bytes(field, Buffer.from(value, "utf8"));
  }

  message(field: number, build: (writer: ProtoWriter) => void): this {
    const inner = new ProtoWriter();
    build(inner);
    return this.bytes(field, inner.finish());
  }

  finish(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

const FLOAT = 1;
const UINT8 = 2;
const INT64 = 7;
const FLOAT16 = 10;

/** The element types these test models use. */
export type ElementType = "float32" | "uint8" | "int64" | "float16";
const ELEMENT_TYPES: Record<ElementType, number> = { float32: FLOAT, uint8: UINT8, int64: INT64, float16: FLOAT16 };

export type Dimension = number | string;

export interface OnnxNode {
  op: string;
  inputs: string[];
  outputs: string[];
  /** Integer, float, integer-list or int64-tensor (a Constant's `value`) attributes. */
  attributes?: Record<string, number | number[] | { float: number } | { int64s: number[] }>;
}

export interface OnnxGraph {
  /** Float32 unless `type` says otherwise. */
  inputs: { name: string; shape: Dimension[]; type?: ElementType }[];
  outputs: { name: string; shape: Dimension[]; type?: ElementType }[];
  /** Float32 unless `type` says float16 (as the float16 exports of IS-Net store their weights). */
  initializers: { name: string; dims: number[]; values: number[]; type?: "float32" | "float16" }[];
  nodes: OnnxNode[];
  opset?: number;
}

function writeValueInfo(writer: ProtoWriter, name: string, shape: Dimension[], elementType: ElementType = "float32"): void {
  writer.string(1, name).message(2, (type) =>
    type.message(1, (tensor) =>
      tensor.int(1, ELEMENT_TYPES[elementType]).message(2, (shapeWriter) => {
        for (const dim of shape) {
          shapeWriter.message(1, (dimension) => (typeof dim === "number" ? dimension.int(1, dim) : dimension.string(2, dim)));
        }
      }),
    ),
  );
}

/** The bytes of an ONNX ModelProto. */
export function buildOnnxModel(graph: OnnxGraph): Buffer {
  const model = new ProtoWriter();
  model.int(1, 8); // ir_version
  model.string(2, "retouch-test");
  model.message(7, (g) => {
    for (const node of graph.nodes) {
      g.message(1, (n) => {
        for (const input of node.inputs) n.string(1, input);
        for (const output of node.outputs) n.string(2, output);
        n.string(4, node.op);
        for (const [name, value] of Object.entries(node.attributes ?? {})) {
          n.message(5, (attribute) => {
            attribute.string(1, name);
            if (Array.isArray(value)) {
              for (const item of value) attribute.int(8, item);
              attribute.int(20, 7); // INTS
            } else if (typeof value === "object" && "int64s" in value) {
              // As PyTorch writes a Constant: an INT64 tensor with raw little-endian data.
              attribute.message(5, (tensor) => {
                tensor.int(1, value.int64s.length).int(2, INT64);
                tensor.bytes(9, Buffer.from(new BigInt64Array(value.int64s.map(BigInt)).buffer));
              });
              attribute.int(20, 4); // TENSOR
            } else if (typeof value === "object") {
              attribute.float(2, value.float).int(20, 1); // FLOAT
            } else {
              attribute.int(3, value).int(20, 2); // INT
            }
          });
        }
      });
    }
    g.string(2, "saliency");
    for (const initializer of graph.initializers) {
      g.message(5, (tensor) => {
        for (const dim of initializer.dims) tensor.int(1, dim);
        const half = initializer.type === "float16";
        tensor.int(2, half ? FLOAT16 : FLOAT);
        tensor.string(8, initializer.name);
        tensor.bytes(9, Buffer.from((half ? new Float16Array(initializer.values) : new Float32Array(initializer.values)).buffer));
      });
    }
    for (const input of graph.inputs) g.message(11, (info) => writeValueInfo(info, input.name, input.shape, input.type));
    for (const output of graph.outputs) g.message(12, (info) => writeValueInfo(info, output.name, output.shape, output.type));
  });
  model.message(8, (opset) => opset.string(1, "").int(2, graph.opset ?? 17));
  return model.finish();
}

/**
 * A "salient object" model in the shape of ISNet/U2-Net/BiRefNet: input
 * 1x3xHxW normalised floats, output 1x1xHxW saliency. It finds red things:
 * a 1x1 convolution scoring red against green and blue, then a sigmoid
 * (left out for `logits: true`, as BiRefNet exports leave it out), plus a
 * second, unused output like U2-Net's side outputs.
 */
export function redSaliencyModel(
  options: {
    size?: Dimension;
    logits?: boolean;
    gain?: number;
    bias?: number;
    /** Adds this many unused float weights, for a file of some size (download tests). */
    padding?: number;
  } = {},
): Buffer {
  const size = options.size ?? 64;
  const gain = options.gain ?? 3;
  const bias = options.bias ?? -gain;
  const nodes: OnnxNode[] = [{ op: "Conv", inputs: ["input", "weight", "bias"], outputs: [options.logits ? "mask" : "logits"] }];
  if (!options.logits) nodes.push({ op: "Sigmoid", inputs: ["logits"], outputs: ["mask"] });
  nodes.push({ op: "Identity", inputs: ["mask"], outputs: ["side_output"] });
  return buildOnnxModel({
    inputs: [{ name: "input", shape: [1, 3, size, size] }],
    outputs: [
      { name: "mask", shape: [1, 1, size, size] },
      { name: "side_output", shape: [1, 1, size, size] },
    ],
    initializers: [
      { name: "weight", dims: [1, 3, 1, 1], values: [gain, -gain, -gain] },
      { name: "bias", dims: [1], values: [bias] },
      ...(options.padding
        ? [{ name: "padding", dims: [options.padding], values: new Array<number>(options.padding).fill(0.5) }]
        : []),
    ],
    nodes,
  });
}

/**
 * redSaliencyModel as IS-Net's float16 exports are stored (the test weights'
 * `medium` export): float32 in and out, float16 weights, and the activations
 * cast to float16 before the convolution and back to float32 after it. With
 * `float16Input`, the graph's input itself is float16.
 */
export function float16RedSaliencyModel(options: { size?: number; float16Input?: boolean } = {}): Buffer {
  const size = options.size ?? 32;
  return buildOnnxModel({
    inputs: [{ name: "input", shape: [1, 3, size, size], ...(options.float16Input ? { type: "float16" as const } : {}) }],
    outputs: [{ name: "mask", shape: [1, 1, size, size] }],
    initializers: [
      { name: "weight", dims: [1, 3, 1, 1], values: [3, -3, -3], type: "float16" },
      { name: "bias", dims: [1], values: [-3], type: "float16" },
    ],
    nodes: [
      ...(options.float16Input ? [] : [{ op: "Cast", inputs: ["input"], outputs: ["input_half"], attributes: { to: FLOAT16 } }]),
      { op: "Conv", inputs: [options.float16Input ? "input" : "input_half", "weight", "bias"], outputs: ["logits_half"] },
      { op: "Cast", inputs: ["logits_half"], outputs: ["logits"], attributes: { to: FLOAT } },
      { op: "Sigmoid", inputs: ["logits"], outputs: ["mask"] },
    ],
  });
}

/**
 * A model shaped like the published IS-Net exports at a small scale: a fixed
 * `size`x`size` input pooled twice, each level brought back up by a Resize
 * whose target size is a constant (as PyTorch's tracer bakes
 * `F.interpolate(x, size=y.shape[2:])`) and joined to the level above, with the
 * red detector of redSaliencyModel on the half-size level. Fed any other size
 * it fails, unless resized.
 */
export function fixedSizeSaliencyModel(size = 64): Buffer {
  const half = size / 2;
  const resize = (from: string, to: string, side: number, name: string): OnnxNode[] => [
    { op: "Shape", inputs: [from], outputs: [`${name}_shape`] },
    { op: "Slice", inputs: [`${name}_shape`, "zero", "two"], outputs: [`${name}_nc`] },
    { op: "Constant", inputs: [], outputs: [`${name}_hw`], attributes: { value: { int64s: [side, side] } } },
    { op: "Concat", inputs: [`${name}_nc`, `${name}_hw`], outputs: [`${name}_sizes`], attributes: { axis: 0 } },
    { op: "Resize", inputs: [from, "", "", `${name}_sizes`], outputs: [to] },
  ];
  return buildOnnxModel({
    inputs: [{ name: "input", shape: [1, 3, size, size] }],
    outputs: [{ name: "mask", shape: [1, 1, size, size] }],
    initializers: [
      // The quarter-size branch gets weight 0: the output is the red detector's, at any size.
      { name: "weight", dims: [1, 6, 1, 1], values: [3, -3, -3, 0, 0, 0] },
      { name: "bias", dims: [1], values: [-3] },
    ],
    nodes: [
      { op: "Constant", inputs: [], outputs: ["zero"], attributes: { value: { int64s: [0] } } },
      { op: "Constant", inputs: [], outputs: ["two"], attributes: { value: { int64s: [2] } } },
      { op: "MaxPool", inputs: ["input"], outputs: ["half"], attributes: { kernel_shape: [2, 2], strides: [2, 2] } },
      { op: "MaxPool", inputs: ["half"], outputs: ["quarter"], attributes: { kernel_shape: [2, 2], strides: [2, 2] } },
      ...resize("quarter", "quarter_up", half, "up1"),
      { op: "Concat", inputs: ["half", "quarter_up"], outputs: ["joined"], attributes: { axis: 1 } },
      { op: "Conv", inputs: ["joined", "weight", "bias"], outputs: ["half_logits"] },
      ...resize("half_logits", "logits", size, "up2"),
      { op: "Sigmoid", inputs: ["logits"], outputs: ["mask"] },
    ],
  });
}

/**
 * An inpainting model with LaMa's contract (Carve's export): image float32
 * 1x3xSxS in 0..1 and mask float32 1x1xSxS (1 = fill) in, float32 1x3xSxS in
 * 0..255 out. What it paints is known: every pixel gets the mean colour of
 * the pixels the mask keeps, so a test can tell from the result what the
 * model was shown. `size: "any"` declares symbolic height and width.
 */
export function meanColourLamaModel(options: { size?: number | "any" } = {}): Buffer {
  const side: Dimension = options.size === "any" ? "height" : (options.size ?? 512);
  const width: Dimension = options.size === "any" ? "width" : side;
  return buildOnnxModel({
    inputs: [
      { name: "image", shape: ["batch", 3, side, width] },
      { name: "mask", shape: ["batch", 1, side, width] },
    ],
    outputs: [{ name: "output", shape: ["batch", 3, side, width] }],
    initializers: [
      { name: "one", dims: [], values: [1] },
      { name: "zero", dims: [], values: [0] },
      { name: "epsilon", dims: [], values: [1e-6] },
      { name: "scale", dims: [], values: [255] },
    ],
    nodes: meanOfKeptNodes("image", "known", [{ op: "Sub", inputs: ["one", "mask"], outputs: ["known"] }]).concat([
      { op: "Mul", inputs: ["image", "zero"], outputs: ["blank"] },
      { op: "Add", inputs: ["blank", "mean"], outputs: ["flat"] },
      { op: "Mul", inputs: ["flat", "scale"], outputs: ["output"] },
    ]),
  });
}

/**
 * An inpainting model with MI-GAN's pipeline contract: image uint8 1x3xHxW
 * and mask uint8 1x1xHxW (255 = keep) in, uint8 1x3xHxW out, the input
 * composed back as the published pipeline composes it (its
 * `postprocess`: the kept side grown by a 3x3 max pool, then blurred by a 5x5
 * Gaussian of sigma 1, zero-padded here where the pipeline mirrors), so the
 * hole's inner rim keeps a blend of whatever the input had there. The hole
 * gets the mean colour of the kept pixels, rounded.
 */
export function meanColourMiganModel(): Buffer {
  return buildOnnxModel({
    inputs: [
      { name: "image", shape: ["batch", 3, "height", "width"], type: "uint8" },
      { name: "mask", shape: ["batch", 1, "height", "width"], type: "uint8" },
    ],
    outputs: [{ name: "result", shape: ["batch", 3, "height", "width"], type: "uint8" }],
    initializers: [
      { name: "one", dims: [], values: [1] },
      { name: "epsilon", dims: [], values: [1e-6] },
      { name: "scale", dims: [], values: [1 / 255] },
      { name: "half", dims: [], values: [0.5] },
      { name: "low", dims: [], values: [0] },
      { name: "high", dims: [], values: [255] },
      { name: "gaussian", dims: [1, 1, 5, 5], values: gaussianKernel(5, 1) },
    ],
    nodes: [
      { op: "Cast", inputs: ["image"], outputs: ["pixels"], attributes: { to: FLOAT } },
      { op: "Cast", inputs: ["mask"], outputs: ["mask_float"], attributes: { to: FLOAT } },
      { op: "Mul", inputs: ["mask_float", "scale"], outputs: ["known"] },
      ...meanOfKeptNodes("pixels", "known", []),
      { op: "MaxPool", inputs: ["known"], outputs: ["known_grown"], attributes: { kernel_shape: [3, 3], pads: [1, 1, 1, 1] } },
      { op: "Conv", inputs: ["known_grown", "gaussian"], outputs: ["blend"], attributes: { pads: [2, 2, 2, 2] } },
      { op: "Sub", inputs: ["one", "blend"], outputs: ["hole"] },
      { op: "Mul", inputs: ["pixels", "blend"], outputs: ["kept_pixels"] },
      { op: "Mul", inputs: ["mean", "hole"], outputs: ["filled"] },
      { op: "Add", inputs: ["kept_pixels", "filled"], outputs: ["composed"] },
      // Cast truncates: add a half to round, and keep to 0..255.
      { op: "Add", inputs: ["composed", "half"], outputs: ["rounded"] },
      { op: "Clip", inputs: ["rounded", "low", "high"], outputs: ["clipped"] },
      { op: "Cast", inputs: ["clipped"], outputs: ["result"], attributes: { to: UINT8 } },
    ],
  });
}

/**
 * A normalised `size`x`size` Gaussian kernel, row by row, as the pipeline's GaussianSmoothing computes it:
 * exp(-((x - mean) / (2 sigma))^2), a wider bell than its sigma says.
 */
function gaussianKernel(size: number, sigma: number): number[] {
  const centre = (size - 1) / 2;
  const line = Array.from({ length: size }, (_, i) => Math.exp(-(((i - centre) / (2 * sigma)) ** 2)));
  const values = line.flatMap((a) => line.map((b) => a * b));
  const sum = values.reduce((total, value) => total + value, 0);
  return values.map((value) => value / sum);
}

/** Nodes computing "mean" (Nx3x1x1): the mean of `image` over the pixels where `known` (Nx1xHxW, 0..1) is 1. */
function meanOfKeptNodes(image: string, known: string, before: OnnxNode[]): OnnxNode[] {
  return [
    ...before,
    { op: "Constant", inputs: [], outputs: ["spatial_axes"], attributes: { value: { int64s: [2, 3] } } },
    { op: "Mul", inputs: [image, known], outputs: ["kept"] },
    { op: "ReduceSum", inputs: ["kept", "spatial_axes"], outputs: ["kept_sum"], attributes: { keepdims: 1 } },
    { op: "ReduceSum", inputs: [known, "spatial_axes"], outputs: ["known_count"], attributes: { keepdims: 1 } },
    { op: "Add", inputs: ["known_count", "epsilon"], outputs: ["known_safe"] },
    { op: "Div", inputs: ["kept_sum", "known_safe"], outputs: ["mean"] },
  ];
}

/** Token ids the tiny Grounding DINO below answers to, in the tiny vocabulary of `tinyBertVocab`. */
export const TINY_BERT_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", "trash", "can", "power", "line", "##s", "a"];

/** A vocab.txt for `TINY_BERT_VOCAB`: one token a line, the line number its id (as bert-base-uncased's). */
export function tinyBertVocab(): Buffer {
  return Buffer.from(`${TINY_BERT_VOCAB.join("\n")}\n`);
}

/**
 * A model with Grounding DINO's ONNX contract (Hugging Face's export): inputs
 * pixel_values float32 [1,3,S,S], pixel_mask int64 [1,S,S], input_ids,
 * token_type_ids and attention_mask int64 [1,L]; outputs logits [1,Q,L] and
 * pred_boxes [1,Q,4] (centre x, centre y, width, height in 0..1). Each query
 * answers to one token id: its logit is +5 where the caption holds that token
 * and -5 elsewhere, so a query only scores when the phrase it belongs to was
 * asked for, and only on that phrase's tokens. Its box is fixed.
 */
export function tinyGroundingDinoModel(queries: { token: number; box: [number, number, number, number] }[], size = 64): Buffer {
  const count = queries.length;
  return buildOnnxModel({
    inputs: [
      { name: "pixel_values", shape: [1, 3, size, size] },
      { name: "pixel_mask", shape: [1, size, size], type: "int64" },
      { name: "input_ids", shape: [1, "tokens"], type: "int64" },
      { name: "token_type_ids", shape: [1, "tokens"], type: "int64" },
      { name: "attention_mask", shape: [1, "tokens"], type: "int64" },
    ],
    outputs: [
      { name: "logits", shape: [1, count, "tokens"] },
      { name: "pred_boxes", shape: [1, count, 4] },
    ],
    initializers: [
      { name: "targets", dims: [1, count, 1], values: queries.map((query) => query.token) },
      { name: "boxes", dims: [1, count, 4], values: queries.flatMap((query) => query.box) },
      { name: "one", dims: [], values: [1] },
      { name: "ten", dims: [], values: [10] },
      { name: "five", dims: [], values: [5] },
      { name: "zero", dims: [], values: [0] },
    ],
    nodes: [
      // ids [1,L] against each query's token [1,Q,1]: 0 where equal, 1 elsewhere, then +5 / -5.
      { op: "Cast", inputs: ["input_ids"], outputs: ["ids"], attributes: { to: FLOAT } },
      { op: "Constant", inputs: [], outputs: ["axis1"], attributes: { value: { int64s: [1] } } },
      { op: "Unsqueeze", inputs: ["ids", "axis1"], outputs: ["ids3"] },
      { op: "Sub", inputs: ["ids3", "targets"], outputs: ["diff"] },
      { op: "Mul", inputs: ["diff", "diff"], outputs: ["square"] },
      { op: "Min", inputs: ["square", "one"], outputs: ["miss"] },
      { op: "Mul", inputs: ["miss", "ten"], outputs: ["penalty"] },
      { op: "Sub", inputs: ["five", "penalty"], outputs: ["logits"] },
      { op: "Add", inputs: ["boxes", "zero"], outputs: ["pred_boxes"] },
    ],
  });
}

/**
 * An image encoder with MobileSAM's contract (Acly's export): input_image
 * float32 [H,W,3], RGB 0..255, the longer side 1024; output image_embeddings
 * [1,256,64,64], here all zeros (the mean of the input times zero, so that
 * the input is read).
 */
export function tinyMobileSamEncoder(): Buffer {
  return buildOnnxModel({
    inputs: [{ name: "input_image", shape: ["height", "width", 3] }],
    outputs: [{ name: "image_embeddings", shape: [1, 256, 64, 64] }],
    initializers: [{ name: "zero", dims: [], values: [0] }],
    nodes: [
      { op: "ReduceMean", inputs: ["input_image"], outputs: ["mean"], attributes: { keepdims: 0 } },
      { op: "Mul", inputs: ["mean", "zero"], outputs: ["nothing"] },
      { op: "Constant", inputs: [], outputs: ["shape"], attributes: { value: { int64s: [1, 256, 64, 64] } } },
      { op: "Expand", inputs: ["nothing", "shape"], outputs: ["image_embeddings"] },
    ],
  });
}

/**
 * An image encoder with SAM 2.1's contract (samexporter's export): image
 * float32 [1,3,1024,1024] in; image_embed [1,256,64,64], high_res_feats_0
 * [1,32,256,256] and high_res_feats_1 [1,64,128,128] out. The embedding is
 * the input's mean everywhere (so a test can tell what it was fed); the
 * feature maps are 1 and 2. With `nan`, the embedding is NaN, as onnxruntime
 * releases were reported to give for the real export.
 */
export function tinySam2Encoder(options: { nan?: boolean } = {}): Buffer {
  const expand = (from: string, shape: number[], to: string): OnnxNode[] => [
    { op: "Constant", inputs: [], outputs: [`${to}_shape`], attributes: { value: { int64s: shape } } },
    { op: "Expand", inputs: [from, `${to}_shape`], outputs: [to] },
  ];
  return buildOnnxModel({
    inputs: [{ name: "image", shape: [1, 3, 1024, 1024] }],
    outputs: [
      { name: "high_res_feats_0", shape: [1, 32, 256, 256] },
      { name: "high_res_feats_1", shape: [1, 64, 128, 128] },
      { name: "image_embed", shape: [1, 256, 64, 64] },
    ],
    initializers: [
      { name: "zero", dims: [], values: [0] },
      { name: "one", dims: [], values: [1] },
      { name: "two", dims: [], values: [2] },
    ],
    nodes: [
      { op: "ReduceMean", inputs: ["image"], outputs: ["mean"], attributes: { keepdims: 0 } },
      ...(options.nan
        ? [
            { op: "Div", inputs: ["zero", "zero"], outputs: ["not_a_number"] },
            { op: "Add", inputs: ["mean", "not_a_number"], outputs: ["embedded"] },
          ]
        : [{ op: "Identity", inputs: ["mean"], outputs: ["embedded"] }]),
      ...expand("embedded", [1, 256, 64, 64], "image_embed"),
      ...expand("one", [1, 32, 256, 256], "high_res_feats_0"),
      ...expand("two", [1, 64, 128, 128], "high_res_feats_1"),
    ],
  });
}

/**
 * A prompt decoder with SAM 2.1's contract (samexporter's export): the
 * encoder's three outputs, point_coords [1,N,2] in the stretched 1024 frame,
 * point_labels [1,N], mask_input and has_mask_input in; masks [1,3,256,256]
 * (logits over the 1024 frame) and iou_predictions [1,3] out. The second
 * mask, rated best (0.9), is the box between the first and the last point:
 * its logit is the distance inside the box's nearest edge. The others are
 * empty (rated 0.2) and the box's complement (0.5).
 */
export function tinySam2Decoder(): Buffer {
  const grid = Array.from({ length: 256 }, (_, i) => (i + 0.5) * 4);
  const coordinate = (corner: string, axis: number, to: string): OnnxNode[] => [
    { op: "Constant", inputs: [], outputs: [`${to}_axis`], attributes: { value: { int64s: [axis] } } },
    { op: "Gather", inputs: [corner, `${to}_axis`], outputs: [to], attributes: { axis: 1 } },
  ];
  return buildOnnxModel({
    inputs: [
      { name: "image_embed", shape: [1, 256, 64, 64] },
      { name: "high_res_feats_0", shape: [1, 32, 256, 256] },
      { name: "high_res_feats_1", shape: [1, 64, 128, 128] },
      { name: "point_coords", shape: [1, "points", 2] },
      { name: "point_labels", shape: [1, "points"] },
      { name: "mask_input", shape: [1, 1, 256, 256] },
      { name: "has_mask_input", shape: [1] },
    ],
    outputs: [
      { name: "masks", shape: [1, 3, 256, 256] },
      { name: "iou_predictions", shape: [1, 3] },
    ],
    initializers: [
      { name: "grid_x", dims: [1, 256], values: grid },
      { name: "grid_y", dims: [256, 1], values: grid },
      { name: "far", dims: [], values: [1000] },
      { name: "minus_one", dims: [], values: [-1] },
      { name: "ratings", dims: [1, 3], values: [0.2, 0.9, 0.5] },
    ],
    nodes: [
      { op: "Constant", inputs: [], outputs: ["first"], attributes: { value: { int64s: [0] } } },
      { op: "Constant", inputs: [], outputs: ["last"], attributes: { value: { int64s: [-1] } } },
      // [1,1,2] each: the box's top-left and bottom-right corners.
      { op: "Constant", inputs: [], outputs: ["flat_shape"], attributes: { value: { int64s: [1, 2] } } },
      { op: "Gather", inputs: ["point_coords", "first"], outputs: ["corner0"], attributes: { axis: 1 } },
      { op: "Gather", inputs: ["point_coords", "last"], outputs: ["corner1"], attributes: { axis: 1 } },
      { op: "Reshape", inputs: ["corner0", "flat_shape"], outputs: ["corner0_flat"] },
      { op: "Reshape", inputs: ["corner1", "flat_shape"], outputs: ["corner1_flat"] },
      ...coordinate("corner0_flat", 0, "x0"),
      ...coordinate("corner0_flat", 1, "y0"),
      ...coordinate("corner1_flat", 0, "x1"),
      ...coordinate("corner1_flat", 1, "y1"),
      { op: "Sub", inputs: ["grid_x", "x0"], outputs: ["left"] },
      { op: "Sub", inputs: ["x1", "grid_x"], outputs: ["right"] },
      { op: "Sub", inputs: ["grid_y", "y0"], outputs: ["top"] },
      { op: "Sub", inputs: ["y1", "grid_y"], outputs: ["bottom"] },
      { op: "Min", inputs: ["left", "right", "top", "bottom"], outputs: ["inside"] },
      { op: "Sub", inputs: ["inside", "far"], outputs: ["nothing"] },
      { op: "Mul", inputs: ["inside", "minus_one"], outputs: ["outside"] },
      { op: "Constant", inputs: [], outputs: ["mask_shape"], attributes: { value: { int64s: [1, 1, 256, 256] } } },
      { op: "Reshape", inputs: ["nothing", "mask_shape"], outputs: ["mask0"] },
      { op: "Reshape", inputs: ["inside", "mask_shape"], outputs: ["mask1"] },
      { op: "Reshape", inputs: ["outside", "mask_shape"], outputs: ["mask2"] },
      { op: "Concat", inputs: ["mask0", "mask1", "mask2"], outputs: ["masks"], attributes: { axis: 1 } },
      { op: "Identity", inputs: ["ratings"], outputs: ["iou_predictions"] },
    ],
  });
}
