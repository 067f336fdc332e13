import { jobStatusOutput, resultInputSchema } from "../../schemas/process.schemas";
import { accountProcedure } from "../trpc";

/**
 * A playground job's status with the signed-in session (GET
 * /api/process/status takes a key only, as the spec says): the metadata once
 * terminal, and why it failed. The dashboard reads the result link from
 * `playground.result`.
 */
export const getPlaygroundJob = accountProcedure
  .meta({ errors: ["invalid_request", "not_found"] })
  .input(resultInputSchema)
  .output(jobStatusOutput)
  .query(({ ctx, input }) => ctx.services.jobs.jobStatus(ctx.principal, input.job_id));
