import { z } from "zod";
import { urlOutput } from "../../schemas/billing.schemas";
import { accountProcedure } from "../trpc";

export const createPortal = accountProcedure
  .meta({
    errors: ["payments_not_configured", "upstream_error"],
    openapi: {
      method: "POST",
      path: "/api/billing/portal",
      tags: ["Billing"],
      summary: "Open the customer portal",
      description:
        "A Stripe customer portal page where the person changes card, changes or cancels the plan, and reads invoices: send their browser to `url`. A key or the session cookie.",
    },
  })
  .input(z.object({}).optional())
  .output(urlOutput)
  .mutation(({ ctx }) => ctx.services.billing.portal(ctx.principal));
