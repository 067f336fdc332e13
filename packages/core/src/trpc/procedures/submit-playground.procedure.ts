import { processItemSchema, singleSubmissionOutput } from "../../schemas/process.schemas";
import { RATE_LIMIT_HEADERS, sendRateLimitHeaders } from "../rate-limit-headers";
import { accountProcedure } from "../trpc";

/**
 * The dashboard's playground: one edit submitted with the signed-in session,
 * so the page needs no API key (POST /api/process stays bearer-only, as the
 * spec says). Not on REST or MCP. The edge's same-origin check refuses it from
 * another site's page (403 `cross_site_request`), as every cookie mutation.
 * Charged, limited and refunded exactly as POST /api/process.
 */
export const submitPlayground = accountProcedure
  // The picture is in the body: the edge allows RETOUCH_MAX_REQUEST_BYTES, once the session is checked.
  .meta({
    imageBody: true,
    responseHeaders: RATE_LIMIT_HEADERS,
    errors: [
      "invalid_request",
      "unsupported_instruction",
      "insufficient_credits",
      "email_unverified",
      "rate_limited",
      "too_many_in_flight",
    ],
  })
  // The picture as base64, never a URL for the service to fetch, and no webhook: the page polls.
  .input(
    processItemSchema
      .pick({ image: true, prompt: true, negative_prompt: true, format: true, quality: true, mask: true, detect: true })
      .required({ image: true }),
  )
  .output(singleSubmissionOutput)
  .mutation(async ({ ctx, input }) => {
    const submitted = await ctx.services.submissions.submit(ctx.principal, input, undefined, sendRateLimitHeaders(ctx));
    // A single image always answers the single shape; the union is the REST operation's, for batches.
    if (!("job_id" in submitted)) throw new Error("a single submission answered a batch");
    return submitted;
  });
