import { BflProvider } from "./bfl.provider";
import { FalProvider } from "./fal.provider";
import { GeminiProvider } from "./gemini.provider";
import type { GenerativeProvider, GenerativeProviderOptions } from "./generative-provider";
import { OpenAiProvider } from "./openai.provider";
import { ReplicateProvider } from "./replicate.provider";
import { StabilityProvider } from "./stability.provider";
import type { UpstreamTuning } from "./upstream-call";

/**
 * The configured hosted provider. `tuning` (backoff, breaker, polling
 * intervals) is for tests; the service runs on the defaults.
 */
export function createGenerativeProvider(options: GenerativeProviderOptions, tuning?: UpstreamTuning): GenerativeProvider {
  switch (options.provider) {
    case "openai":
    case "openai-compatible":
      return new OpenAiProvider(options, tuning);
    case "gemini":
      return new GeminiProvider(options, tuning);
    case "bfl":
      return new BflProvider(options, tuning);
    case "replicate":
      return new ReplicateProvider(options, tuning);
    case "fal":
      return new FalProvider(options, tuning);
    case "stability":
      return new StabilityProvider(options, tuning);
  }
}
