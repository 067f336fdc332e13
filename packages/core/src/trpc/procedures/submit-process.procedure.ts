import { z } from "zod";
import {
  editImageToolInput,
  editImageToolOutput,
  MAX_WAIT_SECONDS,
  processInputSchema,
  processItemSchema,
  submissionOutput,
} from "../../schemas/process.schemas";
import { RATE_LIMIT_HEADERS, sendRateLimitHeaders } from "../rate-limit-headers";
import { apiKeyProcedure } from "../trpc";

export const submitProcess = apiKeyProcedure
  .meta({
    imageBody: true,
    responseHeaders: RATE_LIMIT_HEADERS,
    // curl -F image=@photo.jpg -F prompt=...: one image; a batch stays JSON.
    multipart: {
      files: {
        image: { required: true, alternative: "image_url", description: "The picture: JPEG, PNG or WebP" },
        mask: { required: false, description: "A PNG; white marks the area to edit" },
      },
      text: Object.keys(processItemSchema.shape).filter((name) => name !== "image" && name !== "mask"),
      numbers: ["quality"],
    },
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
      // Read by the submission service from the request's headers; declared here for OpenAPI.
      requestHeaders: z.object({
        "Idempotency-Key": z
          .string()
          .min(1)
          .max(255)
          .optional()
          .meta({
            param: {
              required: false,
              description:
                "A retry with the same key and body returns the original answer and charges nothing (keys are kept 48 hours). A UUID is ideal.",
            },
          }),
      }),
      description:
        "Starts one job per image and answers at once with the ids and the remaining balance. 1 credit per image, refunded if the job fails. Send `Idempotency-Key` to retry safely. Each image comes as base64 (`image`) or as a public https: URL the service fetches now (`image_url`); one image may also come as `multipart/form-data` with the picture as a file part (`curl -F image=@photo.jpg -F prompt=...`); a fetch the host fails answers 502 `image_fetch_failed`, charges nothing, and can be retried with the same key. A prompt this server cannot carry out (GET /api/capabilities says what it can) answers 400 `unsupported_instruction` at once: no job, no charge. Every answer, 200 and 429 alike, says where you stand in `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset`.",
    },
    mcp: {
      name: "edit_image",
      title: "Edit an image",
      description: `Step 1 of 3: edit an image from a plain-language instruction (remove the background, remove or erase an object, or adjust it: black and white, brighter, crop, rotate...). Send the picture as image_url (a public https: URL the service fetches: best for a real photo) or as image (base64). Starts an asynchronous job and returns its job_id at once; costs 1 credit, refunded if the job fails. Then call get_job_status every 2-5 s until it is not "pending", and get_job_result for the image. Or pass wait_seconds (up to ${MAX_WAIT_SECONDS}) to get the finished result from this call when the job settles in time. Pass an idempotency_key to retry safely: the same key never charges twice.`,
      // Idempotent with an idempotency_key (a retry returns the same job, uncharged); open world: it may fetch image_url.
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
      input: editImageToolInput,
      output: editImageToolOutput,
    },
  })
  .input(processInputSchema)
  .output(submissionOutput)
  .mutation(({ ctx, input }) =>
    ctx.services.submissions.submit(
      ctx.principal,
      input,
      ctx.request.headers.get("idempotency-key") ?? undefined,
      sendRateLimitHeaders(ctx),
    ),
  );
