/** A person's name for each of the service's workflows (`service.capabilities` gives their descriptions). */
export const WORKFLOW_TITLES: Record<string, string> = {
  background_removal: "Background removal",
  object_removal: "Object removal",
  generative_edit: "Edits and effects",
};

export function workflowTitle(name: string): string {
  return WORKFLOW_TITLES[name] ?? name.replaceAll("_", " ");
}
