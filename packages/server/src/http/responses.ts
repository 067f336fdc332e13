import { type RetouchError, toRetouchError, trpcErrorResponse } from "@retouch/core";

export function jsonResponse(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "Content-Type": "application/json; charset=utf-8", ...headers },
  });
}

/** The one error shape `{ code, message }` with the status and headers (`Retry-After`) of the error table. */
export function errorResponse(error: unknown): Response {
  const domain = toRetouchError(error);
  return jsonResponse(domain.status, domain.toBody(), domain.headers());
}

/** The same refusal in the envelope tRPC clients parse (for answers given before the tRPC adapter runs). */
export function trpcRefusal(error: RetouchError): Response {
  return jsonResponse(error.status, trpcErrorResponse(error), error.headers());
}

/** A page for people. The host's Content-Security-Policy covers it (see security.ts); it is never cached. */
export function htmlResponse(status: number, html: string, headers: Record<string, string> = {}): Response {
  return new Response(html, {
    status,
    headers: { "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store", ...headers },
  });
}
