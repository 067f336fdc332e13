import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface ReceivedCall {
  path: string;
  headers: IncomingHttpHeaders;
  rawBody: string;
  at: number;
}

/**
 * A real HTTP receiver on loopback. Each path answers from its script of
 * statuses (the last one repeats); a status of 0 never answers, and
 * `{ status, afterMs }` answers late.
 */
/** An HTTP status, or one sent after a delay. */
export type ScriptedAnswer = number | { status: number; afterMs: number };

export class WebhookReceiver {
  readonly calls: ReceivedCall[] = [];
  private readonly scripts = new Map<string, ScriptedAnswer[]>();
  private readonly waiters = new Set<() => void>();
  private server: Server | undefined;
  url = "";

  script(path: string, statuses: ScriptedAnswer[]): void {
    this.scripts.set(path, [...statuses]);
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        const path = req.url ?? "/";
        this.calls.push({ path, headers: req.headers, rawBody: Buffer.concat(chunks).toString("utf8"), at: Date.now() });
        for (const waiter of this.waiters) waiter();
        const script = this.scripts.get(path) ?? [200];
        const next = script.length > 1 ? (script.shift() as ScriptedAnswer) : (script[0] as ScriptedAnswer);
        const { status, afterMs } = typeof next === "number" ? { status: next, afterMs: 0 } : next;
        if (status === 0) return; // hang: the sender's timeout must fire
        setTimeout(() => {
          if (status >= 300 && status < 400) res.writeHead(status, { Location: "/redirected" });
          else res.writeHead(status, { "Content-Type": "text/plain" });
          res.end(status < 300 ? "ok" : "no");
        }, afterMs);
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  callsTo(path: string): ReceivedCall[] {
    return this.calls.filter((call) => call.path === path);
  }

  /** Resolves once `path` has received `count` calls. */
  waitFor(path: string, count: number, timeoutMs = 30_000): Promise<ReceivedCall[]> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (this.callsTo(path).length >= count) {
          this.waiters.delete(check);
          clearTimeout(timer);
          resolve(this.callsTo(path));
        }
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`${path} got ${this.callsTo(path).length} of ${count} calls within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.add(check);
      check();
    });
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }
}
