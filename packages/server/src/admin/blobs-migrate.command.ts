import { access } from "node:fs/promises";
import path from "node:path";
import {
  type BlobMigrationEvent,
  type BlobMigrationSummary,
  type Config,
  isBlobStoreError,
  MAX_MIGRATION_FAILURES,
  migrateBlobs,
  openMigrationTarget,
} from "@retouch/core";
import { type CommandOutput, formatBytes } from "./models.command";

export const BLOBS_USAGE = `Usage: pnpm retouch admin blobs migrate --to s3 [--dry-run] [--concurrency <1-16>]

Copies the file store (RETOUCH_DATA_DIR/blobs) into the S3 bucket that
RETOUCH_BLOB_STORE=s3 and the RETOUCH_S3_* settings name (credentials: the
AWS SDK's default chain), under the same keys, so that results handed out
before the switch keep working after it. Run it with the settings the service
will have after the switch. Each object is read back and compared; one already
in the bucket with the same size and hash is skipped, so an interrupted run
continues where it stopped. The files are not deleted.

  --dry-run                                list what would be copied; write nothing
  --concurrency <n>                        uploads in flight at once (default 4)
`;

/** A wrong argument: the message and the usage, exit 2. */
export class BlobsUsageError extends Error {}

/** The command cannot run as configured (not s3, no file store, a bucket it cannot use): one sentence, exit 2. */
export class BlobsMigrateRefusal extends Error {}

export interface BlobsMigrateOptions {
  to?: string | undefined;
  dryRun?: boolean | undefined;
  concurrency?: string | undefined;
}

const DEFAULT_CONCURRENCY = 4;

export async function runBlobsCommand(
  command: string | undefined,
  options: BlobsMigrateOptions,
  config: Config,
  output: CommandOutput = { stdout: process.stdout, stderr: process.stderr },
): Promise<number> {
  if (command !== "migrate") {
    throw new BlobsUsageError(command ? `unknown blobs command "${command}"` : "blobs needs a command");
  }
  if (options.to === undefined) throw new BlobsUsageError("blobs migrate needs --to s3");
  if (options.to !== "s3") {
    throw new BlobsMigrateRefusal(`--to ${options.to}: the file store can only be migrated to s3 (--to s3).`);
  }
  const concurrency = options.concurrency === undefined ? DEFAULT_CONCURRENCY : Number(options.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 16) {
    throw new BlobsUsageError("--concurrency needs a whole number from 1 to 16");
  }
  const store = config.blobStore;
  if (store.kind !== "s3") {
    throw new BlobsMigrateRefusal(
      "RETOUCH_BLOB_STORE is file, so there is no bucket to copy to: run the migration with the settings the service will " +
        "have after the switch (RETOUCH_BLOB_STORE=s3, RETOUCH_S3_BUCKET and, as needed, RETOUCH_S3_ENDPOINT, " +
        "RETOUCH_S3_REGION, RETOUCH_S3_FORCE_PATH_STYLE, RETOUCH_S3_PREFIX, and the AWS credentials).",
    );
  }
  const sourceRoot = path.join(config.dataDir, "blobs");
  try {
    await access(sourceRoot);
  } catch {
    throw new BlobsMigrateRefusal(`There is no file store at ${sourceRoot} (RETOUCH_DATA_DIR/blobs): check RETOUCH_DATA_DIR.`);
  }
  const target = await openMigrationTarget(config);
  if (!target) throw new BlobsMigrateRefusal("RETOUCH_BLOB_STORE is not s3.");
  const destination = `s3 bucket "${store.bucket}"${store.prefix ? ` (prefix "${store.prefix}")` : ""}${
    store.endpoint ? ` at ${store.endpoint}` : ""
  }`;
  try {
    try {
      await target.check();
    } catch (error) {
      // The store's own sentence names the bucket, endpoint and region and what it answered; never a credential.
      if (isBlobStoreError(error)) throw new BlobsMigrateRefusal(`The bucket cannot be used: ${error.message}`);
      throw error;
    }
    output.stderr.write(
      `${options.dryRun ? "Checking" : "Copying"} ${sourceRoot} into ${destination}, ${concurrency} at a time.\n`,
    );
    const controller = new AbortController();
    const interrupt = () => {
      output.stderr.write("\nInterrupted: finishing the uploads in flight; run the command again to continue.\n");
      controller.abort();
    };
    process.once("SIGINT", interrupt);
    const progress = new MigrationProgress(output.stderr, options.dryRun === true);
    let summary: BlobMigrationSummary;
    try {
      summary = await migrateBlobs({
        sourceRoot,
        target,
        concurrency,
        dryRun: options.dryRun === true,
        signal: controller.signal,
        onObject: (event) => {
          if (event.outcome === "failed") progress.note(`${event.key}: ${event.reason}`);
          if (options.dryRun && event.outcome === "copied") {
            output.stdout.write(`would copy ${event.key} (${formatBytes(event.bytes)})\n`);
          }
          progress.update(event);
        },
      });
    } finally {
      progress.finish();
      process.off("SIGINT", interrupt);
    }
    output.stdout.write(formatSummary(summary, { destination, sourceRoot, dryRun: options.dryRun === true }));
    if (controller.signal.aborted) return 130;
    return summary.failed > 0 || summary.stoppedEarly ? 1 : 0;
  } finally {
    target.close?.();
  }
}

