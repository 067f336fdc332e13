import { okOutput } from "../../schemas/api-keys.schemas";
import { revokeConnectedAppInput } from "../../schemas/connected-apps.schemas";
import { accountProcedure } from "../trpc";

export const revokeConnectedApp = accountProcedure
  .meta({
    errors: ["not_found"],
    openapi: {
      method: "DELETE",
      path: "/api/connected-apps/{client_id}",
      tags: ["Connected apps"],
      summary: "Disconnect an app",
      description:
        "Takes back the app's approval and every token it holds for the account: its next request is refused, and it must ask the person again.",
    },
  })
  .input(revokeConnectedAppInput)
  .output(okOutput)
  .mutation(({ ctx, input }) => ctx.services.mcpOAuth.revokeConnectedApp(ctx.principal, input.client_id));
