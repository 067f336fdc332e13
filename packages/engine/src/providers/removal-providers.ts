import type { BackgroundRemover, ObjectRemover } from "../engine.ports";
import type { BackgroundProviderOptions, ObjectRemovalProviderOptions } from "./removal-provider";
import { StabilityBackgroundRemover } from "./stability-background.provider";
import { StabilityEraseRemover } from "./stability-erase.provider";
import type { UpstreamTuning } from "./upstream-call";

/** The configured vendor's background remover; `tuning` is for tests. */
export function createBackgroundProvider(options: BackgroundProviderOptions, tuning?: UpstreamTuning): BackgroundRemover {
  switch (options.provider) {
    case "stability":
      return new StabilityBackgroundRemover(options, tuning);
  }
}

/** The configured vendor's object remover: masked removals only (the engine keeps unmasked ones built in). */
export function createObjectRemovalProvider(options: ObjectRemovalProviderOptions, tuning?: UpstreamTuning): ObjectRemover {
  switch (options.provider) {
    case "stability":
      return new StabilityEraseRemover(options, tuning);
  }
}