function formatSummary(
  summary: BlobMigrationSummary,
  context: { destination: string; sourceRoot: string; dryRun: boolean },
): string {
  const lines = [
    `${context.dryRun ? "Dry run: nothing was written to" : "Migrated the file store to"} ${context.destination}: ${summary.total} objects`,
    `  ${context.dryRun ? "to copy" : "copied "}  ${summary.copied} (${formatBytes(summary.copiedBytes)})${
      context.dryRun ? "" : ", each read back and verified"
    }`,
    `  skipped  ${summary.skipped} (${formatBytes(summary.skippedBytes)}), already in the bucket with the same size and hash`,
    `  failed   ${summary.failed}`,
  ];
  if (summary.gone > 0) lines.push(`  gone     ${summary.gone}, deleted from the file store while the migration ran`);
  if (summary.ignored.length > 0) {
    lines.push(
      `  ignored  ${summary.ignored.length} files that are not blobs (left alone): ${summary.ignored.slice(0, 5).join(", ")}${
        summary.ignored.length > 5 ? ", ..." : ""
      }`,
    );
  }
  for (const failure of summary.failures) lines.push(`FAILED ${failure.key}: ${failure.reason}`);
  if (summary.stoppedEarly) {
    const why = summary.failed >= MAX_MIGRATION_FAILURES ? `${summary.failed} objects failed` : "the migration was interrupted";
    lines.push(`Stopped early (${why}): run the command again; it skips what is already copied and verified.`);
  } else if (summary.failed > 0) {
    lines.push("Some objects were not copied: run the command again once the cause is fixed; it skips what is already copied.");
  }
  if (!context.dryRun) {
    lines.push(
      `The files under ${context.sourceRoot} were not deleted: remove them yourself once the service runs on the bucket and you have checked it.`,
    );
  }
  return `${lines.join("\n")}\n`;
}

/** A line redrawn in place on a terminal; a plain line every 10 % otherwise (logs, CI). */
class MigrationProgress {
  private readonly tty: boolean;
  private lastDraw = 0;
  private lastStep = -1;
  private drawn = false;
  private copied = 0;
  private skipped = 0;
  private failed = 0;
  private bytes = 0;

  constructor(
    private readonly stream: NodeJS.WriteStream,
    private readonly dryRun: boolean,
  ) {
    this.tty = stream.isTTY === true;
  }

  update(event: BlobMigrationEvent): void {
    if (event.outcome === "copied") {
      this.copied += 1;
      this.bytes += event.bytes;
    } else if (event.outcome === "skipped") this.skipped += 1;
    else if (event.outcome === "failed") this.failed += 1;
    const line = `${event.done}/${event.total} objects: ${this.copied} ${this.dryRun ? "to copy" : "copied"} (${formatBytes(this.bytes)}), ${this.skipped} skipped, ${this.failed} failed`;
    if (this.tty) {
      const now = Date.now();
      if (now - this.lastDraw < 100 && event.done !== event.total) return;
      this.lastDraw = now;
      this.stream.write(`\r\x1b[2K${line}`);
      this.drawn = true;
      return;
    }
    const step = Math.floor((10 * event.done) / event.total);
    if (step === this.lastStep) return;
    this.lastStep = step;
    this.stream.write(`${line}\n`);
  }

  note(line: string): void {
    this.finish();
    this.stream.write(`${line}\n`);
  }

  finish(): void {
    if (this.drawn) this.stream.write("\n");
    this.drawn = false;
  }
}
