import { rm, stat } from "node:fs/promises";
import path from "node:path";
import {
  findModel,
  type ModelCatalog,
  type ModelEntry,
  type ModelFile,
  type ModelFileRole,
  type ModelTask,
  modelFiles,
} from "./model-catalog";
import { archivePartPath, checkFile, type DownloadOptions, downloadModel, isLocked, lockPath, partPath } from "./model-download";
import { ModelError } from "./model-error";

/**
 * `installed`: the file is there at the published size (it only gets its
 * final name once verified); `partial`: an interrupted download waits to be
 * resumed; `wrong_size`: something else sits under the model's name.
 */
export type ModelState = "installed" | "missing" | "partial" | "wrong_size";

export interface ModelStatus {
  entry: ModelEntry;
  /** For an entry of several files (a segmenter's encoder and decoder): installed when every one is, missing when none is there. */
  state: ModelState;
  /** The main file's path. */
  path: string;
  /** Bytes on disk, over all its files: each file's, or its part's while partial (or the archive's that carries it). */
  bytes: number;
  /** Each file's own state and path, the main file (`model`) first; `inArchive`: its partial bytes are this archive's. */
  files: { role: ModelFileRole; state: ModelState; path: string; bytes: number; inArchive?: string }[];
}

export interface ModelLibraryOptions {
  /** RETOUCH_MODELS_DIR. */
  dir: string;
  catalog: ModelCatalog;
  /** RETOUCH_MODEL_MIRROR. */
  mirror?: string | undefined;
}

export type PullOptions = Pick<
  DownloadOptions,
  "onProgress" | "onRetry" | "signal" | "attempts" | "retryDelayMs" | "stallTimeoutMs"
>;

export interface PullResult {
  path: string;
  /** False when a verified copy was already there. */
  downloaded: boolean;
  bytes: number;
  resumedFrom: number;
  /** Set when an installed copy failed its check and was fetched again. */
  replaced?: string;
}

/** The catalog's models in one directory: what is there, fetching, removing. */
export class ModelLibrary {
  constructor(private readonly options: ModelLibraryOptions) {}

  get dir(): string {
    return this.options.dir;
  }

  get catalog(): ModelCatalog {
    return this.options.catalog;
  }

  /** The catalog entry, or a ModelError that lists the names there are. */
  entry(name: string): ModelEntry {
    const entry = findModel(this.options.catalog, name);
    if (!entry) {
      const known = this.options.catalog.entries.map((candidate) => candidate.name).join(", ");
      throw new ModelError("unknown_model", `No model named "${name}" in the catalog (known: ${known}).`);
    }
    return entry;
  }

  defaultFor(task: ModelTask): string | undefined {
    return this.options.catalog.defaults[task];
  }

  path(name: string): string {
    return path.join(this.options.dir, this.entry(name).file);
  }

  /** Where each file of the entry lives, by role: `model` (the main file), `decoder`, `vocab`. */
  paths(name: string): Partial<Record<ModelFileRole, string>> {
    return Object.fromEntries(modelFiles(this.entry(name)).map((file) => [file.role, path.join(this.options.dir, file.file)]));
  }

  async status(name: string): Promise<ModelStatus> {
    const entry = this.entry(name);
    const files = await Promise.all(
      modelFiles(entry).map(async (model) => {
        const file = path.join(this.options.dir, model.file);
        const final = await stat(file).catch(() => undefined);
        if (final) {
          const state: ModelState = model.size === undefined || final.size === model.size ? "installed" : "wrong_size";
          return { role: model.role, state, path: file, bytes: final.size };
        }
        const part = await stat(partPath(file)).catch(() => undefined);
        if (part) return { role: model.role, state: "partial" as const, path: file, bytes: part.size };
        // An archive that carries the file, half fetched: the next pull resumes it too (its bytes are not the file's).
        for (const archivePart of this.archiveParts(model)) {
          const archive = await stat(archivePart).catch(() => undefined);
          if (archive) {
            return { role: model.role, state: "partial" as const, path: file, bytes: archive.size, inArchive: archivePart };
          }
        }
        return { role: model.role, state: "missing" as const, path: file, bytes: 0 };
      }),
    );
    const states = files.map((file) => file.state);
    // Anything amiss in one file is the entry's state; half of a pair installed is a download to finish.
    const state: ModelState = states.includes("wrong_size")
      ? "wrong_size"
      : states.every((one) => one === "installed")
        ? "installed"
        : states.every((one) => one === "missing")
          ? "missing"
          : "partial";
    // An archive that carries two of the files is on disk once.
    const archives = new Set<string>();
    const bytes = files.reduce((sum, file) => {
      if (file.inArchive === undefined) return sum + file.bytes;
      const counted = archives.has(file.inArchive);
      archives.add(file.inArchive);
      return counted ? sum : sum + file.bytes;
    }, 0);
    return { entry, state, path: files[0]?.path ?? path.join(this.options.dir, entry.file), bytes, files };
  }

