import { OUTPUT_FORMATS, outputFormatFor } from "@retouch/engine";
import { z } from "zod";
import { JOB_FAILURE_CODES, type JobFailureCode } from "../errors/job-failure-codes";

/** Longest prompt (and negative prompt) accepted, in characters. */
export const MAX_PROMPT_CHARS = 2000;
/** Most images in one batch; a plan's concurrency limit can be lower. */
export const MAX_BATCH_SIZE = 50;

const term = "[\\p{L}\\p{N}](?:[\\p{L}\\p{N}' -]*[\\p{L}\\p{N}])?";
/** `person . red car . dog`: terms of letters and digits (any script) separated by a period with a space on each side. */
export const DETECT_PATTERN = new RegExp(`^${term}(?: \\. ${term}){0,19}$`, "u");
/**
 * The same shape without Unicode property escapes, which many validators
 * (Python's `re`, hence openapi-spec-validator) reject: a term is anything
 * without a period that neither starts nor ends with a space. It is what the
 * published schemas show; DETECT_PATTERN, stricter, is what is enforced.
 */
const portableTerm = "[^\\s.](?:[^.]*[^\\s.])?";
export const PORTABLE_DETECT_PATTERN = new RegExp(`^${portableTerm}(?: \\. ${portableTerm}){0,19}$`);
const DETECT_ERROR = 'must be terms separated by " . " (for example "person . red car")';

const idPattern = (prefix: string) => new RegExp(`^${prefix}_[0-9a-z]{26}$`);
export const jobIdSchema = z.string().regex(idPattern("job"), { error: "must be a job id (job_...)" });
export const batchIdSchema = z.string().regex(idPattern("bat"), { error: "must be a batch id (bat_...)" });

export const imageFormatSchema = z.enum(OUTPUT_FORMATS);

/** Longest `image_url` / `mask_url` accepted, in characters. */
export const MAX_URL_CHARS = 2048;

const imageUrl = (what: string) =>
  z
    .string({ error: "must be a URL" })
    .min(1, { error: "must be a URL" })
    .max(MAX_URL_CHARS, { error: `must be at most ${MAX_URL_CHARS} characters` })
    .describe(
      `Instead of \`${what}\`: a public https: URL the service fetches at submission (a few redirects followed, the same size limit; the content must be a ${what === "mask" ? "PNG" : "JPEG, PNG or WebP"} whatever its Content-Type)`,
    );

/**
 * `image` or `image_url` (exactly one) and optionally `mask` or `mask_url`:
 * the "exactly one" rule is checked by the submissions service, because an
 * object with refinements can no longer be extended or made partial.
 */
export const processItemSchema = z.object({
  image: z
    .string({ error: "must be base64 text" })
    .min(1, { error: "must not be empty" })
    .optional()
    .describe(
      "Base64-encoded JPEG, PNG or WebP bytes (standard or URL-safe alphabet; a `data:image/...;base64,` prefix is accepted). Required unless `image_url` is given",
    ),
  image_url: imageUrl("image").optional(),
  prompt: z
    .string({ error: "is required" })
    .trim()
    .min(1, { error: "must not be empty" })
    .max(MAX_PROMPT_CHARS, { error: `must be at most ${MAX_PROMPT_CHARS} characters` })
    .describe("What to do, in plain language"),
  negative_prompt: z.string().max(MAX_PROMPT_CHARS).optional().describe("What to avoid"),
  // The formats named from the engine's outputFormatFor, the rule's one owner.
  format: imageFormatSchema
    .optional()
    .describe(
      `Output format; background removal always yields ${outputFormatFor("background_removal", undefined).toUpperCase()}; default ${outputFormatFor("generative_edit", undefined).toUpperCase()}`,
    ),
  quality: z
    .number({ error: "must be an integer from 1 to 100" })
    .int({ error: "must be an integer from 1 to 100" })
    .min(1, { error: "must be an integer from 1 to 100" })
    .max(100, { error: "must be an integer from 1 to 100" })
    .optional()
    .describe("Output quality for JPEG and WebP, 1 to 100"),
  mask: z.string().min(1).optional().describe("Base64-encoded PNG; white marks the area to edit; resized to the image"),
  mask_url: imageUrl("mask").optional(),
  detect: z
    .string()
    .regex(PORTABLE_DETECT_PATTERN, { error: DETECT_ERROR })
    .refine((value) => DETECT_PATTERN.test(value), { error: DETECT_ERROR })
    .optional()
    .describe('What to remove, as terms separated by " . "; routes to object removal'),
  webhook_url: z.string().max(2048).optional().describe("Public https: URL for the settlement callback"),
});

