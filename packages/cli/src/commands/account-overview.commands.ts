import type { JobFilters, JobListing } from "@retouch/sdk";
import { authedClient, type CommandContext, stringFlag, UsageError } from "../command-context";
import { table } from "../output";

/** `retouch whoami`: who the stored credential belongs to, the plan, balance, limits and usage. */
export async function whoami(ctx: CommandContext): Promise<void> {
  const account = await authedClient(ctx).account();
  ctx.out.result(account, () =>
    [
      `${account.name} <${account.email}>${account.email_verified ? "" : " (email not verified yet: open the link we sent)"}`,
      `Plan:     ${account.plan} (${account.limits.per_minute} images a minute, ${account.limits.concurrent} at once)`,
      `Credits:  ${account.credits_remaining}`,
      `Usage:    ${account.usage.this_month} ${account.usage.this_month === 1 ? "job" : "jobs"} charged this month (UTC)`,
      `Server:   ${ctx.baseUrl}`,
    ].join("\n"),
  );
}

const PROMPT_COLUMN = 40;

function outcome(job: JobListing): string {
  if (job.status === "done" && job.metadata) return `${job.metadata.format} ${job.metadata.width}x${job.metadata.height}`;
  if (job.status === "error") return `${job.error_code}: ${job.error_message}`;
  return "";
}

function jobsTable(jobs: JobListing[]): string {
  const shorten = (text: string) =>
    text.length > PROMPT_COLUMN ? `${text.slice(0, PROMPT_COLUMN - 3).replace(/\s+/g, " ")}...` : text.replace(/\s+/g, " ");
  return table([
    ["ID", "STATUS", "CREATED", "PROMPT", "RESULT"],
    ...jobs.map((job) => [job.id, job.status, job.created_at, shorten(job.prompt), outcome(job)]),
  ]);
}

/** The listing's filter flags, in the order `retouch jobs --help` gives them. */
const FILTER_FLAGS = ["status", "workflow", "from", "to"] as const;

/**
 * `--status`, `--workflow`, `--from`, `--to`, passed to the service as given:
 * it checks them (a 400 naming the field), so the CLI keeps no second copy of
 * the statuses, workflows or date rules.
 */
function jobFilters(ctx: CommandContext): JobFilters {
  const filters: Record<string, string> = {};
  for (const flag of FILTER_FLAGS) {
    const value = stringFlag(ctx, flag);
    if (value !== undefined) filters[flag] = value;
  }
  return filters as JobFilters;
}

/** The same filters as flags again, for the hint that shows the rest of the list. */
function filterArgs(filters: JobFilters): string {
  return FILTER_FLAGS.flatMap((flag) => (filters[flag] === undefined ? [] : [` --${flag} ${filters[flag]}`])).join("");
}

/**
 * `retouch jobs [--limit N] [--all] [--status S] [--workflow W] [--from DAY] [--to DAY]`:
 * your recent jobs, newest first (a page, or every one with --all), narrowed by
 * the service's filters (SDK JobFilters; days are UTC, both ends included).
 */
export async function listJobs(ctx: CommandContext): Promise<void> {
  const limitText = stringFlag(ctx, "limit");
  if (limitText !== undefined && !/^\d+$/.test(limitText)) throw new UsageError("--limit must be a whole number (1 to 100)");
  const limit = limitText === undefined ? undefined : Number(limitText);
  const filters = jobFilters(ctx);
  const none = Object.keys(filters).length > 0 ? "No jobs match these filters." : "No jobs yet.";
  const client = authedClient(ctx);
  if (ctx.flags.all) {
    const jobs: JobListing[] = [];
    for await (const job of client.allJobs({ ...filters, ...(limit !== undefined ? { pageSize: limit } : {}) })) jobs.push(job);
    ctx.out.result({ jobs }, () => (jobs.length === 0 ? none : jobsTable(jobs)));
    return;
  }
  const page = await client.jobs({ ...filters, ...(limit !== undefined ? { limit } : {}) });
  ctx.out.result(page, () => {
    if (page.jobs.length === 0) return none;
    const more = page.next_cursor ? `\n\nOlder jobs: retouch jobs --all${filterArgs(filters)}` : "";
    return `${jobsTable(page.jobs)}${more}`;
  });
}
