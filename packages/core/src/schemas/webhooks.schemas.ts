import { z } from "zod";

export const webhookSecretOutput = z.object({
  secret: z.string().describe("Hex key of the X-Retouch-Signature HMAC-SHA256 on this account's callbacks"),
  standard_webhooks_secret: z
    .string()
    .describe("The same key as Standard Webhooks verifiers take it (`whsec_` + base64), for the webhook-signature header"),
});

export const deliveriesInput = z.object({
  // A query parameter: trpc-to-openapi coerces it from the query string.
  limit: z.number().int().min(1).max(100).default(20).describe("How many of the most recent deliveries (1 to 100)"),
});

export const deliveriesOutput = z.object({
  deliveries: z.array(
    z.object({
      id: z.string().describe("Delivery id; also the Standard Webhooks `webhook-id`, the same at every attempt"),
      job_id: z.string(),
      url: z.string(),
      status: z.enum(["pending", "delivered", "failed"]),
      attempts: z.number().int(),
      last_status_code: z.number().int().nullable().describe("HTTP status of the last answer; null if there was none"),
      last_error: z.string().nullable().describe("Why the last attempt failed"),
      last_attempt_at: z.string().nullable(),
      next_attempt_at: z.string().nullable().describe("When the next retry is due, while pending"),
      created_at: z.string(),
      delivered_at: z.string().nullable(),
    }),
  ),
});
