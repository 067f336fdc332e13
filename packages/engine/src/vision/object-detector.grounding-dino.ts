import { readFile } from "node:fs/promises";
import { Tokenizer } from "@huggingface/tokenizers";
import sharp from "sharp";
import type { Detection, ObjectDetector, RgbaImage, WorkContext } from "../engine.ports";
import { EngineError } from "../engine-error";
import { type FeedTensor, type OnnxModelSpec, type OnnxRunner, sharedOnnxRunner } from "../models/onnx-runner";
import { throwIfCancelled } from "../work-checkpoint";
import { suppressDuplicates } from "./object-detector.human";

/**
 * Open-vocabulary detection with Grounding DINO (IDEA Research, Apache-2.0),
 * as Hugging Face's GroundingDinoForObjectDetection exports it to ONNX: the
 * picture and a caption of phrases ("trash can . power line .") in, 900
 * candidate boxes out, each with a logit per caption token. A box belongs to
 * the phrase whose tokens score highest on it, and is kept when that score
 * (a sigmoid) reaches the threshold. The phrases are what the removal asks
 * for, so any term can be looked for; the catalog entry `grounding-dino-tiny`
 * is the model (docs/engine.md#open-vocabulary-detection).
 *
 * The caption is tokenized with BERT's uncased WordPiece (the model's text
 * encoder), by `@huggingface/tokenizers` with the vocabulary file that comes
 * with the model: nothing is fetched at run time.
 */

/** ImageNet's normalisation, on RGB in 0..1 (GroundingDinoImageProcessor's). */
const MEAN = [0.485, 0.456, 0.406] as const;
const STD = [0.229, 0.224, 0.225] as const;
/** BERT's longest input, and the width of the model's logits. */
const MAX_TOKENS = 256;

export interface GroundingDinoDetectorOptions {
  /** The ONNX graph (catalog entry `grounding-dino-tiny`). */
  modelPath: string;
  /** bert-base-uncased's vocab.txt: one WordPiece token a line, the line number its id. */
  vocabPath: string;
  /**
   * The square side the picture is resized to (default 800, the size the model was trained at on the short side).
   * Stretched, not padded: the boxes come out in fractions of the picture, so they map straight back to it.
   */
  size?: number;
  /** A box is kept when its phrase scores at least this (0..1). Default 0.3, as IDEA's own demo. */
  boxThreshold?: number;
  /** Overlap (IoU) above which two boxes of one phrase are one object. Default 0.5. */
  overlap?: number;
  runner?: OnnxRunner;
}

/** The caption's token ids, and which of them belong to each phrase. */
export interface EncodedCaption {
  ids: number[];
  /** Per phrase, in order, the positions of its tokens in `ids` (none when the caption was cut before it). */
  spans: number[][];
}

export class GroundingDinoDetector implements ObjectDetector {
  /** Any phrase: what it may report is what it was asked for. */
  readonly labels: readonly string[] = [];
  readonly openVocabulary = true;
  readonly model: OnnxModelSpec;
  private readonly runner: OnnxRunner;
  private readonly size: number;
  private readonly boxThreshold: number;
  private readonly overlap: number;
  private tokenizer: Promise<Tokenizer> | undefined;

  constructor(private readonly options: GroundingDinoDetectorOptions) {
    this.model = { path: options.modelPath, allOutputs: true };
    this.runner = options.runner ?? sharedOnnxRunner();
    this.size = options.size ?? 800;
    this.boxThreshold = options.boxThreshold ?? 0.3;
    this.overlap = options.overlap ?? 0.5;
  }

  async load(): Promise<void> {
    await Promise.all([this.runner.load(this.model), this.loadTokenizer()]);
  }

  /** The caption "a . b ." for the phrases, tokenized, with each phrase's token positions. */
  async encode(phrases: readonly string[]): Promise<EncodedCaption> {
    const tokenizer = await this.loadTokenizer();
    const clean = phrases.map(cleanPhrase);
    const encoded = tokenizer.encode(`${clean.join(" . ")} .`);
    const ids = encoded.ids.slice(0, MAX_TOKENS);
    const tokens = encoded.tokens.slice(0, MAX_TOKENS);
    // Phrases are what lies between [CLS], each "." and [SEP], as Grounding DINO reads its caption.
    const spans: number[][] = clean.map(() => []);
    let phrase = 0;
    tokens.forEach((token, index) => {
      if (token === "[CLS]" || token === "[SEP]") return;
      if (token === ".") {
        phrase++;
        return;
      }
      spans[phrase]?.push(index);
    });
    return { ids, spans };
  }

