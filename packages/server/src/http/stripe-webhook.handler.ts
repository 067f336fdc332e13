import { isClientError, RetouchError, type Services, toRetouchError } from "@retouch/core";
import type { Handler } from "hono";
import type { HttpEnv } from "./request-context";
import { errorResponse, jsonResponse } from "./responses";

/** Where Stripe delivers its events (the endpoint to register in Stripe's dashboard). */
export const STRIPE_WEBHOOK_PATH = "/webhooks/stripe";
/**
 * Stripe's events are a few KiB (an invoice with many lines some tens):
 * 256 KiB leaves room, under the 1 MiB of other JSON bodies, from a public
 * route that anyone can post to.
 */
export const STRIPE_WEBHOOK_BODY_LIMIT_BYTES = 256 * 1024;

/**
 * POST /webhooks/stripe. The edge has already read the body within its limits
 * (size, time, the public budget); the signature is verified over that raw
 * text, never over a re-serialized parse. 200 once applied (or ignored);
 * 400 for a body Stripe did not sign, so that nothing is retried for it; 5xx
 * when applying failed, so that Stripe delivers it again.
 */
export function createStripeWebhookHandler(services: Services): Handler<HttpEnv> {
  return async (c) => {
    try {
      const text = c.var.body?.text;
      if (!text) throw new RetouchError("invalid_request", "The Stripe event's body is empty.");
      return jsonResponse(200, await services.billing.handleWebhook(text, c.req.header("stripe-signature")));
    } catch (error) {
      const domain = toRetouchError(error);
      // A forged or stale delivery is someone else's mistake (or an attack): a warning, without a stack.
      if (isClientError(domain))
        services.logger.warn({ requestId: c.var.requestId, code: domain.code }, `Stripe event refused: ${domain.message}`);
      else
        services.logger.error(
          { err: error, requestId: c.var.requestId },
          "could not apply a Stripe event; Stripe will deliver it again",
        );
      return errorResponse(domain);
    }
  };
}
