import { createHash } from "node:crypto";
import { writeFile } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";

export interface MirrorRequest {
  file: string;
  /** The Range header, if any. */
  range: string | undefined;
  status: number;
}

/**
 * A model mirror on loopback, as RETOUCH_MODEL_MIRROR points at: serves files
 * at `/models/<file>`, honours `Range: bytes=N-` with 206, and can misbehave on
 * demand (drop a connection mid-file, hold a response, ignore Range).
 */
export interface ModelMirror {
  url: string;
  requests: MirrorRequest[];
  serve(file: string, bytes: Buffer): void;
  /** The next response for `file` sends its headers and `afterBytes` bytes of the body, then the connection is destroyed. */
  cutNext(file: string, afterBytes: number): void;
  /** Responses for `file` wait until the returned function is called. */
  hold(file: string): () => void;
  /** Answer every request with the whole file (200), as a server without Range support does. */
  ignoreRange(on: boolean): void;
  /** Resolves when a request for `file` has arrived (at once if one did). */
  requested(file: string): Promise<void>;
  close(): Promise<void>;
}

export async function startModelMirror(): Promise<ModelMirror> {
  const files = new Map<string, Buffer>();
  const cuts = new Map<string, number>();
  const holds = new Map<string, Promise<void>>();
  const arrivals = new Map<string, () => void>();
  const arrived = new Set<string>();
  const requests: MirrorRequest[] = [];
  let rangeIgnored = false;

  const server = http.createServer(async (request, response) => {
    const file = decodeURIComponent((request.url ?? "").replace(/^\/models\//, ""));
    const range = request.headers.range;
    const record = (status: number) => requests.push({ file, range, status });
    arrived.add(file);
    arrivals.get(file)?.();
    await holds.get(file);
    const bytes = files.get(file);
    if (!bytes) {
      record(404);
      response.writeHead(404).end("not here");
      return;
    }
    let start = 0;
    const match = /^bytes=(\d+)-$/.exec(range ?? "");
    if (match && !rangeIgnored) {
      start = Number(match[1]);
      if (start >= bytes.length) {
        record(416);
        response.writeHead(416, { "content-range": `bytes */${bytes.length}` }).end();
        return;
      }
      record(206);
      response.writeHead(206, {
        "content-length": bytes.length - start,
        "content-range": `bytes ${start}-${bytes.length - 1}/${bytes.length}`,
        "content-type": "application/octet-stream",
      });
    } else {
      record(200);
      response.writeHead(200, { "content-length": bytes.length, "content-type": "application/octet-stream" });
    }
    const body = bytes.subarray(start);
    const cut = cuts.get(file);
    if (cut !== undefined) {
      cuts.delete(file);
      // The bytes reach the client before the connection goes, like a network that drops mid-transfer.
      response.write(body.subarray(0, cut), () => setTimeout(() => response.socket?.destroy(), 50));
      return;
    }
    response.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    // Under a path and with a trailing slash, as a mirror's base URL may well be given.
    url: `http://127.0.0.1:${port}/models/`,
    requests,
    serve: (file, bytes) => void files.set(file, bytes),
    cutNext: (file, afterBytes) => void cuts.set(file, afterBytes),
    hold(file) {
      let release = () => {};
      holds.set(
        file,
        new Promise<void>((resolve) => {
          release = resolve;
        }),
      );
      return () => {
        holds.delete(file);
        release();
      };
    },
    ignoreRange: (on) => {
      rangeIgnored = on;
    },
    requested(file) {
      if (arrived.has(file)) return Promise.resolve();
      return new Promise((resolve) => arrivals.set(file, resolve));
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export const sha256Of = (bytes: Buffer): string => createHash("sha256").update(bytes).digest("hex");

/**
 * Writes a RETOUCH_MODEL_CATALOG file with one model per entry (a background
 * model unless `inpainting` gives an inpainting model's kind and size), its
 * checksum and size taken from the bytes a test mirror serves.
 */
export async function writeTestCatalog(
  dir: string,
  models: {
    name: string;
    bytes: Buffer;
    size?: number;
    sha256?: string;
    inpainting?: { kind: "lama" | "migan"; size: number };
    /** Where it is published; default an address that does not resolve (tests pull through a mirror). */
    urls?: string[];
  }[],
): Promise<string> {
  const file = path.join(dir, "catalog.json");
  const imagenet = { mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] };
  await writeFile(
    file,
    JSON.stringify({
      models: models.map((model) => ({
        name: model.name,
        title: `Test model ${model.name}`,
        file: `${model.name}.onnx`,
        urls: model.urls ?? [`https://models.invalid/${model.name}.onnx`],
        size: model.size ?? model.bytes.length,
        checksums: { sha256: model.sha256 ?? sha256Of(model.bytes) },
        checksumSource: "computed by the test from the bytes its mirror serves",
        ...(model.inpainting
          ? { task: "inpainting", input: model.inpainting }
          : { task: "background", input: { kind: "u2net", size: 64, ...imagenet } }),
        licence: { id: "MIT", source: "test fixture" },
        project: "https://example.invalid/test-models",
      })),
    }),
  );
  return file;
}
