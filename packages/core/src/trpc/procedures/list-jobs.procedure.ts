import { listJobsInput, listJobsOutput } from "../../schemas/jobs.schemas";
import { accountProcedure } from "../trpc";

export const listJobs = accountProcedure
  .meta({
    errors: ["invalid_request"],
    openapi: {
      method: "GET",
      path: "/api/jobs",
      tags: ["Jobs"],
      summary: "List jobs",
      description:
        "The account's jobs, newest first, a page at a time: pass `next_cursor` as `cursor` for the next page until it is null. Jobs created meanwhile never shift or repeat a page. The jobs of a batch are listed one by one like single jobs, each with its `batch_id` (a batch's jobs share one creation time; they come in reverse id order). A done job has a fresh signed `result_url`; a failed one its `error_code` and `error_message`. A cursor that was changed, or comes from another account, is 400 `invalid_request`.",
    },
  })
  .input(listJobsInput)
  .output(listJobsOutput)
  .query(({ ctx, input }) => ctx.services.jobs.list(ctx.principal, input));
