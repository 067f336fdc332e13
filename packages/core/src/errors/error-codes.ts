/**
 * The one table of error codes. Every error a client can see has one of these
 * codes, the HTTP status listed here, and a body `{ code, message }`.
 * Codes named by the spec keep the spec's spelling.
 */
export const ERROR_CODES = {
  invalid_request: { status: 400, message: "The request is invalid." },
  invalid_json: { status: 400, message: "The request body is not valid JSON." },
  batch_exceeds_plan_limit: {
    status: 400,
    message: "The batch is larger than your plan's concurrent-jobs limit; submit fewer images per call.",
  },
  reset_token_invalid: {
    status: 400,
    message: "This password reset link is invalid, expired or already used; request a new one.",
  },
  unsupported_instruction: {
    status: 400,
    message: "This server cannot carry out the prompt; GET /api/capabilities lists what it can do. Nothing was charged.",
  },
  unauthorized: {
    status: 401,
    message: "Authentication required: send `Authorization: Bearer pk_...` (or the session cookie where accepted).",
  },
  invalid_credentials: { status: 401, message: "The email or password is incorrect." },
  insufficient_credits: { status: 402, message: "Not enough credits for this request; top up before retrying." },
  email_unverified: {
    status: 403,
    message: "Verify your email address first: open the link we sent when you signed up.",
  },
  cross_site_request: {
    status: 403,
    message:
      "This request came from another site's page: the session cookie only works from this service's own pages. From another origin, call the API with an API key (Authorization: Bearer pk_...).",
  },
  signed_url_invalid: { status: 403, message: "This link is invalid or has expired; request a fresh result URL." },
  not_found: { status: 404, message: "The requested resource does not exist." },
  method_not_allowed: { status: 405, message: "This method is not allowed on this path." },
  request_timeout: {
    status: 408,
    message: "The request body stopped arriving; send it again without pausing.",
  },
  payload_too_large: { status: 413, message: "The request body is too large." },
  unsupported_media_type: { status: 415, message: "Send the body as JSON with `Content-Type: application/json`." },
  payments_not_configured: {
    status: 409,
    message:
      "This server does not take payments (RETOUCH_PAYMENTS is none): credits and plans are granted by its operator; ask them for more.",
  },
  already_subscribed: {
    status: 409,
    message: "This account already has a plan; change or cancel it in the customer portal (POST /api/billing/portal).",
  },
  email_already_registered: { status: 422, message: "An account with this email address already exists; sign in instead." },
  idempotency_key_reused: {
    status: 422,
    message: "This Idempotency-Key was already used with a different request body; use a new key.",
  },
  rate_limited: { status: 429, message: "Too many requests; retry after the time given in the Retry-After header." },
  too_many_in_flight: { status: 429, message: "Too many jobs are still processing; retry after some finish." },
  internal_error: { status: 500, message: "Something went wrong on our side. Please retry later." },
  job_failed: { status: 500, message: "Processing failed; the credit was refunded." },
  image_fetch_failed: {
    status: 502,
    message: "The host of image_url (or mask_url) failed to serve it; nothing was charged: retry with the same Idempotency-Key.",
  },
  upstream_error: { status: 502, message: "An upstream provider failed; retry with the same Idempotency-Key." },
  service_unavailable: { status: 503, message: "The service is shutting down or temporarily unavailable; retry shortly." },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === "string" && Object.hasOwn(ERROR_CODES, value);
}
