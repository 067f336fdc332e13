import http from "node:http";

/*
 * Raw uploads over real HTTP, for the edge's tests: a test controls exactly
 * how much of a body is sent, and when, and sees how much it had written when
 * the answer came.
 */

export interface RawAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
  /** Body bytes the client had written when the answer came. */
  sent: number;
  /** Whether the server sent `100 Continue`. */
  continued: boolean;
}

export interface RawUpload {
  path: string;
  /** POST unless given. */
  method?: string;
  headers?: Record<string, string>;
  /** Announced `Content-Length`; omitted: the body is chunked. */
  declared?: number;
  /** Body bytes written, or until the answer comes; the body is never ended. */
  send: number;
}

/** Sends headers and part of a body, then waits for the answer without sending more. */
export function rawUpload(baseUrl: string, upload: RawUpload): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { "content-type": "application/json", ...upload.headers };
    if (upload.declared !== undefined) headers["content-length"] = String(upload.declared);
    const req = http.request(`${baseUrl}${upload.path}`, { method: upload.method ?? "POST", headers });
    let sent = 0;
    let answered = false;
    let continued = false;
    const chunk = Buffer.alloc(64 * 1024, "A");
    req.on("continue", () => {
      continued = true;
    });
    req.on("response", (res) => {
      answered = true;
      const parts: Buffer[] = [];
      res.on("data", (part: Buffer) => parts.push(part));
      res.on("end", () => {
        const text = Buffer.concat(parts).toString("utf8");
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: text ? JSON.parse(text) : undefined,
          sent,
          continued,
        });
        req.destroy();
      });
    });
    // Once answered, the server closes the connection under a client still writing: that is the point.
    req.on("error", (error) => {
      if (!answered) reject(error);
    });
    req.flushHeaders();
    if (headers.expect) return;
    const pump = () => {
      while (!answered && sent < upload.send) {
        const piece = chunk.subarray(0, Math.min(chunk.length, upload.send - sent));
        sent += piece.length;
        if (!req.write(piece)) {
          req.once("drain", pump);
          return;
        }
      }
    };
    pump();
  });
}

/**
 * Announces a `size`-byte upload to `path` with `Expect: 100-continue` and sends none of it: the edge's
 * refusal, or "admitted" when it answered `100 Continue` (the request is then abandoned at once).
 */
export function announceUpload(
  baseUrl: string,
  path: string,
  headers: Record<string, string>,
  size: number,
): Promise<RawAnswer | "admitted"> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${baseUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers, "content-length": String(size), expect: "100-continue" },
    });
    req.on("continue", () => {
      req.destroy();
      resolve("admitted");
    });
    req.on("response", (res) => {
      const parts: Buffer[] = [];
      res.on("data", (part: Buffer) => parts.push(part));
      res.on("end", () => {
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: JSON.parse(Buffer.concat(parts).toString("utf8")),
          sent: 0,
          continued: false,
        });
        req.destroy();
      });
    });
    req.on("error", (error) => {
      if (!req.destroyed) reject(error);
    });
    req.flushHeaders();
  });
}
