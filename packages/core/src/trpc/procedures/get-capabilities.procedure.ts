import { capabilitiesInput, capabilitiesOutput } from "../../schemas/capabilities.schemas";
import { publicProcedure } from "../trpc";

export const getCapabilities = publicProcedure
  .meta({
    openapi: {
      method: "GET",
      path: "/api/capabilities",
      protect: false,
      tags: ["Service"],
      summary: "What this server can do",
      description:
        "The workflows, the built-in instructions with example prompts, the objects found without a mask, the generative provider (if any) and the background model. No credentials needed. A prompt outside these is refused at submission with 400 `unsupported_instruction`.",
    },
  })
  .input(capabilitiesInput)
  .output(capabilitiesOutput)
  .query(({ ctx }) => ctx.services.capabilities.describe());
