import { deliveriesInput, deliveriesOutput } from "../../schemas/webhooks.schemas";
import { accountProcedure } from "../trpc";

export const listWebhookDeliveries = accountProcedure
  .meta({
    errors: ["invalid_request"],
    openapi: {
      method: "GET",
      path: "/api/webhooks/deliveries",
      tags: ["Webhooks"],
      summary: "Recent webhook deliveries",
      description:
        "The account's most recent settlement callbacks, newest first, with the outcome of their last attempt and the next retry.",
    },
  })
  .input(deliveriesInput)
  .output(deliveriesOutput)
  .query(async ({ ctx, input }) => ({ deliveries: await ctx.services.webhooks.list(ctx.principal, input.limit) }));
