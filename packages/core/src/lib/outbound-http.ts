import http, { type IncomingMessage, type RequestOptions } from "node:http";
import https from "node:https";
import { isIP, type LookupFunction } from "node:net";
import { Readable } from "node:stream";
import { checkOutboundUrl, type UrlVerdict } from "./network-guard";

export class OutboundRefusedError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = "OutboundRefusedError";
  }
}

export interface OutboundOptions {
  allowInsecure: boolean;
  timeoutMs: number;
  /** Bytes of the answer read at most; the rest is discarded. */
  maxResponseBytes: number;
  resolve?: (host: string) => Promise<string[]>;
}

export interface OutboundResponse {
  status: number;
  /** The start of the answer's body, for the delivery log. */
  preview: string;
}

/**
 * Options that send a request to `address`, whatever the URL's host resolves
 * to by the time the socket opens (so a DNS answer that changes between the
 * check and the connection cannot point it inside), with TLS still verified
 * against the host name.
 */
function pinnedTo(url: URL, address: string): Pick<RequestOptions, "lookup" | "agent"> & { servername?: string } {
  const family = isIP(address);
  const lookup: LookupFunction = (_host, lookupOptions, callback) => {
    if (lookupOptions.all)
      (callback as unknown as (error: null, all: Array<{ address: string; family: number }>) => void)(null, [
        { address, family },
      ]);
    else callback(null, address, family);
  };
  return {
    lookup,
    agent: false,
    ...(url.protocol === "https:" && isIP(url.hostname) === 0 ? { servername: url.hostname } : {}),
  };
}

/**
 * POSTs JSON to a receiver that is not trusted: the host is resolved and
 * checked here, and the connection goes to the checked address; redirects are
 * not followed; the whole exchange has a deadline; the answer is read only in part.
 */
export async function postJson(
  target: string,
  body: string,
  headers: Record<string, string>,
  options: OutboundOptions,
): Promise<OutboundResponse> {
  const verdict = await checkOutboundUrl(target, {
    allowInsecure: options.allowInsecure,
    ...(options.resolve ? { resolve: options.resolve } : {}),
  });
  if (!verdict.ok) throw new OutboundRefusedError(`webhook_url ${verdict.reason}`);
  const url = new URL(target);
  const address = verdict.addresses[0] as string;
  const client = url.protocol === "https:" ? https : http;
  return new Promise<OutboundResponse>((resolve, reject) => {
    const request = client.request(
      url,
      {
        method: "POST",
        headers: {
          ...headers,
          "Content-Type": "application/json",
          "Content-Length": Buffer.byteLength(body),
          "User-Agent": "Retouch-Webhooks/1.0",
        },
        ...pinnedTo(url, address),
      },
      (response) => {
        const chunks: Buffer[] = [];
        let received = 0;
        response.on("data", (chunk: Buffer) => {
          if (received < options.maxResponseBytes) chunks.push(chunk.subarray(0, options.maxResponseBytes - received));
          received += chunk.length;
          if (received >= options.maxResponseBytes) response.destroy();
        });
        const finish = () =>
          resolve({ status: response.statusCode ?? 0, preview: Buffer.concat(chunks).toString("utf8").slice(0, 500) });
        response.on("end", finish);
        response.on("close", finish);
        response.on("error", finish);
      },
    );
    const timer = setTimeout(() => request.destroy(new Error(`no answer within ${options.timeoutMs} ms`)), options.timeoutMs);
    request.on("error", (error) => reject(error));
    request.on("close", () => clearTimeout(timer));
    request.end(body);
  });
}

/** Why a download failed: `unreachable` and 5xx answers are the host's trouble (worth a retry), the rest are not. */
export type FetchFailure = "unreachable" | "status" | "too_large" | "redirects";

export class OutboundFetchError extends Error {
  constructor(
    readonly failure: FetchFailure,
    message: string,
    /** The HTTP status, for `status`. */
    readonly status?: number,
    options: { cause?: unknown } = {},
  ) {
    super(message, options);
    this.name = "OutboundFetchError";
  }
}

