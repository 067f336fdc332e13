/**
 * Vendors behind the engine's background- and object-removal ports, where a
 * vendor has a dedicated endpoint (Stability AI's remove-background and
 * erase). None by default: the built-in segmenter and detector + inpainter.
 * Options are plain data: they cross into the engine pool's threads, where
 * each engine builds its own adapter (and breaker).
 *
 * The factories are in removal-providers.ts: the adapters import their options
 * from here and the factories import the adapters, so no two files import each
 * other (generative-provider.ts and generative-providers.ts, the same way).
 */
export const BACKGROUND_PROVIDERS = ["stability"] as const;
export type BackgroundProviderName = (typeof BACKGROUND_PROVIDERS)[number];
export const OBJECT_REMOVAL_PROVIDERS = ["stability"] as const;
export type ObjectRemovalProviderName = (typeof OBJECT_REMOVAL_PROVIDERS)[number];

interface RemovalProviderOptions<Name extends string> {
  provider: Name;
  apiKey: string;
  /** Replaces the vendor's API base URL (a proxy). */
  baseUrl?: string;
  /** One upstream attempt's time limit. */
  timeoutMs?: number;
  /** Retries after a 429 or 5xx (with backoff, honouring Retry-After). */
  maxRetries?: number;
}

export type BackgroundProviderOptions = RemovalProviderOptions<BackgroundProviderName>;
export type ObjectRemovalProviderOptions = RemovalProviderOptions<ObjectRemovalProviderName>;
