import { z } from "zod";
import { listKeysOutput } from "../../schemas/api-keys.schemas";
import { accountProcedure } from "../trpc";

export const listKeys = accountProcedure
  .meta({
    errors: [],
    openapi: {
      method: "GET",
      path: "/api/keys",
      tags: ["API keys"],
      summary: "List API keys",
      description: "Lists the account's keys, newest first, without their secrets.",
    },
  })
  .input(z.object({}).optional())
  .output(listKeysOutput)
  .query(async ({ ctx }) => ({ keys: await ctx.services.apiKeys.list(ctx.principal) }));
