import { constants, createReadStream } from "node:fs";
import { access, mkdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import type { Readable } from "node:stream";

/** What a put may say about the bytes; an object store serves it back (a presigned GET's Content-Type). */
export interface PutOptions {
  contentType?: string;
}

/**
 * Where inputs and results live. The filesystem store is the default; an
 * object store (S3, R2, MinIO: s3-blob-store.ts) implements the same operations.
 * A store that cannot be reached throws BlobStoreError, so callers can tell
 * "the store is down" (retry later) from a bug.
 */
export interface BlobStore {
  /** "file" or "s3": for logs and for /readyz. */
  readonly kind: "file" | "s3";
  put(key: string, bytes: Buffer, options?: PutOptions): Promise<void>;
  get(key: string): Promise<Buffer>;
  /** A stream and its size, or undefined when the blob does not exist. */
  open(key: string): Promise<{ stream: Readable; size: number } | undefined>;
  /** Deleting a missing blob is not an error. */
  delete(key: string): Promise<void>;
  /** Deletes many blobs in as few requests as the store allows (retention); missing ones are not an error. */
  deleteMany(keys: readonly string[]): Promise<void>;
  /** Resolves when the store is reachable and usable (start-up, /readyz); throws BlobStoreError otherwise. */
  check(): Promise<void>;
  /**
   * A URL anyone may GET the blob's bytes from for `ttlSeconds`, signed by the
   * store itself; only stores that can (s3) have it.
   */
  presignedUrl?(key: string, ttlSeconds: number): Promise<string>;
  /** Releases connections (an object store's sockets) when the process stops. */
  close?(): void;
}

/** The store failed or refused (unreachable, bad credentials, missing bucket): a server-side condition, not a bug. */
export class BlobStoreError extends Error {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, options);
    this.name = "BlobStoreError";
  }
}

export function isBlobStoreError(error: unknown): error is BlobStoreError {
  return error instanceof BlobStoreError;
}

/** How many deletes the file store runs at once (S3's DeleteObjects takes 1000 keys a request). */
const FILE_DELETE_BATCH = 64;

/** What a blob key looks like (the file store refuses anything else; the migration copies only these). */
export const SAFE_KEY = /^[a-z0-9][a-z0-9_-]*(?:\/[a-z0-9][a-z0-9_.-]*)*$/;

/** Blobs as files under one directory; keys like `inputs/job_x` map to paths below it, never above. */
export class FileBlobStore implements BlobStore {
  readonly kind = "file";
  /** Directories known to exist, so a put is one file write, not a mkdir too. */
  private readonly directories = new Set<string>();

  constructor(private readonly root: string) {}

  private file(key: string): string {
    if (!SAFE_KEY.test(key) || key.includes("..")) throw new Error(`invalid blob key: ${key}`);
    return path.join(this.root, key);
  }

  async put(key: string, bytes: Buffer, _options?: PutOptions): Promise<void> {
    const file = this.file(key);
    const dir = path.dirname(file);
    if (!this.directories.has(dir)) {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      this.directories.add(dir);
    }
    // A new key (every input, every first result) is written once, straight to its name:
    // nothing refers to it until the database row that names it commits. Replacing an
    // existing blob writes beside it and renames, so a reader never sees half a file.
    try {
      await writeFile(file, bytes, { mode: 0o600, flag: "wx" });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const temp = `${file}.${process.pid}.${Date.now()}.tmp`;
      await writeFile(temp, bytes, { mode: 0o600 });
      await rename(temp, file);
    }
  }

  get(key: string): Promise<Buffer> {
    return readFile(this.file(key));
  }

  async open(key: string): Promise<{ stream: Readable; size: number } | undefined> {
    const file = this.file(key);
    try {
      const { size } = await stat(file);
      return { stream: createReadStream(file), size };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    await rm(this.file(key), { force: true });
  }

  async deleteMany(keys: readonly string[]): Promise<void> {
    for (let start = 0; start < keys.length; start += FILE_DELETE_BATCH) {
      await Promise.all(keys.slice(start, start + FILE_DELETE_BATCH).map((key) => this.delete(key)));
    }
  }

  async check(): Promise<void> {
    try {
      await mkdir(this.root, { recursive: true, mode: 0o700 });
      await access(this.root, constants.W_OK);
    } catch (error) {
      throw new BlobStoreError(`the blob directory ${this.root} is not writable: ${(error as Error).message}`, { cause: error });
    }
  }
}
