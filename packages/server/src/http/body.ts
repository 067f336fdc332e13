import type { IncomingMessage, ServerResponse } from "node:http";
import { RetouchError } from "@retouch/core";
import type { BodyShare } from "./body-budget";

/** Seconds a client refused for lack of room in the body budget should wait: uploads in flight take about this long. */
export const BODY_BUDGET_RETRY_AFTER_SECONDS = 2;

/** The media type of a request's body, lower-case, without parameters. */
export function mediaType(req: IncomingMessage): string | undefined {
  return req.headers["content-type"]?.split(";")[0]?.trim().toLowerCase();
}

export function isJsonContentType(req: IncomingMessage): boolean {
  const type = mediaType(req);
  return type === "application/json" || (type?.endsWith("+json") ?? false);
}

/** Whether the request announces a body at all: a non-zero `Content-Length`, or a transfer coding (chunked). */
export function announcesBody(req: IncomingMessage): boolean {
  const length = req.headers["content-length"];
  if (length !== undefined) return Number(length) > 0;
  return req.headers["transfer-encoding"] !== undefined;
}

function tooLarge(limitBytes: number): RetouchError {
  return new RetouchError("payload_too_large", `The request body is larger than ${limitBytes} bytes.`);
}

function noRoom(): RetouchError {
  return new RetouchError(
    "service_unavailable",
    "The server is reading as many request bodies as it can hold at once; retry after the time given in Retry-After.",
    { retryAfterSeconds: BODY_BUDGET_RETRY_AFTER_SECONDS },
  );
}

function idle(idleTimeoutMs: number): RetouchError {
  return new RetouchError(
    "request_timeout",
    `No byte of the request body arrived for ${idleTimeoutMs / 1000} s; send the request again without pausing.`,
  );
}

function aborted(): RetouchError {
  return new RetouchError("invalid_request", "The request body ended before its announced length.");
}

export interface ReadBodyOptions {
  limitBytes: number;
  /** The request's share of the body budget: taken as bytes arrive, released by the caller once it has parsed them. */
  share: BodyShare;
  /** A body with no byte for this long is refused (408). */
  idleTimeoutMs: number;
  /** Looks at each chunk as it arrives and throws a RetouchError to refuse the body there (JSON nesting). */
  inspect?: ((chunk: Buffer) => void) | undefined;
}

/**
 * Reads a whole body, refusing as early as it can and holding only what has
 * arrived: over `limitBytes` by `Content-Length` is a 413 before a byte is
 * read, and so is a declared length that cannot fit in the share's room now
 * (503); then every chunk is counted as it arrives (413 past the limit, 503
 * when the share's room runs out), and a body idle for `idleTimeoutMs` is a
 * 408. Undefined for an empty body.
 */
export async function readBody(req: IncomingMessage, res: ServerResponse, options: ReadBodyOptions): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  const received = await streamBody(req, res, options, (chunk) => {
    chunks.push(chunk);
  });
  return received === 0 ? undefined : chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, received);
}

/**
 * `readBody`'s checks, with each chunk handed to `consume` instead of kept
 * (a streaming parser: multipart), which may throw a RetouchError to refuse
 * the body there; the rest is then left unread. Resolves with the bytes read
 * once the body has ended.
 */
export async function streamBody(
  req: IncomingMessage,
  res: ServerResponse,
  options: ReadBodyOptions,
  consume: (chunk: Buffer) => void,
): Promise<number> {
  const { limitBytes, share, idleTimeoutMs, inspect } = options;
  const header = req.headers["content-length"];
  const declared = header === undefined ? undefined : Number(header);
  if (declared !== undefined && declared > limitBytes) throw tooLarge(limitBytes);
  if (declared === 0) return 0;
  // A hint only: an announced length is never taken up front (nobody need send it), but one that could not fit now
  // is refused before the client sends it.
  if (declared !== undefined && !share.fits(declared)) throw noRoom();
  // The client waits for this before sending: everything above was decided on the headers alone.
  if (req.headers.expect?.toLowerCase() === "100-continue") res.writeContinue();

  return new Promise<number>((resolve, reject) => {
    let received = 0;
    const timer = setTimeout(() => fail(idle(idleTimeoutMs)), idleTimeoutMs);
    const cleanup = () => {
      clearTimeout(timer);
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onFail);
      req.off("close", onClose);
    };
    const fail = (error: unknown) => {
      cleanup();
      // Leave the rest unread: the refusal closes the connection.
      req.pause();
      reject(error);
    };
    function onData(chunk: Buffer) {
      timer.refresh();
      if (received + chunk.length > limitBytes) return fail(tooLarge(limitBytes));
      try {
        inspect?.(chunk);
      } catch (error) {
        return fail(error);
      }
      if (!share.take(chunk.length)) return fail(noRoom());
      received += chunk.length;
      try {
        consume(chunk);
      } catch (error) {
        return fail(error);
      }
    }
    function onEnd() {
      cleanup();
      resolve(received);
    }
    // Node reports a client that went away mid-body as an error on the request ("aborted"): the client's doing.
    function onFail() {
      fail(aborted());
    }
    function onClose() {
      // The client went away before the end of its body: nobody is left to answer.
      if (!req.complete) fail(aborted());
    }
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onFail);
    req.on("close", onClose);
  });
}
