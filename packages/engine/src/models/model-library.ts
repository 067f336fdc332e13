import { rm, stat } from "node:fs/promises";
import path from "node:path";
import { findModel, type ModelCatalog, type ModelEntry, type ModelTask } from "./model-catalog";
import { checkFile, type DownloadOptions, downloadModel, isLocked, lockPath, partPath } from "./model-download";
import { ModelError } from "./model-error";

/**
 * `installed`: the file is there at the published size (it only gets its
 * final name once verified); `partial`: an interrupted download waits to be
 * resumed; `wrong_size`: something else sits under the model's name.
 */
export type ModelState = "installed" | "missing" | "partial" | "wrong_size";

export interface ModelStatus {
  entry: ModelEntry;
  state: ModelState;
  path: string;
  /** Bytes on disk: the file's, or the part's while partial. */
  bytes: number;
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

  async status(name: string): Promise<ModelStatus> {
    const entry = this.entry(name);
    const file = path.join(this.options.dir, entry.file);
    const final = await stat(file).catch(() => undefined);
    if (final) {
      const state = entry.size === undefined || final.size === entry.size ? "installed" : "wrong_size";
      return { entry, state, path: file, bytes: final.size };
    }
    const part = await stat(partPath(file)).catch(() => undefined);
    return { entry, state: part ? "partial" : "missing", path: file, bytes: part?.size ?? 0 };
  }

  list(): Promise<ModelStatus[]> {
    return Promise.all(this.options.catalog.entries.map((entry) => this.status(entry.name)));
  }

  /**
   * Makes sure a verified copy is there: an installed file is checked again
   * (and fetched anew if it fails); otherwise it is downloaded, resuming a part.
   */
  async pull(name: string, options: PullOptions = {}): Promise<PullResult> {
    const status = await this.status(name);
    let replaced: string | undefined;
    if (status.state === "installed" || status.state === "wrong_size") {
      const mismatch = await checkFile(status.entry, status.path);
      if (!mismatch) return { path: status.path, downloaded: false, bytes: status.bytes, resumedFrom: 0 };
      replaced = mismatch;
      await rm(status.path, { force: true });
    }
    const result = await downloadModel({ ...options, entry: status.entry, dir: this.options.dir, mirror: this.options.mirror });
    return {
      path: result.path,
      downloaded: true,
      bytes: result.bytes,
      resumedFrom: result.resumedFrom,
      ...(replaced ? { replaced } : {}),
    };
  }

  /** Deletes the model's file and any partial download; returns the paths removed. */
  async remove(name: string): Promise<string[]> {
    const file = this.path(name);
    if (await isLocked(file)) {
      throw new ModelError(
        "busy",
        `${name} is being downloaded by another process (lock file ${lockPath(file)}); remove it afterwards.`,
      );
    }
    const removed: string[] = [];
    for (const candidate of [file, partPath(file)]) {
      if (await stat(candidate).catch(() => undefined)) {
        await rm(candidate, { force: true });
        removed.push(candidate);
      }
    }
    return removed;
  }
}