export interface FetchOptions {
  allowInsecure: boolean;
  /** For the whole download: every redirect hop and the body. */
  timeoutMs: number;
  /** The body is refused past this many bytes (from Content-Length, else as it streams). */
  maxBytes: number;
  maxRedirects: number;
  headers?: Record<string, string>;
  /** Sees the first bytes of the body (at least 16, or all of a shorter one); throwing aborts the download. */
  checkHead?: (head: Buffer) => void;
  /** Sees every chunk's size as it arrives; throwing aborts the download (a budget shared by several downloads). */
  onBytes?: (count: number) => void;
  signal?: AbortSignal;
  resolve?: (host: string) => Promise<string[]>;
  /** For tests: how each hop's URL is judged (default: `checkOutboundUrl` with the options above). */
  checkUrl?: (url: string) => Promise<UrlVerdict>;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const HEAD_BYTES = 16;

/**
 * GETs a URL given by a client, as `postJson` guards a webhook: every hop
 * (the URL, then each redirect) is checked and its connection pinned to the
 * checked address; at most `maxRedirects` redirects; one deadline for the
 * whole download; the body capped, its first bytes shown to `checkHead`.
 * Throws OutboundRefusedError when a hop's address is not allowed or its
 * name does not exist (no connection is made to it), OutboundFetchError when
 * the download fails (a failed name lookup included), or
 * whatever `checkHead` / `onBytes` threw.
 */
export async function fetchBytes(target: string, options: FetchOptions): Promise<Buffer> {
  const deadline = AbortSignal.timeout(options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, deadline]) : deadline;
  const checkUrl =
    options.checkUrl ??
    ((url: string) =>
      checkOutboundUrl(url, { allowInsecure: options.allowInsecure, ...(options.resolve ? { resolve: options.resolve } : {}) }));
  // An abort surfaces as whatever the socket or stream threw; say what it was.
  const failed = (error: unknown): never => {
    if (deadline.aborted) {
      throw new OutboundFetchError("unreachable", `no complete answer within ${options.timeoutMs} ms`, undefined, {
        cause: error,
      });
    }
    if (signal.aborted) throw signal.reason;
    throw error;
  };
  let current = target;
  for (let hop = 0; ; hop++) {
    const verdict = await checkUrl(current).catch(failed);
    if (!verdict.ok && verdict.transient) throw new OutboundFetchError("unreachable", verdict.reason);
    if (!verdict.ok) throw new OutboundRefusedError(verdict.reason);
    if (signal.aborted) failed(signal.reason);
    const url = new URL(current);
    const response = await getPinned(url, verdict.addresses[0] as string, options.headers ?? {}, signal).catch(failed);
    const status = response.statusCode ?? 0;
    if (REDIRECTS.has(status)) {
      response.destroy();
      const location = response.headers.location;
      if (!location) throw new OutboundFetchError("status", `the host answered ${status} without a Location`, status);
      if (hop >= options.maxRedirects) {
        throw new OutboundFetchError("redirects", `more than ${options.maxRedirects} redirects`);
      }
      current = new URL(location, url).href;
      continue;
    }
    if (status < 200 || status > 299) {
      response.destroy();
      throw new OutboundFetchError(
        "status",
        `the host answered ${status}${response.statusMessage ? ` ${response.statusMessage}` : ""}`,
        status,
      );
    }
    return readBody(response, options).catch(failed);
  }
}

function getPinned(url: URL, address: string, headers: Record<string, string>, signal: AbortSignal): Promise<IncomingMessage> {
  const client = url.protocol === "https:" ? https : http;
  return new Promise<IncomingMessage>((resolve, reject) => {
    const request = client.request(url, { method: "GET", headers, signal, ...pinnedTo(url, address) }, resolve);
    request.on("error", (error) =>
      reject(
        signal.aborted
          ? error
          : new OutboundFetchError("unreachable", `the host could not be reached (${error.message})`, undefined, {
              cause: error,
            }),
      ),
    );
    request.end();
  });
}

