import path from "node:path";
import {
  type BackgroundModelOptions,
  type DownloadProgress,
  type EngineWorkerOptions,
  isModelError,
  type ModelEntry,
  ModelLibrary,
} from "@retouch/engine";
import type { Config } from "../config/env";
import type { Logger } from "../lib/logger";

/** After a failed start-up download, the next try comes this much later, doubling up to the maximum. */
const RETRY_FIRST_MS = 10 * 60_000;
const RETRY_MAX_MS = 6 * 3_600_000;
/** Another process sharing the models directory is downloading: look again this soon. */
const BUSY_POLL_MS = 5_000;

export interface ModelProvisionerDependencies {
  config: Pick<Config, "backgroundModel" | "maxImagePixels" | "models" | "generativeProvider">;
  logger: Logger;
}

/** The engine options the service configuration asks for (RETOUCH_MAX_IMAGE_PIXELS, RETOUCH_BACKGROUND_MODEL*, RETOUCH_GENERATIVE_*). */
export function imageEngineOptions(
  config: Pick<Config, "maxImagePixels" | "backgroundModel" | "generativeProvider">,
): EngineWorkerOptions {
  const model = config.backgroundModel;
  return {
    maxPixels: config.maxImagePixels,
    ...(model ? { backgroundModel: { path: model.path, kind: model.kind, inputSize: model.inputSize } } : {}),
    // Plain data: copied into each engine thread, which builds its own provider (and breaker) from it.
    ...(config.generativeProvider ? { generativeProvider: { ...config.generativeProvider } } : {}),
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

/**
 * Which models the engine threads use, and getting the missing one. The
 * threads start at once with what is on disk (the classical segmenter when
 * the background model is missing); the missing model is then fetched in the
 * background, verified, and handed to the engine pool. Jobs never wait for
 * it, and without a network the service keeps running on its fallbacks.
 */
export class ModelProvisioner {
  private readonly library: ModelLibrary;
  private readonly stopping = new AbortController();
  private missing: ModelEntry | undefined;
  private background = "classical segmenter (built in)";
  private running: Promise<void> | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryDelayMs = RETRY_FIRST_MS;

  constructor(private readonly deps: ModelProvisionerDependencies) {
    const { models } = deps.config;
    this.library = new ModelLibrary({ dir: models.dir, catalog: models.catalog, mirror: models.mirror });
  }

  /** The options the engine threads start with; logs the active models. */
  async initialOptions(): Promise<EngineWorkerOptions> {
    const { config } = this.deps;
    const options = imageEngineOptions(config);
    const name = config.models.background;
    if (config.backgroundModel) {
      this.background = `file ${config.backgroundModel.path}`;
    } else if (name) {
      const status = await this.library.status(name);
      if (status.state === "installed") {
        this.background = name;
        options.backgroundModel = catalogModelOptions(status.entry, status.path, config.models.backgroundSize);
      } else {
        this.missing = status.entry;
      }
    }
    this.logActive("active models");
    return options;
  }

  /**
   * Fetches a missing background model in the background (unless
   * RETOUCH_MODEL_DOWNLOAD=off) and passes its options to `activate` once
   * verified. Returns at once; failures are logged and retried later.
   */
  start(activate: (options: EngineWorkerOptions) => Promise<void>): void {
    const entry = this.missing;
    if (!entry) return;
    if (!this.deps.config.models.download) {
      this.deps.logger.warn(
        { model: entry.name, dir: this.library.dir },
        `background model ${entry.name} is not installed and RETOUCH_MODEL_DOWNLOAD=off: background removal uses the classical segmenter; run \`pnpm retouch models pull ${entry.name}\` to install it`,
      );
      return;
    }
    this.running = this.fetchAndActivate(entry, activate);
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    clearTimeout(this.retryTimer);
    await this.running;
  }

  private async fetchAndActivate(entry: ModelEntry, activate: (options: EngineWorkerOptions) => Promise<void>): Promise<void> {
    const { logger, config } = this.deps;
    const signal = this.stopping.signal;
    logger.info(
      { model: entry.name, bytes: entry.size, from: config.models.mirror ?? entry.urls[0], dir: this.library.dir },
      `fetching background model ${entry.name} in the background; jobs use the classical segmenter until it is verified`,
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
      await activate({
        ...imageEngineOptions(config),
        backgroundModel: catalogModelOptions(entry, result.path, config.models.backgroundSize),
      });
      this.background = entry.name;
      this.missing = undefined;
      this.logActive("background model switched: active models");
    } catch (error) {
      if (signal.aborted) return;
      const message = error instanceof Error ? error.message : String(error);
      if (isModelError(error) && error.reason === "busy") {
        logger.info({ model: entry.name }, `${message} Waiting for it.`);
        this.retry(entry, activate, BUSY_POLL_MS);
        return;
      }
      logger.warn(
        { model: entry.name, reason: isModelError(error) ? error.reason : "activation_failed", retryInMs: this.retryDelayMs },
        `could not fetch the background model: ${message} Background removal uses the classical segmenter meanwhile.`,
      );
      this.logActive("active models");
      this.retry(entry, activate, this.retryDelayMs);
      this.retryDelayMs = Math.min(this.retryDelayMs * 2, RETRY_MAX_MS);
    }
  }

  private retry(entry: ModelEntry, activate: (options: EngineWorkerOptions) => Promise<void>, delayMs: number): void {
    this.retryTimer = setTimeout(() => {
      this.running = this.fetchAndActivate(entry, activate);
    }, delayMs);
    this.retryTimer.unref();
  }

  private logActive(message: string): void {
    const { config } = this.deps;
    this.deps.logger.info(
      {
        models: {
          background: this.background,
          objectDetector: "CenterNet (built in)",
          inpainting: "PatchMatch (built in)",
          // The provider and model only: never its key.
          generative: generativeSummary(config.generativeProvider),
        },
        modelsDir: path.resolve(config.models.dir),
      },
      message,
    );
  }
}
