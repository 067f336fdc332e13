import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { checkOutboundUrl, isPublicAddress } from "../src/lib/network-guard";
import { OutboundRefusedError, postJson } from "../src/lib/outbound-http";

describe("isPublicAddress", () => {
  it.each(["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "93.184.216.34"])("accepts %s", (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });
  it.each([
    "127.0.0.1",
    "10.0.0.1",
    "172.16.5.4",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "224.0.0.1",
    "::1",
    "::",
    "fe80::1",
    "fc00::1",
    "fd12:3456::1",
    "::ffff:10.0.0.1",
    "::ffff:127.0.0.1",
    "not an address",
  ])("refuses %s", (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });
});

// The IPv6 forms that carry an IPv4 address are judged by the address they carry: a relay or translator would go there.
describe("isPublicAddress: IPv6 forms carrying IPv4", () => {
  it.each([
    ["IPv4-compatible, hex", "::a00:1"],
    ["IPv4-compatible, dotted", "::10.0.0.1"],
    ["IPv4-compatible loopback", "::7f00:1"],
    ["IPv4-mapped, hex", "::ffff:a00:1"],
    ["IPv4-mapped, long form", "0:0:0:0:0:ffff:0a00:0001"],
    ["IPv4-mapped metadata address", "::ffff:a9fe:a9fe"],
    ["IPv4-translated (SIIT)", "::ffff:0:a00:1"],
    ["6to4 of 10.0.0.1", "2002:0a00:0001::"],
    ["6to4 of 127.0.0.1", "2002:7f00:1::1"],
    ["Teredo with a private client (10.0.0.1 inverted)", "2001:0:4136:e378:8000:63bf:f5ff:fffe"],
    ["Teredo with a private server", "2001:0:a00:1:8000:63bf:f7f7:f7f7"],
    ["NAT64 well-known prefix of 10.0.0.1", "64:ff9b::10.0.0.1"],
    ["NAT64 well-known prefix, hex", "64:ff9b::a9fe:a9fe"],
    ["NAT64 local-use prefix", "64:ff9b:1::a00:1"],
    ["NAT64 local-use prefix, any address", "64:ff9b:1:808:800:800::"],
    ["discard-only", "100::1"],
    ["benchmarking", "2001:2::1"],
    ["documentation (3fff::/20)", "3fff::1"],
    ["site-local (deprecated)", "fec0::1"],
    ["SRv6 SID", "5f00::1"],
    ["outside global unicast", "4000::1"],
    ["scoped link-local", "fe80::1%lo"],
  ])("refuses %s (%s)", (_label, address) => {
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each([
    ["6to4 of 8.8.8.8", "2002:808:808::1"],
    ["Teredo with public server and client", "2001:0:4136:e378:8000:63bf:f7f7:f7f7"],
    ["NAT64 well-known prefix of 8.8.8.8", "64:ff9b::8.8.8.8"],
    ["IPv4-mapped public", "::ffff:808:808"],
    ["an ordinary global address", "2a00:1450:4001:80b::200e"],
  ])("accepts %s (%s)", (_label, address) => {
    expect(isPublicAddress(address)).toBe(true);
  });

  it("checkOutboundUrl refuses a host that resolves to a 6to4 form of a private address", async () => {
    const verdict = await checkOutboundUrl("https://hooks.example.com/x", {
      allowInsecure: false,
      resolve: async () => ["2002:a9fe:a9fe::1"],
    });
    expect(verdict).toMatchObject({ ok: false, reason: expect.stringMatching(/public address/) });
  });
});

describe("checkOutboundUrl", () => {
  const resolveTo =
    (...addresses: string[]) =>
    async () =>
      addresses;

  it("accepts https to a host with only public addresses", async () => {
    expect(
      await checkOutboundUrl("https://hooks.example.com/x", { allowInsecure: false, resolve: resolveTo("93.184.216.34") }),
    ).toEqual({
      ok: true,
      addresses: ["93.184.216.34"],
    });
  });

  it.each([
    ["http:", "http://hooks.example.com/x", resolveTo("93.184.216.34"), /https/],
    ["a private answer", "https://hooks.example.com/x", resolveTo("10.0.0.7"), /public address/],
    [
      "one private answer among public ones",
      "https://hooks.example.com/x",
      resolveTo("93.184.216.34", "127.0.0.1"),
      /public address/,
    ],
    ["credentials in the URL", "https://user:pw@hooks.example.com/x", resolveTo("93.184.216.34"), /credentials/],
    ["ftp:", "ftp://hooks.example.com/x", resolveTo("93.184.216.34"), /https/],
  ])("refuses %s", async (_label, url, resolve, reason) => {
    const verdict = await checkOutboundUrl(url, { allowInsecure: false, resolve });
    expect(verdict.ok).toBe(false);
    if (!verdict.ok) expect(verdict.reason).toMatch(reason);
  });

  it("lets the development switch through http: and private addresses", async () => {
    expect((await checkOutboundUrl("http://127.0.0.1:9/x", { allowInsecure: true })).ok).toBe(true);
  });
});

describe("postJson", () => {
  let server: Server | undefined;
  let hits = 0;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    server = undefined;
    hits = 0;
  });
  async function listen(handler: Parameters<typeof createServer>[1]): Promise<number> {
    server = createServer((req, res) => {
      hits++;
      handler?.(req, res);
    });
    await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
    return (server.address() as AddressInfo).port;
  }
  const options = { allowInsecure: true, timeoutMs: 1000, maxResponseBytes: 1024 };

  it("re-checks the address at send time: a name that now resolves inside is refused without connecting", async () => {
    const port = await listen((_req, res) => res.end("ok"));
    const send = postJson(
      `https://rebinding.example:${port}/hook`,
      "{}",
      {},
      { ...options, allowInsecure: false, resolve: async () => ["127.0.0.1"] },
    );
    await expect(send).rejects.toBeInstanceOf(OutboundRefusedError);
    expect(hits).toBe(0);
  });

  it("connects to the address it checked, whatever DNS says later", async () => {
    const port = await listen((_req, res) => res.end("pinned"));
    let lookups = 0;
    const response = await postJson(
      `http://pinned.example:${port}/hook`,
      "{}",
      {},
      {
        ...options,
        resolve: async () => {
          lookups++;
          return ["127.0.0.1"];
        },
      },
    );
    expect(response).toEqual({ status: 200, preview: "pinned" });
    expect(lookups).toBe(1);
  });

  it("reads at most maxResponseBytes of an endless answer", async () => {
    const port = await listen((_req, res) => {
      res.writeHead(200);
      const chunk = Buffer.alloc(64 * 1024, 97);
      const pump = () => {
        while (res.write(chunk)) {
          /* keep writing until the socket pushes back */
        }
        res.once("drain", pump);
      };
      pump();
    });
    const response = await postJson(`http://127.0.0.1:${port}/`, "{}", {}, options);
    expect(response.status).toBe(200);
    expect(response.preview.length).toBeLessThanOrEqual(500);
  });

  it("gives up when the receiver does not answer in time", async () => {
    const port = await listen(() => {});
    await expect(postJson(`http://127.0.0.1:${port}/`, "{}", {}, { ...options, timeoutMs: 300 })).rejects.toThrow(
      /no answer within 300 ms/,
    );
  });

  it("does not follow a redirect", async () => {
    const port = await listen((req, res) => {
      if (req.url === "/start") {
        res.writeHead(307, { Location: "/elsewhere" });
        res.end();
      } else res.end("followed");
    });
    const response = await postJson(`http://127.0.0.1:${port}/start`, "{}", {}, options);
    expect(response.status).toBe(307);
    expect(hits).toBe(1);
  });
});