  async detect(image: RgbaImage, context: WorkContext, phrases: readonly string[] = []): Promise<Detection[]> {
    throwIfCancelled(context.signal);
    const wanted = [...new Set(phrases.map(cleanPhrase).filter((phrase) => phrase.length > 0))];
    if (wanted.length === 0) return [];
    const [{ ids, spans }, info, pixels] = await Promise.all([
      this.encode(wanted),
      this.runner.load(this.model),
      this.pixels(image),
    ]);
    const side = this.size;
    const length = ids.length;
    const available: Record<string, FeedTensor> = {
      pixel_values: { data: pixels, dims: [1, 3, side, side] },
      pixel_mask: { data: new BigInt64Array(side * side).fill(1n), dims: [1, side, side] },
      input_ids: { data: BigInt64Array.from(ids, (id) => BigInt(id)), dims: [1, length] },
      token_type_ids: { data: new BigInt64Array(length), dims: [1, length] },
      attention_mask: { data: new BigInt64Array(length).fill(1n), dims: [1, length] },
    };
    // Only what the graph declares: some exports take no pixel_mask or token_type_ids.
    const feeds = Object.fromEntries(
      info.inputs.flatMap((input) => {
        const tensor = available[input.name];
        return tensor ? [[input.name, tensor]] : [];
      }),
    );
    const missing = info.inputs.find((input) => !available[input.name]);
    if (missing) {
      throw new EngineError(
        "model_failed",
        `The detector model takes an input "${missing.name}" that Grounding DINO's contract does not have.`,
      );
    }
    const outputs = await this.runner.runOutputs(this.model, feeds, context.signal);
    const logits = outputs.logits;
    const boxes = outputs.pred_boxes;
    if (!(logits?.data instanceof Float32Array) || !(boxes?.data instanceof Float32Array) || logits.dims.length !== 3) {
      throw new EngineError("model_failed", "The detector model did not return Grounding DINO's logits and pred_boxes.");
    }
    const queries = logits.dims[1] ?? 0;
    const width = logits.dims[2] ?? 0;
    const detections: Detection[] = [];
    for (let query = 0; query < queries; query++) {
      let best = -1;
      let bestLogit = Number.NEGATIVE_INFINITY;
      spans.forEach((span, phrase) => {
        for (const token of span) {
          if (token >= width) continue;
          const logit = logits.data[query * width + token] ?? Number.NEGATIVE_INFINITY;
          if (logit > bestLogit) {
            bestLogit = logit;
            best = phrase;
          }
        }
      });
      const label = wanted[best];
      const score = sigmoid(bestLogit);
      if (label === undefined || score < this.boxThreshold) continue;
      const [cx = 0, cy = 0, w = 0, h = 0] = boxes.data.subarray(query * 4, query * 4 + 4);
      const x1 = Math.max(0, (cx - w / 2) * image.width);
      const y1 = Math.max(0, (cy - h / 2) * image.height);
      const x2 = Math.min(image.width, (cx + w / 2) * image.width);
      const y2 = Math.min(image.height, (cy + h / 2) * image.height);
      if (x2 - x1 < 1 || y2 - y1 < 1) continue;
      detections.push({ label, score, box: { x: x1, y: y1, width: x2 - x1, height: y2 - y1 } });
    }
    return suppressDuplicates(detections, this.overlap);
  }

  /** The picture at side x side, normalised, planar RGB. */
  private async pixels(image: RgbaImage): Promise<Float32Array> {
    const side = this.size;
    const rgb = await sharp(image.data, { raw: { width: image.width, height: image.height, channels: 4 } })
      .removeAlpha()
      .resize(side, side, { fit: "fill" })
      .raw()
      .toBuffer();
    const plane = side * side;
    const data = new Float32Array(3 * plane);
    for (let i = 0; i < plane; i++) {
      for (let c = 0; c < 3; c++) data[c * plane + i] = ((rgb[i * 3 + c] ?? 0) / 255 - (MEAN[c] ?? 0)) / (STD[c] ?? 1);
    }
    return data;
  }

  private loadTokenizer(): Promise<Tokenizer> {
    this.tokenizer ??= readFile(this.options.vocabPath, "utf8").then(wordPieceTokenizer);
    // A failed read is tried again by the next detection.
    this.tokenizer.catch(() => {
      this.tokenizer = undefined;
    });
    return this.tokenizer;
  }
}

/** A phrase as the caption holds it: lower case, no full stops (they separate phrases), single spaces. */
function cleanPhrase(phrase: string): string {
  return phrase.toLowerCase().replace(/\./g, " ").replace(/\s+/g, " ").trim();
}

function sigmoid(value: number): number {
  return 1 / (1 + Math.exp(-value));
}

/**
 * BERT's uncased tokenizer (bert-base-uncased's tokenizer.json, less its
 * 30,522-entry vocabulary) over the vocabulary read from `vocabText`.
 */
export function wordPieceTokenizer(vocabText: string): Tokenizer {
  const lines = vocabText.split(/\r?\n/);
  if (lines.at(-1) === "") lines.pop();
  const vocab = Object.fromEntries(lines.map((token, id) => [token, id]));
  const special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"].filter((token) => vocab[token] !== undefined);
  for (const token of ["[UNK]", "[CLS]", "[SEP]"]) {
    if (vocab[token] === undefined) throw new EngineError("model_failed", `The detector's vocabulary has no ${token} token.`);
  }
  const cls = vocab["[CLS]"] as number;
  const sep = vocab["[SEP]"] as number;
  return new Tokenizer(
    {
      version: "1.0",
      truncation: null,
      padding: null,
      added_tokens: special.map((content) => ({
        id: vocab[content],
        content,
        single_word: false,
        lstrip: false,
        rstrip: false,
        normalized: false,
        special: true,
      })),
      normalizer: { type: "BertNormalizer", clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
      pre_tokenizer: { type: "BertPreTokenizer" },
      post_processor: {
        type: "TemplateProcessing",
        single: [
          { SpecialToken: { id: "[CLS]", type_id: 0 } },
          { Sequence: { id: "A", type_id: 0 } },
          { SpecialToken: { id: "[SEP]", type_id: 0 } },
        ],
        pair: [],
        special_tokens: {
          "[CLS]": { id: "[CLS]", ids: [cls], tokens: ["[CLS]"] },
          "[SEP]": { id: "[SEP]", ids: [sep], tokens: ["[SEP]"] },
        },
      },
      decoder: { type: "WordPiece", prefix: "##", cleanup: true },
      model: {
        type: "WordPiece",
        unk_token: "[UNK]",
        continuing_subword_prefix: "##",
        max_input_chars_per_word: 100,
        vocab,
      },
    },
    { do_lower_case: true, model_max_length: MAX_TOKENS },
  );
}
