import { refineSelectionInput, refineSelectionOutput } from "../../schemas/selections.schemas";
import { accountProcedure } from "../trpc";

/**
 * Click-to-select, each click: every point so far (the client keeps them) in,
 * the object's mask out, from the segmenter's decoder alone. Free and rate
 * limited per account; the signed-in session only.
 */
export const refineSelection = accountProcedure
  .meta({ errors: ["invalid_request", "not_found", "unsupported_instruction", "rate_limited", "service_unavailable"] })
  .input(refineSelectionInput)
  .output(refineSelectionOutput)
  .mutation(({ ctx, input }) => ctx.services.selections.refine(ctx.principal, input));
