import { z } from "zod";
import { webhookSecretOutput } from "../../schemas/webhooks.schemas";
import { apiKeyProcedure } from "../trpc";

export const getWebhookSecret = apiKeyProcedure
  .meta({
    errors: [],
    openapi: {
      method: "GET",
      path: "/api/webhooks/secret",
      tags: ["Webhooks"],
      summary: "Get the webhook signing secret",
      description:
        "The hex key that signs this account's settlement callbacks (X-Retouch-Signature, HMAC-SHA256), and the same key in the Standard Webhooks form.",
    },
  })
  .input(z.object({}).optional())
  .output(webhookSecretOutput)
  .query(({ ctx }) => ctx.services.webhooks.secrets(ctx.principal.userId));