  list(): Promise<ModelStatus[]> {
    return Promise.all(this.options.catalog.entries.map((entry) => this.status(entry.name)));
  }

  /**
   * Makes sure a verified copy is there: an installed file is checked again
   * (and fetched anew if it fails); otherwise it is downloaded, resuming a part.
   */
  async pull(name: string, options: PullOptions = {}): Promise<PullResult> {
    const entry = this.entry(name);
    const files = modelFiles(entry);
    const unverifiable = files.find((file) => file.checksums.sha256 === undefined && file.checksums.md5 === undefined);
    if (unverifiable) {
      // Before any byte moves: half of a model downloaded is no use, and this half could never be checked.
      throw new ModelError(
        "unverifiable",
        `No checksum is published for ${unverifiable.name}, so ${name} is never downloaded automatically; fetch ${unverifiable.file} yourself into ${this.options.dir}.`,
      );
    }
    const results: PullResult[] = [];
    for (const [index, file] of files.entries()) {
      const target = path.join(this.options.dir, file.file);
      const there = await stat(target).catch(() => undefined);
      let replaced: string | undefined;
      if (there) {
        const mismatch = await checkFile(file, target);
        if (!mismatch) {
          results.push({ path: target, downloaded: false, bytes: there.size, resumedFrom: 0 });
          continue;
        }
        replaced = files.length > 1 ? `${file.file}: ${mismatch}` : mismatch;
        await rm(target, { force: true });
      }
      // An archive that carries a later file too (SAM 2.1's encoder and decoder in one zip) is fetched once.
      const later = new Set(files.slice(index + 1).flatMap((other) => this.archiveParts(other)));
      const keepArchive = this.archiveParts(file).some((part) => later.has(part));
      const result = await downloadModel({
        ...options,
        entry: file,
        dir: this.options.dir,
        mirror: this.options.mirror,
        keepArchive,
      });
      results.push({
        path: result.path,
        downloaded: true,
        bytes: result.bytes,
        resumedFrom: result.resumedFrom,
        ...(replaced ? { replaced } : {}),
      });
    }
    // Every file is out: an archive kept for a later one (which may have been installed already) has served.
    for (const part of files.flatMap((file) => this.archiveParts(file))) await rm(part, { force: true });
    const replaced = results.flatMap((result) => (result.replaced ? [result.replaced] : []));
    return {
      path: results[0]?.path ?? path.join(this.options.dir, entry.file),
      downloaded: results.some((result) => result.downloaded),
      bytes: results.reduce((sum, result) => sum + result.bytes, 0),
      resumedFrom: results.reduce((sum, result) => sum + result.resumedFrom, 0),
      ...(replaced.length > 0 ? { replaced: replaced.join("; ") } : {}),
    };
  }

  /** Deletes the model's file and any partial download; returns the paths removed. */
  async remove(name: string): Promise<string[]> {
    const entry = this.entry(name);
    const files = Object.values(this.paths(name));
    for (const file of files) {
      if (await isLocked(file)) {
        throw new ModelError(
          "busy",
          `${name} is being downloaded by another process (lock file ${lockPath(file)}); remove it afterwards.`,
        );
      }
    }
    const removed: string[] = [];
    const archives = modelFiles(entry).flatMap((file) => this.archiveParts(file));
    for (const candidate of new Set([...files.flatMap((file) => [file, partPath(file)]), ...archives])) {
      if (await stat(candidate).catch(() => undefined)) {
        await rm(candidate, { force: true });
        removed.push(candidate);
      }
    }
    return removed;
  }

  /** Where the archives that the file's catalog URLs name are fetched to (none for plain URLs). */
  private archiveParts(file: ModelFile): string[] {
    return file.urls.flatMap((url) => archivePartPath(this.options.dir, url) ?? []);
  }
}
