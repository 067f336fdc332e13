import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import type { Readable } from "node:stream";
import { OUTPUT_FORMATS } from "@retouch/engine";
import pMap from "p-map";
import { type PutOptions, SAFE_KEY } from "../blobs/blob-store";
import { openS3BlobStore } from "../blobs/open-blob-store";
import type { Config } from "../config/env";

/**
 * Moving an installation from the file store to an S3 bucket
 * (`pnpm retouch admin blobs migrate --to s3`): every blob under
 * RETOUCH_DATA_DIR/blobs is written to the bucket under the same key (the
 * store's prefix before it), then read back and compared, so that a result
 * link handed out before the switch finds the same bytes after it.
 *
 * Resumable without a journal: the bucket itself says what is done. An object
 * already there with the file's size and hash is skipped; one of another size
 * or hash (an upload cut off by a crash, a stale copy) is written again. The
 * source files are never deleted: the operator removes them after checking.
 */

/** What the migration needs of the target: the S3 store (s3-blob-store.ts) has all of it. */
export interface MigrationTarget {
  put(key: string, bytes: Buffer, options?: PutOptions): Promise<void>;
  open(key: string): Promise<{ stream: Readable; size: number } | undefined>;
  /** Size and ETag from a HEAD, or undefined when the object does not exist. */
  stat(key: string): Promise<{ size: number; etag: string | undefined } | undefined>;
  check(): Promise<void>;
  close?(): void;
}

/**
 * `copied`: written and verified (with `dryRun`: would be written); `skipped`: already
 * in the bucket with the same bytes; `failed`: not written or not verified;
 * `gone`: the file disappeared before it was read (retention deleted it during a live run).
 */
export type BlobOutcome = "copied" | "skipped" | "failed" | "gone";

export interface BlobMigrationEvent {
  key: string;
  bytes: number;
  outcome: BlobOutcome;
  /** Why it failed: an operator's sentence (the store's answer, or the mismatch). */
  reason?: string;
  /** Objects settled so far, of `total`. */
  done: number;
  total: number;
}

export interface BlobMigrationSummary {
  total: number;
  copied: number;
  copiedBytes: number;
  skipped: number;
  skippedBytes: number;
  failed: number;
  gone: number;
  failures: { key: string; reason: string }[];
  /** Files under the directory that are not blobs (a temporary file of an interrupted write, anything else): left alone. */
  ignored: string[];
  /** Stopped before every blob was tried (the signal, or too many failures): run again to continue. */
  stoppedEarly: boolean;
}

export interface BlobMigrationOptions {
  /** RETOUCH_DATA_DIR/blobs: the file store's root. */
  sourceRoot: string;
  target: MigrationTarget;
  /** Uploads in flight at once. */
  concurrency: number;
  /** Check the bucket and report what would be copied; write nothing. */
  dryRun?: boolean;
  /** Aborting stops starting new uploads; those in flight finish and are counted. */
  signal?: AbortSignal;
  onObject?: (event: BlobMigrationEvent) => void;
}

/** After this many failed objects no new upload is started: the store is likely down, and every retry would fail too. */
export const MAX_MIGRATION_FAILURES = 10;

/** `results/job_x.png.<pid>.<ms>.tmp`: the file store's write-beside-then-rename of a replaced blob, interrupted. */
const TEMP_FILE = /\.\d+\.\d+\.tmp$/;

/** The blobs under the file store's root, sorted by key, and what else is there. */
export async function listFileBlobs(root: string): Promise<{ keys: string[]; ignored: string[] }> {
  const entries = await readdir(root, { withFileTypes: true, recursive: true });
  const keys: string[] = [];
  const ignored: string[] = [];
  for (const entry of entries) {
    if (entry.isDirectory()) continue;
    const key = path.relative(root, path.join(entry.parentPath, entry.name)).split(path.sep).join("/");
    if (!entry.isFile() || TEMP_FILE.test(key) || !SAFE_KEY.test(key) || key.includes("..")) {
      ignored.push(key);
      continue;
    }
    keys.push(key);
  }
  return { keys: keys.sort(), ignored: ignored.sort() };
}

/** A result's blob key, `results/<name>.<output format>`: its media type is image/<format>. */
const RESULT_KEY = new RegExp(`^results/[^/]+\\.(${OUTPUT_FORMATS.join("|")})$`);

/** The Content-Type the service gave the blob when it stored it (a presigned GET serves it back). */
export function contentTypeOf(key: string): string | undefined {
  const result = RESULT_KEY.exec(key);
  if (result) return `image/${result[1]}`;
  if (key.startsWith("masks/")) return "image/png";
  return undefined;
}

