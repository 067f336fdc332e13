import { z } from "zod";
import { listConnectedAppsOutput } from "../../schemas/connected-apps.schemas";
import { accountProcedure } from "../trpc";

export const listConnectedApps = accountProcedure
  .meta({
    errors: [],
    openapi: {
      method: "GET",
      path: "/api/connected-apps",
      tags: ["Connected apps"],
      summary: "List connected apps",
      description: "The MCP apps the account has approved through OAuth (the consent page), most recently approved first.",
    },
  })
  .input(z.object({}).optional())
  .output(listConnectedAppsOutput)
  .query(async ({ ctx }) => ({ apps: await ctx.services.mcpOAuth.listConnectedApps(ctx.principal) }));
