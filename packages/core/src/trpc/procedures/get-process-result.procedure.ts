import { MAX_INLINE_IMAGE_BYTES, resultInputSchema, resultOutput } from "../../schemas/process.schemas";
import { apiKeyProcedure } from "../trpc";

export const getProcessResult = apiKeyProcedure
  .meta({
    errors: ["invalid_request", "not_found", "job_failed"],
    // 202 while the job is still processing.
    successStatus: (output) => (output && typeof output === "object" && "status" in output ? 202 : 200),
    openapi: {
      method: "GET",
      path: "/api/process/result",
      tags: ["Jobs"],
      summary: "Result of a job",
      description:
        "A signed `url` to the image (valid for 1 hour) and the metadata block. 202 while the job is still processing, 500 `job_failed` if it failed, with `error_code` and `error_message` saying why.",
    },
    mcp: {
      name: "get_job_result",
      title: "Get the edited image",
      description: `Step 3 of 3: the finished image of a job started by edit_image: a resource_link to a signed download url (plain HTTPS GET, no credentials, valid for 1 hour), the picture itself as image content when it is at most ${MAX_INLINE_IMAGE_BYTES / 1024} KiB (so you can look at it), and its metadata. Answers status "pending" while the job is still running (poll get_job_status first); a failed job is a tool error whose error_code and error_message say why (its credit was refunded).`,
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
  })
  .input(resultInputSchema)
  .output(resultOutput)
  .query(({ ctx, input }) => ctx.services.jobs.result(ctx.principal, input.job_id));