export type ProcessItemInput = z.infer<typeof processItemSchema>;

/**
 * One schema for both request shapes (a REST body must be one object): an
 * item's fields for a single image, or `images` for a batch. Batch items are
 * validated one by one, so that one bad image does not sink the others.
 */
export const processInputSchema = processItemSchema
  .partial()
  .extend({
    images: z
      .array(z.unknown())
      .min(1, { error: "must hold at least 1 image" })
      .max(MAX_BATCH_SIZE, { error: `must hold at most ${MAX_BATCH_SIZE} images` })
      .optional()
      .describe(`A batch: 1 to ${MAX_BATCH_SIZE} process request items, each with its own optional webhook_url`),
  })
  .superRefine((input, ctx) => {
    const singleFields = Object.keys(processItemSchema.shape).filter((key) => input[key as keyof typeof input] !== undefined);
    if (input.images !== undefined && singleFields.length > 0) {
      ctx.addIssue({ code: "custom", message: `send either one image or "images", not both (found ${singleFields.join(", ")})` });
    }
    if (input.images === undefined) {
      if (input.image === undefined && input.image_url === undefined)
        ctx.addIssue({
          code: "custom",
          path: ["image"],
          message: "is required: send image (base64) or image_url (or a batch in images)",
        });
      if (input.prompt === undefined) ctx.addIssue({ code: "custom", path: ["prompt"], message: "is required" });
    }
  });

export type ProcessInput = z.infer<typeof processInputSchema>;

export const singleSubmissionOutput = z.object({
  job_id: z.string(),
  credits_remaining: z.number().int(),
});

export const batchSubmissionOutput = z.object({
  batch_id: z.string(),
  jobs: z.array(
    z.object({
      job_id: z.string(),
      status: z.enum(["pending", "error"]),
      error: z.string().optional().describe("Why this item could not be started; it was not charged"),
      error_code: z
        .string()
        .optional()
        .describe(
          "The request error code a single-image submission would have answered (`invalid_request`, `unsupported_instruction`, ...)",
        ),
    }),
  ),
  credits_remaining: z.number().int(),
});

export const submissionOutput = z.union([singleSubmissionOutput, batchSubmissionOutput]);
export type SubmissionOutput = z.infer<typeof submissionOutput>;

/** The spec's metadata block, present once a job is terminal. */
export const metadataShape = {
  width: z.number().int().describe("Output width (the input's for a failed job; 0 if it could not be read)"),
  height: z.number().int().describe("Output height"),
  format: imageFormatSchema.describe("Output format"),
  credits_used: z.number().int().describe("Credits spent by the job (0 once refunded)"),
  credits_remaining: z.number().int().describe("Balance after the job"),
  processing_time_ms: z.number().int().nullable().describe("Milliseconds of processing"),
  provider: z.string().optional().describe("The hosted image provider that made the edit; absent when the built-in engine did"),
  model: z.string().optional().describe("The provider's model that made the edit (with `provider`)"),
  upstream_latency_ms: z
    .number()
    .int()
    .nullable()
    .optional()
    .describe("Milliseconds spent waiting on the provider, retries included (with `provider`)"),
};

/** Why a job failed, beside the spec's generic `error` (docs/errors.md lists the codes). */
export const failureShape = {
  error: z
    .string()
    .optional()
    .describe('Present when status is "error": the spec\'s generic "Processing failed" (a batch item that never started: why)'),
  error_code: z
    .enum(Object.keys(JOB_FAILURE_CODES) as [JobFailureCode, ...JobFailureCode[]])
    .optional()
    .describe('Present when status is "error": why, as a stable code from the job failure table'),
  error_message: z.string().optional().describe('Present when status is "error": why, in a sentence a person can act on'),
};

