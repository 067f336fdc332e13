import { createReadStream } from "node:fs";
import { mkdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import type { Readable } from "node:stream";

/**
 * Where inputs and results live. The filesystem store is the default; an
 * object store (S3, GCS, R2) implements the same four operations.
 */
export interface BlobStore {
  put(key: string, bytes: Buffer): Promise<void>;
  get(key: string): Promise<Buffer>;
  /** A stream and its size, or undefined when the blob does not exist. */
  open(key: string): Promise<{ stream: Readable; size: number } | undefined>;
  /** Deleting a missing blob is not an error. */
  delete(key: string): Promise<void>;
}

const SAFE_KEY = /^[a-z0-9][a-z0-9_-]*(?:\/[a-z0-9][a-z0-9_.-]*)*$/;

/** Blobs as files under one directory; keys like `inputs/job_x` map to paths below it, never above. */
export class FileBlobStore implements BlobStore {
  /** Directories known to exist, so a put is one file write, not a mkdir too. */
  private readonly directories = new Set<string>();

  constructor(private readonly root: string) {}

  private file(key: string): string {
    if (!SAFE_KEY.test(key) || key.includes("..")) throw new Error(`invalid blob key: ${key}`);
    return path.join(this.root, key);
  }

  async put(key: string, bytes: Buffer): Promise<void> {
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
}
