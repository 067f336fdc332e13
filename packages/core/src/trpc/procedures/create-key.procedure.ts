import { createKeyInput, createKeyOutput } from "../../schemas/api-keys.schemas";
import { accountProcedure } from "../trpc";

export const createKey = accountProcedure
  .meta({
    errors: ["invalid_request", "email_unverified"],
    successStatus: 201,
    openapi: {
      method: "POST",
      path: "/api/keys",
      tags: ["API keys"],
      summary: "Create an API key",
      description: "Mints a `pk_` key. The secret is in this response only. Requires a verified email.",
    },
  })
  .input(createKeyInput)
  .output(createKeyOutput)
  .mutation(({ ctx, input }) => ctx.services.apiKeys.create(ctx.principal, input.name));
