import http from "node:http";
import https from "node:https";
import { isIP } from "node:net";
import { checkOutboundUrl } from "./network-guard";

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
 * POSTs JSON to a receiver that is not trusted: the host is resolved and
 * checked here, and the connection goes to the checked address (so a DNS
 * answer that changes in between cannot point it inside); redirects are not
 * followed; the whole exchange has a deadline; the answer is read only in part.
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
        // Pin the connection to the address that was checked.
        lookup: (_host, lookupOptions, callback) => {
          const family = isIP(address);
          if (lookupOptions.all)
            (callback as unknown as (error: null, all: Array<{ address: string; family: number }>) => void)(null, [
              { address, family },
            ]);
          else callback(null, address, family);
        },
        ...(url.protocol === "https:" && isIP(url.hostname) === 0 ? { servername: url.hostname } : {}),
        agent: false,
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
