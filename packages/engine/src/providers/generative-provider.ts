import type { GenerativeEditTask, OutputFormat, RgbaImage, WorkContext } from "../engine.ports";

/**
 * Hosted image models behind the engine's generative workflow. The engine
 * keeps deterministic edits on its built-in catalog and hands every other
 * generative instruction to the one configured provider (none by default).
 * Options are plain data: they cross into the engine pool's threads.
 */
export const GENERATIVE_PROVIDERS = ["openai", "gemini", "bfl", "replicate", "fal", "stability", "openai-compatible"] as const;
export type GenerativeProviderName = (typeof GENERATIVE_PROVIDERS)[number];

export interface GenerativeProviderOptions {
  provider: GenerativeProviderName;
  /** The vendor's key; optional only for `openai-compatible` servers that take none. */
  apiKey?: string;
  /** Replaces the vendor's API base URL (required for `openai-compatible`). */
  baseUrl?: string;
  /** The vendor's model name; default: the adapter's. */
  model?: string;
  /** One upstream attempt's time limit. */
  timeoutMs?: number;
  /** Retries after a 429 or 5xx (with backoff, honouring Retry-After). */
  maxRetries?: number;
}

/** What a provider hands back: the picture and how long the vendor took. */
export interface ProviderEdit {
  image: RgbaImage;
  /** Wall time spent waiting on the vendor, retries included. */
  latencyMs: number;
}

export interface ProviderEditTask extends GenerativeEditTask {
  /** The job's requested output format and quality, for vendors that take them. */
  format?: OutputFormat;
  quality?: number;
}

export interface GenerativeProvider {
  readonly name: GenerativeProviderName;
  readonly model: string;
  /** Fails with EngineError `upstream_failed` or `content_refused`; never leaks the key or the vendor's raw text. */
  edit(task: ProviderEditTask, context: WorkContext): Promise<ProviderEdit>;
}
