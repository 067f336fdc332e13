import { z } from "zod";
import { webhookSecretOutput } from "../../schemas/api-keys.schemas";
import { apiKeyProcedure } from "../trpc";

export const getWebhookSecret = apiKeyProcedure
  .meta({
    openapi: {
      method: "GET",
      path: "/api/webhooks/secret",
      tags: ["Webhooks"],
      summary: "Get the webhook signing secret",
      description: "The hex key that signs this account's settlement callbacks (HMAC-SHA256).",
    },
  })
  .input(z.object({}).optional())
  .output(webhookSecretOutput)
  .query(async ({ ctx }) => ({ secret: await ctx.services.profiles.webhookSecret(ctx.principal.userId) }));
