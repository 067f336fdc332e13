import { anonymousClient, type CommandContext } from "../command-context";

/** `retouch capabilities`: what the server can do, before spending a credit on a prompt it would refuse. */
export async function capabilities(ctx: CommandContext): Promise<void> {
  const found = await anonymousClient(ctx).capabilities();
  ctx.out.result(found, () => {
    const provider = found.generative_provider;
    const background = found.models.background;
    return [
      `Server: ${ctx.baseUrl}`,
      "",
      "Workflows:",
      ...found.workflows.map((workflow) => `  ${workflow.name}: ${workflow.description}`),
      "",
      `Generative provider: ${provider ? `${provider.name} (${provider.model})` : "none: prompts outside the list below are refused, nothing is charged"}`,
      `Background model: ${background ? `${background.name}${background.installed ? "" : " (not installed yet: the classical segmenter answers meanwhile)"}` : "classical segmenter only"}`,
      "",
      'Built-in instructions (combine them: "make it brighter, then crop to a square"):',
      ...found.instructions.map((instruction) => `  ${instruction.name}: "${instruction.examples.slice(0, 2).join('", "')}"`),
      "",
      `Objects found without a mask: ${found.detectable_objects.join(", ")}`,
    ].join("\n");
  });
}
