import { editImageToolInput, processInputSchema, submissionOutput } from "../../schemas/process.schemas";
import { apiKeyProcedure } from "../trpc";

export const submitProcess = apiKeyProcedure
  .meta({
    imageBody: true,
    errors: [
      "invalid_request",
      "unsupported_instruction",
      "batch_exceeds_plan_limit",
      "insufficient_credits",
      "email_unverified",
      "idempotency_key_reused",
      "rate_limited",
      "too_many_in_flight",
      "image_fetch_failed",
      "upstream_error",
    ],
    openapi: {
      method: "POST",
      path: "/api/process",
      tags: ["Jobs"],
      summary: "Submit an edit (one image or a batch)",
      description:
        "Starts one job per image and answers at once with the ids and the remaining balance. 1 credit per image, refunded if the job fails. Send `Idempotency-Key` to retry safely. Each image comes as base64 (`image`) or as a public https: URL the service fetches now (`image_url`); a fetch the host fails answers 502 `image_fetch_failed`, charges nothing, and can be retried with the same key. A prompt this server cannot carry out (GET /api/capabilities says what it can) answers 400 `unsupported_instruction` at once: no job, no charge.",
    },
    mcp: {
      name: "edit_image",
      description:
        "Edit an image from a plain-language instruction (remove the background, remove or erase an object, or adjust it: black and white, brighter, crop, rotate...). Starts an asynchronous job and returns its job_id at once; costs 1 credit, refunded if the job fails. Then poll get_job_status every 2-5 s and call get_job_result for the download link.",
      input: editImageToolInput,
    },
  })
  .input(processInputSchema)
  .output(submissionOutput)
  .mutation(({ ctx, input }) =>
    ctx.services.submissions.submit(ctx.principal, input, ctx.request.headers.get("idempotency-key") ?? undefined),
  );
