import { type Kysely, sql } from "kysely";

/**
 * Failed jobs say why, and jobs keep which hosted model made them.
 * `error_code` is one of the job failure codes (errors/job-failure-codes.ts)
 * and `error_message` the sentence shown with it; `error_reason` stays the
 * internal account, for the logs only. `provider`, `provider_model` and
 * `upstream_latency_ms` are set when a hosted provider made the edit.
 *
 * Jobs that failed before this migration are given a code from their reason
 * as it was written then (engine reason, "timed out", "gave up", "internal"),
 * and no message: their text was never checked for clients, so readers show
 * the code's default sentence.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table jobs
      add column error_code text,
      add column error_message text,
      add column provider text,
      add column provider_model text,
      add column upstream_latency_ms integer;
    update jobs set error_code = case
        when error_reason like 'timed out%' or error_reason like 'cancelled:%' then 'job_timeout'
        when error_reason like 'gave up%' then 'worker_crashed'
        when split_part(error_reason, ':', 1) in (
          'invalid_request', 'unsupported_image', 'image_too_large', 'invalid_mask', 'nothing_detected',
          'target_not_detectable', 'target_too_large', 'unsupported_instruction', 'model_failed', 'model_unavailable'
        ) then split_part(error_reason, ':', 1)
        else 'internal_error'
      end
      where status = 'error' and rejection is null;
  `.execute(db);
}
