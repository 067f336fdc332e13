import { lookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";

/**
 * Outbound requests (webhooks) must not reach inside the operator's network.
 * These ranges are private, loopback, link-local (cloud metadata lives at
 * 169.254.169.254), carrier-grade NAT, multicast, reserved or documentation.
 */
// Two lists: Node's BlockList also matches IPv4 addresses against IPv6 rules (as mapped addresses).
const blockedV4 = new BlockList();
const blockedV6 = new BlockList();
for (const [network, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const) {
  blockedV4.addSubnet(network, prefix, "ipv4");
}
for (const [network, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["::ffff:0:0", 96],
  ["64:ff9b::", 96],
  ["100::", 64],
  ["2001:db8::", 32],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
] as const) {
  blockedV6.addSubnet(network, prefix, "ipv6");
}

export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  if (family === 6) {
    // An IPv4-mapped address (::ffff:10.0.0.1) is judged as the IPv4 address it carries.
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (mapped?.[1]) return !blockedV4.check(mapped[1], "ipv4");
    return !blockedV6.check(address, "ipv6");
  }
  return !blockedV4.check(address, "ipv4");
}

/** `transient`: the name could not be resolved for now (not "no such name"); worth a retry later. */
export type UrlVerdict = { ok: true; addresses: string[] } | { ok: false; reason: string; transient?: boolean };

/** Resolver answers that say the name does not exist (or has no address), as opposed to a failed lookup. */
const NO_SUCH_NAME = new Set(["ENOTFOUND", "ENODATA", "EAI_NONAME", "EAI_NODATA"]);

/**
 * Checks that a URL is `https:` and that every address its host resolves to is
 * public. `allowInsecure` (development) accepts `http:` and private addresses.
 */
export async function checkOutboundUrl(
  text: string,
  options: { allowInsecure: boolean; resolve?: (host: string) => Promise<string[]> },
): Promise<UrlVerdict> {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { ok: false, reason: "is not a valid URL" };
  }
  if (url.protocol !== "https:" && !(options.allowInsecure && url.protocol === "http:")) {
    return { ok: false, reason: "must use https:" };
  }
  if (url.username || url.password) return { ok: false, reason: "must not carry credentials" };
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const resolve =
    options.resolve ??
    (async (name: string) => (await lookup(name, { all: true, verbatim: true })).map((entry) => entry.address));
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : await resolve(host);
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code !== undefined && !NO_SUCH_NAME.has(code)) {
      return { ok: false, reason: `host ${host} could not be resolved (${code})`, transient: true };
    }
    return { ok: false, reason: `host ${host} does not resolve` };
  }
  if (addresses.length === 0) return { ok: false, reason: `host ${host} does not resolve` };
  if (!options.allowInsecure) {
    const inside = addresses.find((address) => !isPublicAddress(address));
    if (inside) return { ok: false, reason: `must point to a public address (${host} resolves to ${inside})` };
  }
  return { ok: true, addresses };
}