export async function migrateBlobs(options: BlobMigrationOptions): Promise<BlobMigrationSummary> {
  const { target, dryRun = false } = options;
  const { keys: blobs, ignored } = await listFileBlobs(options.sourceRoot);
  const summary: BlobMigrationSummary = {
    total: blobs.length,
    copied: 0,
    copiedBytes: 0,
    skipped: 0,
    skippedBytes: 0,
    failed: 0,
    gone: 0,
    failures: [],
    ignored,
    stoppedEarly: false,
  };
  let done = 0;
  const stop = () => options.signal?.aborted === true || summary.failed >= MAX_MIGRATION_FAILURES;

  const settle = (key: string, bytes: number, outcome: BlobOutcome, reason?: string) => {
    done += 1;
    if (outcome === "copied") {
      summary.copied += 1;
      summary.copiedBytes += bytes;
    } else if (outcome === "skipped") {
      summary.skipped += 1;
      summary.skippedBytes += bytes;
    } else if (outcome === "gone") {
      summary.gone += 1;
    } else {
      summary.failed += 1;
      summary.failures.push({ key, reason: reason ?? "failed" });
    }
    options.onObject?.({ key, bytes, outcome, ...(reason ? { reason } : {}), done, total: blobs.length });
  };

  const one = async (key: string) => {
    let bytes: Buffer;
    try {
      bytes = await readFile(path.join(options.sourceRoot, ...key.split("/")));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return settle(key, 0, "gone");
      return settle(key, 0, "failed", `cannot read the file: ${(error as Error).message}`);
    }
    try {
      const digest = hashes(bytes);
      if (await holdsSame(target, key, bytes.length, digest)) return settle(key, bytes.length, "skipped");
      if (dryRun) return settle(key, bytes.length, "copied");
      const contentType = contentTypeOf(key);
      await target.put(key, bytes, contentType ? { contentType } : {});
      const mismatch = await verify(target, key, bytes.length, digest.sha256);
      if (mismatch) return settle(key, bytes.length, "failed", mismatch);
      return settle(key, bytes.length, "copied");
    } catch (error) {
      return settle(key, bytes.length, "failed", error instanceof Error ? error.message : String(error));
    }
  };

  // A blob not yet started when the run stops is left alone (not counted as done): the summary says stopped early.
  await pMap(blobs, (key) => (stop() ? undefined : one(key)), { concurrency: Math.max(1, options.concurrency) });
  summary.stoppedEarly = done < blobs.length;
  return summary;
}

function hashes(bytes: Buffer): { sha256: string; md5: string } {
  return {
    sha256: createHash("sha256").update(bytes).digest("hex"),
    md5: createHash("md5").update(bytes).digest("hex"),
  };
}

/**
 * Whether the bucket already holds exactly these bytes under the key. The
 * size first (a HEAD); then the ETag, which for a single-part upload is the
 * store's own MD5 of what it stored, so a resumed run need not download what
 * it copied before. An ETag that is not that MD5 (multipart, SSE-KMS, a
 * store that computes it otherwise) proves nothing either way: then the
 * object is read back and its SHA-256 compared.
 */
async function holdsSame(
  target: MigrationTarget,
  key: string,
  size: number,
  digest: { sha256: string; md5: string },
): Promise<boolean> {
  const existing = await target.stat(key);
  if (!existing || existing.size !== size) return false;
  if (existing.etag?.replaceAll('"', "").toLowerCase() === digest.md5) return true;
  return (await storedSha256(target, key)) === digest.sha256;
}

/** Reads the object back (HEAD's size, then the bytes' SHA-256): undefined when it is what was sent, else what differs. */
async function verify(target: MigrationTarget, key: string, size: number, sha256: string): Promise<string | undefined> {
  const stored = await target.stat(key);
  if (!stored) return "verification failed: the object is missing right after its upload";
  if (stored.size !== size) return `verification failed: the bucket holds ${stored.size} bytes, the file has ${size}`;
  const read = await storedSha256(target, key);
  if (read !== sha256) {
    return `verification failed: the bytes read back differ from the file (SHA-256 ${read ?? "missing"}, expected ${sha256})`;
  }
  return undefined;
}

async function storedSha256(target: MigrationTarget, key: string): Promise<string | undefined> {
  const opened = await target.open(key);
  if (!opened) return undefined;
  const hash = createHash("sha256");
  for await (const chunk of opened.stream) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

/**
 * The bucket the RETOUCH_S3_* settings name, as a migration target; undefined
 * when RETOUCH_BLOB_STORE is not s3. Loaded on demand like openBlobStore: the
 * AWS SDK is only loaded when it is used.
 */
export async function openMigrationTarget(config: Pick<Config, "blobStore">): Promise<MigrationTarget | undefined> {
  const store = config.blobStore;
  if (store.kind !== "s3") return undefined;
  return openS3BlobStore(store);
}
