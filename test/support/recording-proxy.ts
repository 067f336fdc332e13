import { createServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A loopback HTTP proxy in front of a test app that records every request's
 * path (so a test sees whether a client streamed or polled) and, while `cut`
 * is set, drops a progress stream's connection right after its first event,
 * as a proxy or a network would lose it.
 */
export interface RecordingProxy {
  url: string;
  seen: string[];
  cut: boolean;
  /** The progress streams opened through it. */
  streams(): string[];
  /** The status polls (the SDK's tRPC `process.status`). */
  polls(): string[];
  close(): Promise<void>;
}

export async function startRecordingProxy(upstreamUrl: string): Promise<RecordingProxy> {
  const upstream = new URL(upstreamUrl);
  const seen: string[] = [];
  const state = { cut: false };
  const server = createServer((req, res) => {
    const path = req.url ?? "/";
    seen.push(path);
    const forward = httpRequest(
      { host: upstream.hostname, port: upstream.port, method: req.method, path, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        if (!(state.cut && path.startsWith("/api/process/events"))) return void answer.pipe(res);
        answer.on("data", (chunk: Buffer) => {
          res.write(chunk);
          if (chunk.toString().includes("event: status")) {
            answer.destroy();
            res.socket?.destroy();
          }
        });
      },
    );
    forward.on("error", () => res.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    get cut() {
      return state.cut;
    },
    set cut(value: boolean) {
      state.cut = value;
    },
    streams: () => seen.filter((path) => path.startsWith("/api/process/events")),
    polls: () => seen.filter((path) => path.startsWith("/trpc/process.status")),
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
