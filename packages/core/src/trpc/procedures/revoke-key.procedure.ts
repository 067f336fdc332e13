import { okOutput, revokeKeyInput } from "../../schemas/api-keys.schemas";
import { accountProcedure } from "../trpc";

export const revokeKey = accountProcedure
  .meta({
    errors: ["not_found"],
    openapi: {
      method: "DELETE",
      path: "/api/keys/{id}",
      tags: ["API keys"],
      summary: "Revoke an API key",
      description: "Permanently revokes the key; it is refused from the next request on.",
    },
  })
  .input(revokeKeyInput)
  .output(okOutput)
  .mutation(({ ctx, input }) => ctx.services.apiKeys.revoke(ctx.principal, input.id));
