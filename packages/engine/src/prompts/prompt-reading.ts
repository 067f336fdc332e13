import { type EditStep, readInstructions, type UnderstoodProblem } from "./generative-catalog";
import { type PromptRoute, type RouteInput, routePrompt } from "./prompt-router";

/** A whole prompt as the built-in engine reads it. */
export interface PromptReading {
  route: PromptRoute;
  /**
   * The built-in catalog's steps: for a generative edit, the whole prompt's;
   * after a background or object removal, its follow-up clauses'.
   */
  steps: EditStep[];
  /**
   * Each clause the built-in catalog cannot carry out, with a message that
   * says why; empty when the built-in engine can do the whole prompt. A
   * removal's own clause is never here (the removal decides at run time
   * whether it finds what to remove).
   */
  problems: UnderstoodProblem[];
}

/**
 * Reads a whole prompt: its route, and every other clause through the
 * catalog, without running anything. A pure function, so a prompt can be
 * refused before a job is made: a background removal with a drop shadow and a
 * border is done whole, one with "and make it smile" is refused whole.
 */
export function readPrompt(input: RouteInput): PromptReading {
  const route = routePrompt(input);
  const context = { hasMask: input.hasMask === true };
  if (route.workflow === "generative_edit") return { route, ...readInstructions(input.prompt, context) };
  if (route.followUpInstructions.length === 0) return { route, steps: [], problems: [] };
  // The follow-ups are whole clauses already: joined with commas, the catalog cuts them at the same places.
  return { route, ...readInstructions(route.followUpInstructions.join(", "), context) };
}
