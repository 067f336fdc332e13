import type { Config } from "@retouch/core";
import { type DownloadProgress, isPullable, ModelLibrary, type ModelStatus, modelFiles } from "@retouch/engine";

export const MODELS_USAGE = `Usage: pnpm retouch models <command> [name]

The learned models Retouch can use, kept in RETOUCH_MODELS_DIR (default
$RETOUCH_DATA_DIR/models) and fetched from their publishers, or from
RETOUCH_MODEL_MIRROR when it is set. A running service picks up a pulled
model at its next start.

Commands:
  list                                     every catalog model: task, size, licence, installed, default;
                                           then the files of each model made of several (a segmenter's
                                           encoder and decoder) and of each that cannot be pulled
  pull <name>                              download and verify it, every file of it (resumes an
                                           interrupted download; an installed copy is checked again)
  remove <name>                            delete its files (and any partial download)
`;

export class ModelsUsageError extends Error {}

export interface CommandOutput {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WriteStream;
}

export async function runModelsCommand(
  command: string | undefined,
  args: string[],
  config: Config,
  output: CommandOutput = { stdout: process.stdout, stderr: process.stderr },
): Promise<number> {
  const { models } = config;
  const library = new ModelLibrary({ dir: models.dir, catalog: models.catalog, mirror: models.mirror });
  const name = args[0];
  switch (command) {
    case "list": {
      const statuses = await library.list();
      output.stdout.write(formatList(statuses, [models.background, models.inpainting, models.segmenter, models.detector]));
      output.stdout.write(formatFiles(statuses));
      output.stdout.write(`\nModels directory: ${models.dir}${models.mirror ? `; mirror: ${models.mirror}` : ""}\n`);
      // The full path is for the operator: GET /api/capabilities names the file only.
      if (config.backgroundModel) output.stdout.write(`Background model file: ${config.backgroundModel.path}\n`);
      return 0;
    }
    case "pull": {
      if (!name) throw new ModelsUsageError("pull needs a model name (see `pnpm retouch models list`)");
      const entry = library.entry(name);
      const progress = new DownloadReport(output.stderr);
      const controller = new AbortController();
      const interrupt = () => controller.abort();
      process.once("SIGINT", interrupt);
      try {
        const result = await library.pull(name, {
          signal: controller.signal,
          onProgress: (event) => progress.update(event),
          onRetry: ({ error }) => progress.note(`${error.message}; trying again`),
        });
        progress.finish();
        const digests = Object.keys(entry.checksums).join(" and ");
        if (result.replaced) output.stdout.write(`The installed ${name} failed its check (${result.replaced}): fetched again.\n`);
        output.stdout.write(
          result.downloaded
            ? `${name}: downloaded and verified (${digests}), ${formatBytes(result.bytes)}${
                result.resumedFrom > 0 ? `, resumed at ${formatBytes(result.resumedFrom)}` : ""
              }: ${result.path}\n`
            : `${name} is installed and verified (${digests}): ${result.path}\n`,
        );
        return 0;
      } catch (error) {
        progress.finish();
        throw error;
      } finally {
        process.off("SIGINT", interrupt);
      }
    }
    case "remove": {
      if (!name) throw new ModelsUsageError("remove needs a model name (see `pnpm retouch models list`)");
      const removed = await library.remove(name);
      output.stdout.write(removed.length > 0 ? `Removed ${removed.join(" and ")}.\n` : `${name} is not installed.\n`);
      return 0;
    }
    default:
      throw new ModelsUsageError(command ? `unknown models command "${command}"` : "models needs a command");
  }
}

