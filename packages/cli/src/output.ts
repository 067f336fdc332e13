export interface OutputOptions {
  json: boolean;
  quiet: boolean;
}

/** Human text by default, one JSON document with --json, nothing but errors with --quiet. */
export class Output {
  constructor(private readonly options: OutputOptions) {}

  get json(): boolean {
    return this.options.json;
  }

  get quiet(): boolean {
    return this.options.quiet;
  }

  /** A person is watching a terminal: draw progress. */
  get interactive(): boolean {
    return !this.options.json && !this.options.quiet && process.stderr.isTTY === true;
  }

  result(data: unknown, human: () => string): void {
    if (this.options.json) process.stdout.write(`${JSON.stringify(data, null, 2)}\n`);
    else if (!this.options.quiet) {
      const text = human();
      if (text) process.stdout.write(`${text}\n`);
    }
  }

  info(message: string): void {
    if (!this.options.json && !this.options.quiet) process.stderr.write(`${message}\n`);
  }

  error(message: string, data?: unknown): void {
    if (this.options.json && data !== undefined) process.stdout.write(`${JSON.stringify({ error: data }, null, 2)}\n`);
    process.stderr.write(`error: ${message}\n`);
  }
}

export function table(rows: string[][]): string {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? "").length))) ?? [];
  return rows
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column] ?? 0))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}