function readBody(response: IncomingMessage, options: FetchOptions): Promise<Buffer> {
  const tooLarge = () => new OutboundFetchError("too_large", `the image is larger than ${options.maxBytes} bytes`);
  const announced = Number(response.headers["content-length"]);
  if (Number.isFinite(announced) && announced > options.maxBytes) {
    response.destroy();
    return Promise.reject(tooLarge());
  }
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    let headChecked = false;
    const fail = (error: unknown) => {
      response.destroy();
      reject(error);
    };
    const checkHead = () => {
      headChecked = true;
      options.checkHead?.(Buffer.concat(chunks).subarray(0, HEAD_BYTES));
    };
    response.on("data", (chunk: Buffer) => {
      received += chunk.length;
      try {
        if (received > options.maxBytes) throw tooLarge();
        options.onBytes?.(chunk.length);
        chunks.push(chunk);
        if (!headChecked && received >= HEAD_BYTES) checkHead();
      } catch (error) {
        fail(error);
      }
    });
    response.on("end", () => {
      try {
        if (!headChecked) checkHead();
        resolve(Buffer.concat(chunks, received));
      } catch (error) {
        reject(error);
      }
    });
    response.on("error", (error) =>
      reject(new OutboundFetchError("unreachable", `the download broke off (${error.message})`, undefined, { cause: error })),
    );
    response.on("close", () => {
      if (!response.complete) reject(new OutboundFetchError("unreachable", "the download broke off before the end"));
    });
  });
}

/** Statuses whose answer has no body (a Response refuses one). */
const BODYLESS_STATUSES = new Set([204, 205, 304]);

/**
 * A Fetch-shaped GET (or HEAD) through the same guard as webhooks and image
 * URLs: `checkOutboundUrl` resolves the host once and refuses any address that
 * is not public (network-guard.ts, the one list of what is inside), the
 * connection is pinned to the checked address with TLS verified against the
 * host name, and a redirect is answered as it is, never followed. For seams
 * that want a `fetch` (better-auth's Client ID Metadata Document transport);
 * the caller bounds the body and the time (through `init.signal`).
 */
export async function guardedFetch(
  input: Request | string | URL,
  init: RequestInit | undefined,
  options: { allowInsecure: boolean; resolve?: (host: string) => Promise<string[]> },
): Promise<Response> {
  const asked = new Request(input, init);
  if (asked.method !== "GET" && asked.method !== "HEAD")
    throw new TypeError(`only GET and HEAD are fetched, not ${asked.method}`);
  const verdict = await checkOutboundUrl(asked.url, {
    allowInsecure: options.allowInsecure,
    ...(options.resolve ? { resolve: options.resolve } : {}),
  });
  if (!verdict.ok) throw new OutboundRefusedError(`${asked.url} ${verdict.reason}`);
  const url = new URL(asked.url);
  const client = url.protocol === "https:" ? https : http;
  const headers = Object.fromEntries(asked.headers.entries());
  const signal = init?.signal ?? undefined;
  return new Promise<Response>((resolve, reject) => {
    const request = client.request(
      url,
      { method: asked.method, headers, ...(signal ? { signal } : {}), ...pinnedTo(url, verdict.addresses[0] as string) },
      (response) => {
        const status = response.statusCode ?? 502;
        const answerHeaders = new Headers();
        for (const [name, value] of Object.entries(response.headers)) {
          for (const item of ([] as Array<string | undefined>).concat(value))
            if (item !== undefined) answerHeaders.append(name, item);
        }
        const bodyless = asked.method === "HEAD" || BODYLESS_STATUSES.has(status);
        if (bodyless) response.resume();
        const body = bodyless ? null : (Readable.toWeb(response) as ReadableStream<Uint8Array>);
        resolve(new Response(body, { status, statusText: response.statusMessage ?? "", headers: answerHeaders }));
      },
    );
    request.once("error", reject);
    request.end();
  });
}