/** `used`: the models the service takes for their tasks (the configured or default ones), marked in DEFAULT. */
function formatList(statuses: ModelStatus[], used: (string | undefined)[]): string {
  const rows = [
    ["NAME", "TASK", "SIZE", "LICENCE", "INSTALLED", "DEFAULT"],
    ...statuses.map(({ entry, state, bytes, files }) => {
      // A model of several files is as large as all of them; unknown when one size is unpublished.
      const sizes = modelFiles(entry).map((file) => file.size);
      const size = sizes.every((one) => one !== undefined) ? sizes.reduce((sum, one) => sum + one, 0) : undefined;
      return [
        entry.name,
        entry.task,
        size === undefined ? "unknown" : formatBytes(size),
        entry.licence.id,
        state === "installed"
          ? "yes"
          : state === "partial"
            ? files.some((file) => file.inArchive)
              ? `partial (${formatBytes(bytes)} of its archive)`
              : `partial (${size ? `${Math.floor((100 * bytes) / size)}%` : formatBytes(bytes)})`
            : state === "wrong_size"
              ? "wrong size"
              : "no",
        used.includes(entry.name) ? "yes" : "",
      ];
    }),
  ];
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => row[column]?.length ?? 0))) ?? [];
  const lines = rows.map((row) =>
    row
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join("  ")
      .trimEnd(),
  );
  return `${lines.join("\n")}\n`;
}

/** The files of each model made of several, and why a model cannot be pulled: what an operator fetching by hand needs. */
function formatFiles(statuses: ModelStatus[]): string {
  const lines: string[] = [];
  for (const { entry, files } of statuses) {
    if (files.length < 2 && isPullable(entry)) continue;
    const described = modelFiles(entry).map((file, index) => {
      const state = files[index]?.state === "installed" ? "installed" : "not installed";
      return `${file.file} (${file.role}, ${file.size === undefined ? "size unknown" : formatBytes(file.size)}, ${state})`;
    });
    lines.push(`${entry.name}: ${described.join(", ")}`);
    const unverifiable = modelFiles(entry).filter(
      (file) => file.checksums.sha256 === undefined && file.checksums.md5 === undefined,
    );
    if (unverifiable.length > 0) {
      lines.push(
        `  not pulled: no checksum is published for ${unverifiable.map((file) => file.file).join(", ")}; fetch it from ${
          unverifiable[0]?.urls[0] ?? "its publisher"
        } into the models directory yourself`,
      );
    }
  }
  return lines.length > 0 ? `\n${lines.join("\n")}\n` : "";
}

export function formatBytes(bytes: number): string {
  if (bytes < 1_000_000) return `${(bytes / 1000).toFixed(1)} kB`;
  if (bytes < 1_000_000_000) return `${(bytes / 1_000_000).toFixed(1)} MB`;
  return `${(bytes / 1_000_000_000).toFixed(2)} GB`;
}

/** A bar redrawn in place on a terminal; a plain line every 10 % otherwise (logs, CI). */
class DownloadReport {
  private readonly tty: boolean;
  private lastDraw = 0;
  private lastStep = -1;
  private drawn = false;
  private readonly started = Date.now();

  constructor(private readonly stream: NodeJS.WriteStream) {
    this.tty = stream.isTTY === true;
  }

  update(event: DownloadProgress): void {
    const fraction = event.total ? Math.min(1, event.received / event.total) : undefined;
    const amount = `${formatBytes(event.received)}${event.total ? ` / ${formatBytes(event.total)}` : ""}`;
    if (this.tty) {
      const now = Date.now();
      if (now - this.lastDraw < 100 && event.received !== event.total) return;
      this.lastDraw = now;
      const seconds = Math.max(0.001, (now - this.started) / 1000);
      const rate = `${formatBytes((event.received - event.resumedFrom) / seconds)}/s`;
      const width = 30;
      const filled = Math.round((fraction ?? 0) * width);
      const bar =
        fraction === undefined ? "" : `[${"█".repeat(filled)}${"░".repeat(width - filled)}] ${Math.floor(fraction * 100)}%  `;
      this.stream.write(`\r\x1b[2K${event.model} ${bar}${amount}  ${rate}`);
      this.drawn = true;
      return;
    }
    const step = fraction === undefined ? Math.floor(event.received / 10_485_760) : Math.floor(fraction * 10);
    if (step === this.lastStep) return;
    this.lastStep = step;
    const resumed = event.received === event.resumedFrom && event.resumedFrom > 0 ? " (resuming)" : "";
    this.stream.write(
      `${event.model}: ${fraction === undefined ? "" : `${Math.floor(fraction * 100)}% `}(${amount}) from ${event.url}${resumed}\n`,
    );
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
