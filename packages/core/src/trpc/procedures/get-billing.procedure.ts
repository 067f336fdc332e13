import { z } from "zod";
import { billingStateOutput } from "../../schemas/billing.schemas";
import { accountProcedure } from "../trpc";

export const getBilling = accountProcedure
  .meta({
    errors: ["payments_not_configured"],
    openapi: {
      method: "GET",
      path: "/api/billing",
      tags: ["Billing"],
      summary: "Plan, balance and what is on sale",
      description:
        "The plan and its limits, the subscription and its renewal, the balance and what is left of the plan's allowance, the credit packs and plans on sale with their prices, and the purchase history. A key or the session cookie; works before the email is verified. 409 `payments_not_configured` when this server takes no payments.",
    },
  })
  .input(z.object({}).optional())
  .output(billingStateOutput)
  .query(({ ctx }) => ctx.services.billing.state(ctx.principal));
