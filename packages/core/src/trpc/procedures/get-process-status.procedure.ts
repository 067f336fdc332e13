import { jobStatusOutput, resultInputSchema, statusInputSchema, statusOutput } from "../../schemas/process.schemas";
import { apiKeyProcedure } from "../trpc";

export const getProcessStatus = apiKeyProcedure
  .meta({
    errors: ["invalid_request", "not_found"],
    openapi: {
      method: "GET",
      path: "/api/process/status",
      tags: ["Jobs"],
      summary: "Status of a job or a batch",
      description:
        "Send exactly one of `job_id` and `batch_id`. A terminal job carries the metadata block; a failed one (alone or in a batch) also `error_code` and `error_message`, saying why. Poll every 2 to 5 seconds.",
    },
    mcp: {
      name: "get_job_status",
      title: "Check an edit's progress",
      description:
        'Step 2 of 3: the status of a job started by edit_image: "pending", "done" or "error", with width, height, format, credits used and remaining, and processing time once it is finished; a failed job also says why in error_code and error_message (its credit was refunded). Call it every 2-5 s until it is not "pending", then get_job_result for the image.',
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
      input: resultInputSchema,
      output: jobStatusOutput,
    },
  })
  .input(statusInputSchema)
  .output(statusOutput)
  .query(({ ctx, input }) =>
    input.batch_id !== undefined
      ? ctx.services.jobs.batchStatus(ctx.principal, input.batch_id)
      : ctx.services.jobs.jobStatus(ctx.principal, input.job_id as string),
  );
