import type { IncomingMessage, ServerResponse } from "node:http";
import { RetouchError } from "@retouch/core";
import type { BodyBudget } from "./body-budget";

/** Seconds a client refused for lack of room in the body budget should wait: uploads in flight take about this long. */
export const BODY_BUDGET_RETRY_AFTER_SECONDS = 2;

export function isJsonContentType(req: IncomingMessage): boolean {
  const type = req.headers["content-type"]?.split(";")[0]?.trim().toLowerCase();
  return type === "application/json" || (type?.endsWith("+json") ?? false);
}

function tooLarge(limitBytes: number): RetouchError {
  return new RetouchError("payload_too_large", `The request body is larger than ${limitBytes} bytes.`);
}

function noRoom(): RetouchError {
  return new RetouchError(
    "service_unavailable",
    "The server is reading as many large requests as it can hold at once; retry after the time given in Retry-After.",
    { retryAfterSeconds: BODY_BUDGET_RETRY_AFTER_SECONDS },
  );
}

/**
 * Reads a whole body, refusing as early as it can and holding at most the
 * budget's share: over `limitBytes` by `Content-Length` is a 413 before a byte
 * is read; a declared length the budget cannot hold is a 503 before a byte is
 * read; a chunked body is counted as it arrives (413 past the limit, 503 when
 * the budget runs out). The share is given back when the response closes.
 * Undefined for an empty body.
 */
export async function readBody(
  req: IncomingMessage,
  res: ServerResponse,
  options: { limitBytes: number; budget: BodyBudget },
): Promise<Buffer | undefined> {
  const { limitBytes, budget } = options;
  const header = req.headers["content-length"];
  const declared = header === undefined ? undefined : Number(header);
  if (declared !== undefined && declared > limitBytes) throw tooLarge(limitBytes);
  if (declared === 0) return undefined;

  let held = 0;
  res.once("close", () => budget.give(held));
  const hold = (bytes: number): boolean => {
    if (!budget.take(bytes)) return false;
    held += bytes;
    return true;
  };
  if (declared !== undefined && !hold(declared)) throw noRoom();
  // The client waits for this before sending: everything above was decided on the headers alone.
  if (req.headers.expect?.toLowerCase() === "100-continue") res.writeContinue();

  return new Promise<Buffer | undefined>((resolve, reject) => {
    // A declared length is read straight into one buffer of that size: no second copy to join chunks.
    const whole = declared === undefined ? undefined : Buffer.allocUnsafe(declared);
    const chunks: Buffer[] = [];
    let received = 0;
    const cleanup = () => {
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
      if (received + chunk.length > limitBytes) return fail(tooLarge(limitBytes));
      if (whole) chunk.copy(whole, received);
      else if (hold(chunk.length)) chunks.push(chunk);
      else return fail(noRoom());
      received += chunk.length;
    }
    function onEnd() {
      cleanup();
      if (received === 0) resolve(undefined);
      else resolve(whole ? whole.subarray(0, received) : Buffer.concat(chunks, received));
    }
    function onFail(error: Error) {
      fail(error);
    }
    function onClose() {
      // The client went away before the end of its body: nobody is left to answer.
      if (!req.complete) fail(new RetouchError("invalid_request", "The request body ended before its announced length."));
    }
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onFail);
    req.on("close", onClose);
  });
}
