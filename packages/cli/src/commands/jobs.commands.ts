import { mkdir, readdir, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import {
  type BatchStatus,
  type EditOptions,
  FIXED_OUTPUT_FORMATS,
  JobFailedError,
  OUTPUT_FORMATS,
  type OutputFormat,
  type Retouch,
  TimeoutError,
} from "@retouch/sdk";
import { glob } from "tinyglobby";
import { authedClient, type CommandContext, KEY_REQUIRED, requireArg, stringFlag, UsageError } from "../command-context";
import { Progress } from "../progress";

/** Some edits of a batch ended in error (their credits were refunded): exit code 6, like one failed job. */
export class EditsFailedError extends Error {}

const IMAGE_EXTENSIONS = new Set([".jpg", ".jpeg", ".png", ".webp"]);
const POLL_MS = 2000;

/** --timeout: a bare number is seconds here (`ms` would read it as milliseconds), so the CLI keeps its own reading. */
function parseDuration(text: string | undefined, fallbackMs: number): number {
  if (!text) return fallbackMs;
  const match = /^(\d+)(ms|s|m|h)?$/.exec(text);
  if (!match) throw new UsageError(`--timeout must be like 90s, 10m or 1h (got ${text})`);
  return Number(match[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(match[2] ?? "s") as "ms" | "s" | "m" | "h"];
}

/** One edit option as a flag of `retouch edit`. */
export interface EditFlag {
  /** The flag, without its dashes. */
  flag: string;
  /** How the help shows its value. */
  value: string;
  help: string;
  /** The flag's text as the option's value; throws a UsageError when it is not one. Default: the text itself. */
  parse?(text: string): EditOptions[keyof EditOptions];
}

const orList = (items: readonly string[]) => new Intl.ListFormat("en-GB", { type: "disjunction" }).format(items);
// "background removal always gives png", from the SDK's list (the engine's, at generation).
const fixedFormats = Object.entries(FIXED_OUTPUT_FORMATS)
  .map(([workflow, format]) => `${workflow.replaceAll("_", " ")} always gives ${format}`)
  .join("; ");

/**
 * Every option of the SDK's EditOptions (the router's process item) as a
 * flag: the one list the parser (cli.ts), the help and `editOptions` read.
 * Keyed by the options, so an option the service adds fails the type check
 * here until it has a flag.
 */
export const EDIT_FLAGS: { [K in keyof Required<EditOptions>]: EditFlag } = {
  format: {
    flag: "format",
    value: "<f>",
    help: `${orList(OUTPUT_FORMATS)}${fixedFormats ? ` (${fixedFormats})` : ""}`,
    parse: (text) => {
      if (!OUTPUT_FORMATS.includes(text as OutputFormat))
        throw new UsageError(`--format must be one of ${OUTPUT_FORMATS.join(", ")}`);
      return text as OutputFormat;
    },
  },
  quality: {
    flag: "quality",
    value: "<n>",
    help: "1 to 100, for jpeg and webp",
    parse: (text) => {
      const quality = Number(text);
      if (!Number.isInteger(quality) || quality < 1 || quality > 100)
        throw new UsageError("--quality must be a whole number from 1 to 100");
      return quality;
    },
  },
  negativePrompt: { flag: "negative-prompt", value: "<text>", help: "what the edit should avoid" },
  mask: { flag: "mask", value: "<png>", help: "white marks the area to edit (a file or an http(s) URL)" },
  detect: { flag: "detect", value: "<terms>", help: 'what to remove, e.g. "person . red car"' },
  webhookUrl: { flag: "webhook", value: "<url>", help: "also POST the outcome to this public https URL" },
};

function editOptions(ctx: CommandContext): EditOptions {
  const options: Record<string, unknown> = {};
  for (const [option, spec] of Object.entries(EDIT_FLAGS) as Array<[keyof EditOptions, EditFlag]>) {
    const text = stringFlag(ctx, spec.flag);
    if (text === undefined) continue;
    const value = spec.parse ? spec.parse(text) : text || undefined;
    if (value !== undefined) options[option] = value;
  }
  return options as EditOptions;
}

/**
 * `*`, `?` and tinyglobby's other patterns in the last path segment, e.g. `photos/*.jpg`; the folder is
 * taken literally (a `[` in its name is no pattern), dot files match as they did, and the matches come
 * sorted. tinyglobby is a devDependency that tsup bundles: the published CLI depends on the SDK alone.
 */
async function expandGlob(pattern: string): Promise<string[]> {
  const dir = path.dirname(pattern);
  const matches = await glob(path.basename(pattern), { cwd: dir, dot: true, expandDirectories: false });
  return matches.sort().map((entry) => path.join(dir, entry));
}

const isRemote = (arg: string) => /^https?:\/\//i.test(arg);

/** Files, folders (their images), globs and http(s) URLs (fetched by the service), in a stable order. */
export async function resolveInputs(args: string[]): Promise<string[]> {
  const files: string[] = [];
  for (const arg of args) {
    if (isRemote(arg)) {
      files.push(arg);
      continue;
    }
    if (/[*?]/.test(arg)) {
      files.push(...(await expandGlob(arg)).filter((file) => IMAGE_EXTENSIONS.has(path.extname(file).toLowerCase())));
      continue;
    }
    const info = await stat(arg).catch(() => undefined);
    if (!info) throw new UsageError(`no file or folder at ${arg}`);
    if (info.isDirectory()) {
      const entries = (await readdir(arg)).filter((entry) => IMAGE_EXTENSIONS.has(path.extname(entry).toLowerCase()));
      files.push(...entries.sort().map((entry) => path.join(arg, entry)));
    } else files.push(arg);
  }
  if (files.length === 0) throw new UsageError(`no JPEG, PNG or WebP images found in ${args.join(" ")}`);
  return [...new Set(files)];
}

/** `photo.retouched.png` next to a file; for a URL, named after its last path segment, in the current directory. */
function outputPath(input: string, format: string, output: string | undefined, batch: boolean): string {
  const source = isRemote(input) ? decodeURIComponent(new URL(input).pathname.split("/").pop() || "image") : input;
  const name = `${path.basename(source, path.extname(source))}.retouched.${format === "jpeg" ? "jpg" : format}`;
  if (output && batch) return path.join(output, name);
  return output ?? (isRemote(input) ? name : path.join(path.dirname(input), name));
}

/** Downloads a done job's image to `where` (a path, or a function of the result's format that names one). */
async function saveResult(client: Retouch, jobId: string, where: string | ((format: string) => string)) {
  const result = await client.result(jobId);
  if (!result) throw new Error(`job ${jobId} has no result yet`);
  const target = typeof where === "string" ? where : where(result.format);
  const bytes = await client.download(result.url);
  await mkdir(path.dirname(path.resolve(target)), { recursive: true });
  await writeFile(target, bytes);
  return { ...result, output: target, bytes: bytes.byteLength };
}

export async function edit(ctx: CommandContext): Promise<void> {
  if (ctx.args.length < 2) throw new UsageError('usage: retouch edit <image|folder|glob|url>... "<prompt>"');
  const prompt = ctx.args[ctx.args.length - 1] as string;
  const inputs = await resolveInputs(ctx.args.slice(0, -1));
  const options = editOptions(ctx);
  const client = authedClient(ctx, { keyRequired: KEY_REQUIRED });
  const timeoutMs = parseDuration(stringFlag(ctx, "timeout"), 600_000);
  const progress = new Progress(ctx.out.interactive);
  try {
    if (inputs.length === 1) await editOne(ctx, client, inputs[0] as string, prompt, options, timeoutMs, progress);
    else await editMany(ctx, client, inputs, prompt, options, timeoutMs, progress);
  } finally {
    progress.stop();
  }
}

async function editOne(
  ctx: CommandContext,
  client: Retouch,
  input: string,
  prompt: string,
  options: EditOptions,
  timeoutMs: number,
  progress: Progress,
) {
  progress.update(`submitting ${input}`);
  const submission = await client.submit(input, prompt, options);
  if (ctx.flags["no-wait"]) {
    progress.stop();
    ctx.out.result(
      submission,
      () =>
        `Submitted ${submission.job_id} (${submission.credits_remaining} credits left). Follow it with: retouch status ${submission.job_id}`,
    );
    return;
  }
  progress.update(`${submission.job_id} processing`);
  // The SDK's wait: the progress stream, or polling where the stream is refused or cut.
  const status = await client.waitForJob(submission.job_id, {
    intervalMs: POLL_MS,
    timeoutMs,
    onProgress: (state) => progress.update(`${submission.job_id} ${state.status === "pending" ? "processing" : state.status}`),
  });
  if (status.status === "error") {
    progress.stop();
    // The reason is printed once, as the error (stderr); --json also gets the whole status on stdout.
    ctx.out.result({ job_id: submission.job_id, ...status }, () => "");
    throw JobFailedError.fromStatus(submission.job_id, status);
  }
  const saved = await saveResult(
    client,
    submission.job_id,
    outputPath(input, status.format ?? "jpeg", stringFlag(ctx, "output"), false),
  );
  progress.stop();
  ctx.out.result(
    {
      job_id: saved.job_id,
      output: saved.output,
      format: saved.format,
      width: saved.width,
      height: saved.height,
      bytes: saved.bytes,
      credits_remaining: saved.credits_remaining,
      processing_time_ms: saved.processing_time_ms,
    },
    () =>
      `Saved ${saved.output} (${saved.format}, ${saved.width}x${saved.height}) in ${progress.elapsed()}; ${saved.credits_remaining} credits left.`,
  );
}

async function editMany(
  ctx: CommandContext,
  client: Retouch,
  inputs: string[],
  prompt: string,
  options: EditOptions,
  timeoutMs: number,
  progress: Progress,
) {
  const batchSize = Number(stringFlag(ctx, "batch-size") ?? 3);
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 50)
    throw new UsageError("--batch-size must be a whole number from 1 to 50");
  const output = stringFlag(ctx, "output");
  const results: Array<Record<string, unknown>> = [];
  let failed = 0;
  const deadline = Date.now() + timeoutMs;
  // Batches no larger than the plan runs at once (default 3, the free plan's); the next starts when one ends.
  for (let start = 0; start < inputs.length; start += batchSize) {
    const chunk = inputs.slice(start, start + batchSize);
    progress.update(`${progress.bar(results.length, inputs.length, failed)} submitting`);
    const batch = await client.submitBatch(chunk.map((image) => ({ image, prompt, ...options })));
    const pending = new Map(batch.jobs.map((job, index) => [job.job_id, chunk[index] as string]));
    for (const [index, job] of batch.jobs.entries()) {
      if (job.status === "error") {
        failed++;
        pending.delete(job.job_id);
        results.push({ input: chunk[index], job_id: job.job_id, status: "error", error: job.error });
        progress.log(`✗ ${chunk[index]}: ${job.error}`, !ctx.out.json && !ctx.out.quiet);
      }
    }
    if (pending.size === 0) continue;
    progress.update(`${progress.bar(results.length, inputs.length, failed)} processing`);
    // Each job is saved as soon as the batch's wait (the SDK's one, on the progress stream) reports it terminal.
    let saving: Promise<void> = Promise.resolve();
    let savingFailed: unknown;
    const settle = async (job: BatchStatus["jobs"][number], input: string) => {
      if (job.status === "error") {
        failed++;
        const failure = JobFailedError.fromStatus(job.job_id, job);
        results.push({
          input,
          job_id: job.job_id,
          status: "error",
          error: job.error ?? "Processing failed",
          error_code: failure.errorCode,
          error_message: failure.errorMessage,
        });
        progress.log(`✗ ${input}: ${failure.errorMessage} (${failure.errorCode}; refunded)`, !ctx.out.json && !ctx.out.quiet);
      } else {
        const saved = await saveResult(client, job.job_id, (format) => outputPath(input, format, output, true));
        results.push({
          input,
          job_id: job.job_id,
          status: "done",
          output: saved.output,
          format: saved.format,
          width: saved.width,
          height: saved.height,
        });
        progress.log(`✓ ${input} → ${saved.output}`, !ctx.out.json && !ctx.out.quiet);
      }
      progress.update(`${progress.bar(results.length, inputs.length, failed)} processing`);
    };
    const onProgress = (state: BatchStatus) => {
      for (const job of state.jobs) {
        const input = pending.get(job.job_id);
        if (!input || job.status === "pending") continue;
        pending.delete(job.job_id);
        // One at a time, in the order they settled; the first failure is thrown once the wait is over.
        saving = saving
          .then(() => settle(job, input))
          .catch((error: unknown) => {
            savingFailed ??= error;
          });
      }
    };
    try {
      onProgress(
        await client.waitForBatch(batch.batch_id, {
          intervalMs: POLL_MS,
          timeoutMs: Math.max(1, deadline - Date.now()),
          onProgress,
        }),
      );
    } catch (error) {
      if (error instanceof TimeoutError)
        throw new UsageError(`gave up waiting after ${timeoutMs} ms; follow the jobs with: retouch status <job_id>`);
      throw error;
    } finally {
      await saving;
    }
    if (savingFailed) throw savingFailed;
  }
  progress.stop();
  ctx.out.result(
    { results, done: results.length - failed, failed },
    () =>
      `${results.length - failed} of ${inputs.length} images edited in ${progress.elapsed()}${failed ? `; ${failed} failed (refunded)` : ""}.`,
  );
  if (failed > 0) throw new EditsFailedError(`${failed} of ${inputs.length} edits failed; their credits were refunded`);
}

export async function status(ctx: CommandContext): Promise<void> {
  const id = requireArg(ctx, 0, "job id (retouch status <job_...>)");
  const client = authedClient(ctx, { keyRequired: KEY_REQUIRED });
  if (id.startsWith("bat_")) {
    const batch = await client.batchStatus(id);
    ctx.out.result(batch, () => batch.jobs.map((job) => `${job.job_id}  ${job.status}`).join("\n"));
    return;
  }
  const job = await client.status(id);
  ctx.out.result({ job_id: id, ...job }, () =>
    job.status === "pending"
      ? `${id} is still processing.`
      : job.status === "done"
        ? `${id} is done: ${job.format}, ${job.width}x${job.height}, ${job.processing_time_ms} ms; ${job.credits_remaining} credits left. Download it with: retouch result ${id} -o <file>`
        : JobFailedError.fromStatus(id, job).message,
  );
}

export async function result(ctx: CommandContext): Promise<void> {
  const id = requireArg(ctx, 0, "job id (retouch result <job_...>)");
  const client = authedClient(ctx, { keyRequired: KEY_REQUIRED });
  const output = stringFlag(ctx, "output");
  const found = await client.result(id);
  if (!found) {
    ctx.out.result({ job_id: id, status: "pending" }, () => `${id} is still processing; try again in a few seconds.`);
    return;
  }
  if (!output) {
    ctx.out.result(found, () => `${found.url}\n(valid until ${found.expires_at})`);
    return;
  }
  const saved = await saveResult(client, id, output);
  ctx.out.result(
    { job_id: id, output: saved.output, format: saved.format, width: saved.width, height: saved.height },
    () => `Saved ${saved.output} (${saved.format}, ${saved.width}x${saved.height}).`,
  );
}
