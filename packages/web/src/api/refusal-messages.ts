import type { ErrorCode } from "@retouch/sdk";
import { errorCode, errorMessage } from "./errors";

/**
 * What the dashboard says when the service refuses a request, for a person
 * rather than a program: one or two sentences with what would work instead.
 * The service's own messages are written for API clients (they name headers
 * and endpoints, and run long); they stay in the API. `{retry}` is replaced by
 * the wait the service asked for.
 */
export const REFUSAL_MESSAGES: Record<ErrorCode, string> = {
  invalid_request: "Something in the request was not right. Check the picture and the prompt, then try again.",
  invalid_json: "The page sent something the service could not read. Reload the page and try again.",
  reset_token_invalid: "This password reset link has expired or was already used. Ask for a new one.",
  invalid_credentials: "The email or password is not right. Check them, or reset your password.",
  signed_url_invalid: "This download link has expired. Open the job again for a fresh link.",
  not_found: "That is no longer here. Reload the page to see what is.",
  method_not_allowed: "The page asked for something the service does not do. Reload the page and try again.",
  request_timeout: "The picture took too long to arrive. Check your connection and try again.",
  unsupported_media_type: "The page sent something the service could not read. Reload the page and try again.",
  email_already_registered: "An account with this email already exists. Sign in instead.",
  idempotency_key_reused: "This edit was already sent with other settings. Run it again.",
  job_failed: "The edit did not work, and its credit was refunded. Try another picture or prompt.",
  unsupported_instruction:
    "This server can’t do that edit. Try one of the suggestions under the prompt, such as “remove the background” or “make it black and white”.",
  batch_exceeds_plan_limit: "Your plan runs fewer pictures at a time. Send fewer at once.",
  unauthorized: "You are signed out. Sign in again, then try once more.",
  insufficient_credits: "You have no credits left. Buy more on the Billing page, or wait for your plan’s next allowance.",
  email_unverified: "Verify your email address first: open the link we sent you, then try again.",
  cross_site_request: "This page could not send the request. Reload the page and try again.",
  payload_too_large: "This picture is too large. Choose a smaller one, or make it smaller first.",
  rate_limited: "Too many edits in a short time. Wait {retry} and try again.",
  too_many_in_flight: "Several of your edits are still running. Wait for one to finish, then try again.",
  image_fetch_failed: "The picture could not be fetched. Choose a file from your computer instead.",
  upstream_error: "The image provider did not answer. Try again in a moment; nothing was charged.",
  service_unavailable: "The service is busy or restarting. Try again in {retry}.",
  internal_error: "Something went wrong on our side. Try again in a moment.",
  payments_not_configured: "This server does not sell credits or plans. Ask the people who run it for more credits.",
  already_subscribed: "You already have a plan. Change or cancel it with “Manage your plan” on the Billing page.",
};

function retryText(error: unknown): string {
  const seconds = (error as { retryAfterSeconds?: number }).retryAfterSeconds ?? dataRetry(error);
  if (!seconds) return "a minute";
  return seconds < 90 ? `${seconds} seconds` : `${Math.ceil(seconds / 60)} minutes`;
}

function dataRetry(error: unknown): number | undefined {
  const data = (error as { data?: { retryAfterSeconds?: number } }).data;
  return data?.retryAfterSeconds;
}

/** A refusal in a person's words when its code has them; otherwise what `errorMessage` says (a network failure, say). */
export function refusalMessage(error: unknown): string {
  const code = errorCode(error) as ErrorCode | undefined;
  const text = code && Object.hasOwn(REFUSAL_MESSAGES, code) ? REFUSAL_MESSAGES[code] : undefined;
  return text ? text.replace("{retry}", retryText(error)) : errorMessage(error);
}
