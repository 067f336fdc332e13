import { z } from "zod";
import { EXECUTORS, type PlannedEdit, WORKFLOWS } from "../engine.ports";
import { EngineError, type EngineFailureReason } from "../engine-error";
import { COCO_LABELS } from "../prompts/detection-vocabulary";
import { CATALOG } from "../prompts/generative-catalog";
import { readPrompt } from "../prompts/prompt-reading";
import type { RouteInput } from "../prompts/prompt-router";
import { readRemovalTerms } from "./object-removal";

export type { Executor } from "../engine.ports";

/**
 * Who carries out a prompt, decided before anything is charged: the built-in
 * engine for what it fully understands (free, instant, exact), the hosted
 * provider for the rest when one is configured, or nobody — then the
 * submission is refused with a message that says what this server can do.
 * Pure. Made once, at submission: the accepted plan is stored with the job
 * (plannedEdit) and the worker's engine executes it as stored (readPlannedEdit);
 * the engine plans a prompt itself only when it is given no plan.
 */
export type EditPlan = ({ ok: true } & PlannedEdit) | { ok: false; reason: EngineFailureReason; message: string };

/** What a stored plan must look like to be executed (readPlannedEdit); extra keys are dropped. */
const plannedEditSchema = z.object({
  workflow: z.enum(WORKFLOWS),
  executor: z.enum(EXECUTORS),
  route: z.object({
    workflow: z.enum(WORKFLOWS),
    removalTerms: z.array(z.string()),
    followUpInstructions: z.array(z.string()),
  }),
});

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

/** The part of an accepted plan that is stored with the job: plain JSON, nothing else of the reading. */
export function plannedEdit(plan: PlannedEdit): PlannedEdit {
  const { workflow, removalTerms, followUpInstructions } = plan.route;
  return { workflow: plan.workflow, executor: plan.executor, route: { workflow, removalTerms, followUpInstructions } };
}

/**
 * A stored plan, read back where it is executed: the plan itself, or `plan_not_executable` when it is
 * not one this engine can read (a newer format, a damaged row). Never replanned from the prompt: that
 * could be a different edit from the one the submission accepted.
 */
export function readPlannedEdit(value: unknown): PlannedEdit {
  const parsed = plannedEditSchema.safeParse(value);
  if (!parsed.success || parsed.data.route.workflow !== parsed.data.workflow) {
    throw new EngineError("plan_not_executable", "The job's stored edit plan is not one this engine can read.");
  }
  return parsed.data;
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
