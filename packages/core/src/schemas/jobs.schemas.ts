import { WORKFLOWS } from "@retouch/engine";
import { z } from "zod";
import { failureShape, metadataShape } from "./process.schemas";

export const JOB_STATUSES = ["pending", "done", "error"] as const;
/** The workflows a job can run (the `jobs.workflow` column): the engine's. */
export const JOB_WORKFLOWS = WORKFLOWS;

export const JOBS_PAGE_DEFAULT = 20;
export const JOBS_PAGE_MAX = 100;

export const listJobsInput = z.object({
  // Query parameters: trpc-to-openapi coerces `limit` from the query string.
  limit: z
    .number({ error: `must be a whole number from 1 to ${JOBS_PAGE_MAX}` })
    .int({ error: `must be a whole number from 1 to ${JOBS_PAGE_MAX}` })
    .min(1, { error: `must be a whole number from 1 to ${JOBS_PAGE_MAX}` })
    .max(JOBS_PAGE_MAX, { error: `must be a whole number from 1 to ${JOBS_PAGE_MAX}` })
    .default(JOBS_PAGE_DEFAULT)
    .describe(`Jobs per page, 1 to ${JOBS_PAGE_MAX} (default ${JOBS_PAGE_DEFAULT})`),
  cursor: z
    .string()
    .min(1, { error: "must not be empty: leave it out to start from the newest job" })
    .max(1024)
    .describe("`next_cursor` of the previous page, exactly as received; leave it out for the newest jobs")
    .optional(),
  // Filters: each narrows the listing; the cursor resumes the same filtered listing.
  status: z.enum(JOB_STATUSES).describe("Only jobs in this state: `pending`, `done` or `error`").optional(),
  workflow: z.enum(JOB_WORKFLOWS).describe("Only jobs of this workflow (GET /api/capabilities lists them)").optional(),
  from: z.iso
    .date({ error: "must be a date written YYYY-MM-DD" })
    .describe("Only jobs submitted on or after this day (YYYY-MM-DD, UTC)")
    .optional(),
  to: z.iso
    .date({ error: "must be a date written YYYY-MM-DD" })
    .describe("Only jobs submitted on or before this day (YYYY-MM-DD, UTC)")
    .optional(),
});

export const jobListingSchema = z.object({
  id: z.string().describe("Job id (`job_...`)"),
  batch_id: z.string().nullable().describe("The batch it was submitted in (`bat_...`), or null for a single submission"),
  status: z.enum(["pending", "done", "error"]),
  prompt: z.string(),
  created_at: z.string().describe("When it was submitted (ISO 8601)"),
  metadata: z
    .object(metadataShape)
    .nullable()
    .describe("The spec's metadata block, as the status endpoint gives it once the job is terminal; null while pending"),
  error_code: failureShape.error_code.unwrap().nullable().describe("Why it failed (a job failure code); null unless failed"),
  error_message: z.string().nullable().describe("Why it failed, in a sentence a person can act on; null unless failed"),
  result_url: z
    .url()
    .nullable()
    .describe(
      "A done job's signed result link (valid for 1 hour, like `GET /api/process/result`'s `url`); null while pending, when failed, or once the result has expired",
    ),
});

export const listJobsOutput = z.object({
  jobs: z.array(jobListingSchema),
  next_cursor: z.string().nullable().describe("Pass it as `cursor` for the next (older) page; null on the last page"),
});

export type JobListing = z.infer<typeof jobListingSchema>;
export type ListJobsInput = z.infer<typeof listJobsInput>;
/** The listing's filters, as the store applies them. */
export type JobFilters = Pick<ListJobsInput, "status" | "workflow" | "from" | "to">;

/** Days the usage chart covers, today (UTC) included. */
export const USAGE_DAYS = 30;

export const usageOutput = z.object({
  workflows: z.array(z.enum(JOB_WORKFLOWS)).describe("Every workflow, in the order the days' counts list them"),
  days: z
    .array(
      z.object({
        date: z.iso.date().describe("The day (YYYY-MM-DD, UTC)"),
        total: z.number().int(),
        by_workflow: z.record(z.enum(JOB_WORKFLOWS), z.number().int()).describe("Images made that day, by workflow"),
      }),
    )
    .describe(`Images made (done jobs) per day over the last ${USAGE_DAYS} days, oldest first, days without any included`),
});

export type UsageOutput = z.infer<typeof usageOutput>;
