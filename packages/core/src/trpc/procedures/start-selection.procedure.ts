import { startSelectionInput, startSelectionOutput } from "../../schemas/selections.schemas";
import { accountProcedure } from "../trpc";

/**
 * Click-to-select, step 1: encodes the picture once and keeps it a few
 * minutes. Free and rate limited per account; the signed-in session only
 * (the service refuses an API key).
 */
export const startSelection = accountProcedure
  // The picture is in the body: the edge allows RETOUCH_MAX_REQUEST_BYTES, once the session is checked.
  .meta({
    imageBody: true,
    errors: ["invalid_request", "payload_too_large", "unsupported_instruction", "rate_limited", "service_unavailable"],
  })
  .input(startSelectionInput)
  .output(startSelectionOutput)
  .mutation(({ ctx, input }) => ctx.services.selections.start(ctx.principal, input));
