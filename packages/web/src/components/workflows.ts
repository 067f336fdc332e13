/** A person's name for each of the service's workflows (`service.capabilities` gives their descriptions). */
export const WORKFLOW_TITLES: Record<string, string> = {
  background_removal: "Background removal",
  object_removal: "Object removal",
  generative_edit: "Edits and effects",
};

export function workflowTitle(name: string): string {
  return WORKFLOW_TITLES[name] ?? name.replaceAll("_", " ");
}

/**
 * What each workflow does, said to a visitor. The capabilities' descriptions
 * are written for API clients and operators (they name request fields and
 * say what the server lacks), so the public pages use these instead.
 */
export const WORKFLOW_BLURBS: Record<string, string> = {
  background_removal: "Cut the subject out of its background, ready to place anywhere: a transparent PNG.",
  object_removal: "Name what should go, or paint over it, and it is filled in from its surroundings.",
  generative_edit: "Black and white, brighter, sharper, cropped, rotated and more, asked for in plain words.",
};
