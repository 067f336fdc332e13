import type { Workflow } from "../engine.ports";
import { EngineError, type EngineFailureReason } from "../engine-error";
import { COCO_LABELS } from "../prompts/detection-vocabulary";
import { CATALOG } from "../prompts/generative-catalog";
import { readPrompt } from "../prompts/prompt-reading";
import type { PromptRoute, RouteInput } from "../prompts/prompt-router";
import { readRemovalTerms } from "./object-removal";

/**
 * Who carries out a prompt, decided before anything is charged: the built-in
 * engine for what it fully understands (free, instant, exact), the hosted
 * provider for the rest when one is configured, or nobody — then the
 * submission is refused with a message that says what this server can do.
 * Pure: the service's submission check and the engine read prompts the same
 * way, so a prompt accepted here is one the engine will attempt.
 */
export type Executor = "builtin" | "provider";

export type EditPlan =
  | { ok: true; workflow: Workflow; executor: Executor; route: PromptRoute }
  | { ok: false; reason: EngineFailureReason; message: string };

export interface PlanOptions {
  /** A generative provider is configured (RETOUCH_GENERATIVE_PROVIDER). */
  provider: boolean;
  /** The object detector's labels; default: the built-in detector's (COCO). */
  labels?: readonly string[];
  /** An open-vocabulary detector is installed (RETOUCH_OBJECT_DETECTOR): any thing can be named. */
  openVocabulary?: boolean;
}

/** One sentence on what a server without a provider can do, for refusals. */
export function builtInAbilities(): string {
  const edits = CATALOG.map((entry) => entry.name).join(", ");
  return (
    "Without a generative provider this server can remove the background, remove objects it can detect " +
    `(people, animals, vehicles and everyday things; or anything marked with a mask), and make these edits: ${edits}. ` +
    "GET /api/capabilities lists them with examples."
  );
}

export function planEdit(input: RouteInput, options: PlanOptions): EditPlan {
  const { route, problems } = readPrompt(input);
  const refusals = problems.map((problem) => ({
    reason: "unsupported_instruction" as EngineFailureReason,
    message: problem.message,
  }));
  // With a mask nothing is detected: the mask says what to fill.
  if (route.workflow === "object_removal" && !input.hasMask) {
    try {
      readRemovalTerms(route.removalTerms, options.labels ?? COCO_LABELS, { openVocabulary: options.openVocabulary === true });
    } catch (error) {
      if (!(error instanceof EngineError)) throw error;
      refusals.unshift({ reason: error.reason, message: error.message });
    }
  }
  const [first] = refusals;
  if (!first) return { ok: true, workflow: route.workflow, executor: "builtin", route };
  if (options.provider) return { ok: true, workflow: route.workflow, executor: "provider", route };
  return { ok: false, reason: first.reason, message: `${first.message} ${builtInAbilities()}` };
}