export const statusInputSchema = z
  .object({
    job_id: jobIdSchema.optional().describe("A job id (job_...)"),
    batch_id: batchIdSchema.optional().describe("A batch id (bat_...)"),
  })
  .superRefine((input, ctx) => {
    if ((input.job_id === undefined) === (input.batch_id === undefined)) {
      ctx.addIssue({ code: "custom", message: "send exactly one of job_id and batch_id" });
    }
  });

export const jobStatusOutput = z.object({
  status: z.enum(["pending", "done", "error"]),
  ...z.object(metadataShape).partial().shape,
  ...failureShape,
});

export const batchStatusOutput = z.object({
  batch_id: z.string(),
  jobs: z.array(z.object({ job_id: z.string(), status: z.enum(["pending", "done", "error"]), ...failureShape })),
});

export const statusOutput = z.union([jobStatusOutput, batchStatusOutput]);

export const resultInputSchema = z.object({ job_id: jobIdSchema.describe("A job id (job_...)") });

const doneResultShape = {
  job_id: z.string(),
  url: z.url().describe("Signed link to the image, valid for 1 hour"),
  expires_at: z.string().describe("When the link stops working (ISO 8601)"),
  ...metadataShape,
};

export const resultOutput = z.union([
  z.object(doneResultShape),
  z.object({
    job_id: z.string(),
    status: z.literal("pending").describe("Still processing: answered with HTTP 202"),
  }),
]);
export type ResultOutput = z.infer<typeof resultOutput>;

/**
 * Longest `wait_seconds` of the MCP `edit_image` tool. Most edits settle in a
 * few seconds; an agent's HTTP client and its host's tool-call timeout (often
 * 60 s or more) must outlast the call, and a longer job is better polled.
 */
export const MAX_WAIT_SECONDS = 60;

/**
 * Largest result an MCP tool result carries as image content (besides its
 * link), in bytes before base64. Enough for a typical edit up to about
 * 1 megapixel, which is what model hosts scale a picture down to before the
 * model sees it anyway; larger files would only make the tool result heavy
 * (a third more as base64, past some clients' limits on a result).
 */
export const MAX_INLINE_IMAGE_BYTES = 768 * 1024;

/** The MCP `edit_image` tool: one image, plus what agents cannot say with headers or would rather not poll for. */
export const editImageToolInput = processItemSchema.extend({
  idempotency_key: z
    .string()
    .min(1)
    .max(255)
    .optional()
    .describe("Optional: the same key on a retry returns the original job and charges nothing (like the Idempotency-Key header)"),
  wait_seconds: z
    .number({ error: `must be an integer from 0 to ${MAX_WAIT_SECONDS}` })
    .int({ error: `must be an integer from 0 to ${MAX_WAIT_SECONDS}` })
    .min(0, { error: `must be an integer from 0 to ${MAX_WAIT_SECONDS}` })
    .max(MAX_WAIT_SECONDS, { error: `must be an integer from 0 to ${MAX_WAIT_SECONDS}` })
    .optional()
    .describe(
      `Optional, 0 to ${MAX_WAIT_SECONDS} (default 0): wait up to this many seconds for the job to finish. If it finishes in time, this call returns the finished result as get_job_result does (status "done", url, metadata, and the image); if it fails, the job_failed error; otherwise status "pending" and the job_id to poll.`,
    ),
});

/** What `edit_image` answers: the job and the balance, and the finished result when `wait_seconds` saw the job settle. */
export const editImageToolOutput = z.object({
  ...z.object(doneResultShape).partial().shape,
  ...singleSubmissionOutput.shape,
  status: z
    .enum(["pending", "done"])
    .optional()
    .describe('Only with wait_seconds: "done" with the result\'s fields, or "pending" if the job was still running'),
});
