import { checkoutInput, urlOutput } from "../../schemas/billing.schemas";
import { accountProcedure } from "../trpc";

export const createCheckout = accountProcedure
  .meta({
    errors: ["invalid_request", "already_subscribed", "payments_not_configured", "upstream_error"],
    openapi: {
      method: "POST",
      path: "/api/billing/checkout",
      tags: ["Billing"],
      summary: "Buy credits or a plan",
      description:
        'A Stripe Checkout page for a credit pack (`{"credits": 100}`) or a plan (`{"plan": "starter"}`): send the person\'s browser to `url`. Credits and plan apply once Stripe confirms the payment. A key or the session cookie; an unverified account may pay, and paying verifies its email. A plan already held is changed in the portal (409 `already_subscribed`).',
    },
  })
  .input(checkoutInput)
  .output(urlOutput)
  .mutation(({ ctx, input }) => ctx.services.billing.checkout(ctx.principal, input));
