import { resultInputSchema, resultOutput } from "../../schemas/process.schemas";
import { accountProcedure } from "../trpc";

/** A playground job's signed result link with the signed-in session (GET /api/process/result takes a key only). */
export const getPlaygroundResult = accountProcedure
  .meta({ errors: ["invalid_request", "not_found", "job_failed"] })
  .input(resultInputSchema)
  .output(resultOutput)
  .query(({ ctx, input }) => ctx.services.jobs.result(ctx.principal, input.job_id));
