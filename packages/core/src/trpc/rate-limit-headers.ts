import type { SubmissionRateLimit } from "../services/submissions.service";
import type { Context } from "./context";

/**
 * The headers a submission answers with, 200 and 429 alike, so a client
 * learns its limit before it hits it (as GitHub's and Stripe's APIs do). The
 * submission operations declare them (`meta.responseHeaders`): OpenAPI
 * documents them from there.
 */
export const RATE_LIMIT_HEADERS = {
  "X-RateLimit-Limit": {
    description: "Your plan's images per minute (a batch counts each image)",
    schema: { type: "integer", minimum: 1 },
  },
  "X-RateLimit-Remaining": {
    description: "Images that would still be accepted now, over the last 60 seconds",
    schema: { type: "integer", minimum: 0 },
  },
  "X-RateLimit-Reset": {
    description: "Seconds until one more image fits: 0 while X-RateLimit-Remaining is above 0",
    schema: { type: "integer", minimum: 0 },
  },
} as const;

export type RateLimitHeaderName = keyof typeof RATE_LIMIT_HEADERS;

/** The figures as header values. */
export function rateLimitHeaderValues(state: SubmissionRateLimit): Record<RateLimitHeaderName, string> {
  return {
    "X-RateLimit-Limit": String(state.limit),
    "X-RateLimit-Remaining": String(state.remaining),
    "X-RateLimit-Reset": String(state.resetSeconds),
  };
}

/**
 * Asks the transport to send the figures back (`ctx.responseHeaders`, on
 * success and on error). A later submission on the same request (a tRPC or
 * JSON-RPC batch) replaces the earlier figures: the newest are the truth.
 */
export function sendRateLimitHeaders(ctx: Pick<Context, "responseHeaders">): (state: SubmissionRateLimit) => void {
  return (state) => {
    const values = rateLimitHeaderValues(state);
    const kept = ctx.responseHeaders.filter(([name]) => !(name in values));
    ctx.responseHeaders.splice(0, ctx.responseHeaders.length, ...kept, ...Object.entries(values));
  };
}
