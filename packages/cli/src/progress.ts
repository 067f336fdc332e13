const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

export function formatSeconds(ms: number): string {
  return ms < 60_000
    ? `${(ms / 1000).toFixed(1)}s`
    : `${Math.floor(ms / 60_000)}m${String(Math.round((ms % 60_000) / 1000)).padStart(2, "0")}s`;
}

/**
 * A spinner (one job) or a bar (a batch), with the elapsed time, drawn on
 * stderr only when it is a terminal and the output is for a person.
 */
export class Progress {
  private timer: NodeJS.Timeout | undefined;
  private frame = 0;
  private label = "";
  private readonly started = Date.now();

  constructor(private readonly enabled: boolean) {}

  elapsed(): string {
    return formatSeconds(Date.now() - this.started);
  }

  update(label: string): void {
    this.label = label;
    if (!this.enabled) return;
    this.timer ??= setInterval(() => this.draw(), 100);
    this.draw();
  }

  bar(done: number, total: number, failed: number): string {
    const width = 24;
    const filled = Math.round((done / Math.max(1, total)) * width);
    return `[${"█".repeat(filled)}${"░".repeat(width - filled)}] ${done}/${total}${failed ? `, ${failed} failed` : ""}`;
  }

  /** Prints a line above the spinner (or just prints it without a terminal). */
  log(line: string, visible: boolean): void {
    if (this.enabled) process.stderr.write("\r\x1b[2K");
    if (visible) process.stderr.write(`${line}\n`);
    if (this.enabled) this.draw();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (this.enabled) process.stderr.write("\r\x1b[2K");
  }

  private draw(): void {
    this.frame = (this.frame + 1) % FRAMES.length;
    process.stderr.write(`\r\x1b[2K${FRAMES[this.frame]} ${this.label} ${this.elapsed()}`);
  }
}
