import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { checkOutboundUrl } from "../src/lib/network-guard";
import { type FetchOptions, fetchBytes, OutboundFetchError, OutboundRefusedError } from "../src/lib/outbound-http";

/** fetchBytes against real HTTP servers on loopback. */
const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

interface TestServer {
  url: string;
  /** Requests received, by path. */
  hits: string[];
  connections: number;
}

async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<TestServer> {
  const state: TestServer = { url: "", hits: [], connections: 0 };
  const server = createServer((req, res) => {
    state.hits.push(req.url ?? "/");
    handler(req, res);
  });
  server.on("connection", () => state.connections++);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return state;
}

const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, ...Array(200).fill(7)]);
const options: FetchOptions = { allowInsecure: true, timeoutMs: 2000, maxBytes: 1024, maxRedirects: 3 };

describe("fetchBytes", () => {
  it("downloads the body, following redirects (relative and absolute) up to the limit", async () => {
    const host = await serve((req, res) => {
      if (req.url === "/a") res.writeHead(302, { Location: "/b" }).end();
      else if (req.url === "/b") res.writeHead(301, { Location: `${host.url}/c` }).end();
      else if (req.url === "/c") res.writeHead(307, { Location: "/image.png" }).end();
      else res.writeHead(200, { "Content-Type": "text/plain" }).end(png);
    });
    expect(await fetchBytes(`${host.url}/a`, options)).toEqual(png);
    expect(host.hits).toEqual(["/a", "/b", "/c", "/image.png"]);
    await expect(fetchBytes(`${host.url}/a`, { ...options, maxRedirects: 2 })).rejects.toMatchObject({
      failure: "redirects",
    });
  });

  it("re-checks every redirect hop: a redirect to a private address is refused without connecting to it", async () => {
    const inside = await serve((_req, res) => res.end(png));
    const outside = await serve((_req, res) => res.writeHead(302, { Location: `${inside.url}/secret` }).end());
    // The first server stands in for a public host; every other URL gets the real rules.
    const checkUrl = async (url: string) =>
      url.startsWith(outside.url)
        ? { ok: true as const, addresses: ["127.0.0.1"] }
        : checkOutboundUrl(url, { allowInsecure: false });
    const download = fetchBytes(`${outside.url}/start`, { ...options, allowInsecure: false, checkUrl });
    await expect(download).rejects.toBeInstanceOf(OutboundRefusedError);
    await expect(download).rejects.toThrow(/must use https:|public address/);
    expect(outside.hits).toEqual(["/start"]);
    expect(inside.connections).toBe(0);
  });

  it("connects to the checked address only: a private answer from DNS is refused before any connection", async () => {
    const host = await serve((_req, res) => res.end(png));
    const port = new URL(host.url).port;
    const download = fetchBytes(`https://images.example:${port}/x.png`, {
      ...options,
      allowInsecure: false,
      resolve: async () => ["127.0.0.1"],
    });
    await expect(download).rejects.toThrow(/public address/);
    expect(host.connections).toBe(0);
  });

  it("tells a name that does not exist (refused) from a lookup that failed for now (unreachable)", async () => {
    const failingWith = (code: string) => async () => {
      throw Object.assign(new Error(`lookup failed: ${code}`), { code });
    };
    const missing = fetchBytes("https://no-such-host.example/x.png", { ...options, resolve: failingWith("ENOTFOUND") });
    await expect(missing).rejects.toBeInstanceOf(OutboundRefusedError);
    await expect(missing).rejects.toThrow("host no-such-host.example does not resolve");
    await expect(
      fetchBytes("https://dns-trouble.example/x.png", { ...options, resolve: failingWith("EAI_AGAIN") }),
    ).rejects.toMatchObject({ failure: "unreachable", message: "host dns-trouble.example could not be resolved (EAI_AGAIN)" });
  });

  it("refuses a body over maxBytes, announced or streamed (chunked), without reading it all", async () => {
    const big = Buffer.alloc(64 * 1024, 1);
    big.set(png.subarray(0, 8));
    let streamedChunks = 0;
    const host = await serve((req, res) => {
      if (req.url === "/announced") res.writeHead(200, { "Content-Length": String(big.length) }).end(big);
      else {
        res.writeHead(200); // no Content-Length: chunked
        const pump = () => {
          while (streamedChunks < 10_000 && res.write(big)) streamedChunks++;
          if (streamedChunks < 10_000) res.once("drain", pump);
          else res.end();
        };
        pump();
      }
    });
    await expect(fetchBytes(`${host.url}/announced`, options)).rejects.toMatchObject({ failure: "too_large" });
    await expect(fetchBytes(`${host.url}/streamed`, { ...options, maxBytes: 100_000 })).rejects.toMatchObject({
      failure: "too_large",
    });
    expect(streamedChunks).toBeLessThan(10_000);
  });

  it("shows the first bytes to checkHead, which can stop the download", async () => {
    const host = await serve((_req, res) => res.end("<html>not an image</html>"));
    const refusal = new Error("not an image");
    let head: Buffer | undefined;
    await expect(
      fetchBytes(host.url, {
        ...options,
        checkHead: (bytes) => {
          head = bytes;
          throw refusal;
        },
      }),
    ).rejects.toBe(refusal);
    expect(head?.toString()).toBe("<html>not an ima");
  });

  it("reports an answer that is not 2xx with its status", async () => {
    const host = await serve((req, res) => res.writeHead(req.url === "/gone" ? 404 : 503).end("no"));
    await expect(fetchBytes(`${host.url}/gone`, options)).rejects.toMatchObject({ failure: "status", status: 404 });
    await expect(fetchBytes(`${host.url}/busy`, options)).rejects.toMatchObject({ failure: "status", status: 503 });
  });

  it("reports an unreachable host, a host that never answers, and a body cut short as unreachable", async () => {
    const closed = await serve(() => {});
    const closedUrl = closed.url;
    servers.pop()?.close();
    await expect(fetchBytes(closedUrl, options)).rejects.toMatchObject({ failure: "unreachable" });

    const silent = await serve(() => {});
    const started = Date.now();
    const timedOut = await fetchBytes(silent.url, { ...options, timeoutMs: 300 }).catch((error: unknown) => error);
    expect(timedOut).toBeInstanceOf(OutboundFetchError);
    expect(timedOut).toMatchObject({ failure: "unreachable", message: "no complete answer within 300 ms" });
    expect(Date.now() - started).toBeLessThan(2000);

    const slowBody = await serve((_req, res) => {
      res.writeHead(200, { "Content-Length": "500" });
      res.write(png.subarray(0, 50));
    });
    await expect(fetchBytes(slowBody.url, { ...options, timeoutMs: 300 })).rejects.toMatchObject({ failure: "unreachable" });

    const cut = await serve((req, res) => {
      res.writeHead(200, { "Content-Length": "500" });
      res.write(png.subarray(0, 50), () => req.socket.destroy());
    });
    await expect(fetchBytes(cut.url, options)).rejects.toMatchObject({ failure: "unreachable" });
  });

  it("stops when the caller's signal fires", async () => {
    const silent = await serve(() => {});
    const controller = new AbortController();
    const download = fetchBytes(silent.url, { ...options, signal: controller.signal });
    setTimeout(() => controller.abort(new Error("another download failed")), 50);
    await expect(download).rejects.toThrow("another download failed");
  });
});
