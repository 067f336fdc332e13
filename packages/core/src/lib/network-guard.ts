import { lookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";

/**
 * Outbound requests (webhooks, `image_url`, client metadata documents) must
 * not reach inside the operator's network. This is the one judge of an
 * address, after the IANA special-purpose address registries (IPv4 and IPv6):
 * private, loopback, link-local (cloud metadata lives at 169.254.169.254),
 * carrier-grade NAT, multicast, reserved, benchmarking and documentation
 * ranges are refused; an IPv6 address that carries an IPv4 address (mapped,
 * compatible, translated, NAT64, 6to4, Teredo) is judged by the IPv4 address
 * it carries, since that is where a translator or relay would send it.
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
// Only global unicast (2000::/3) can be public at all; below are its special-purpose parts that are not.
// The forms carrying an IPv4 address are decoded first (see `embeddedIPv4`), so they never reach these lists.
const globalUnicast = new BlockList();
globalUnicast.addSubnet("2000::", 3, "ipv6");
for (const [network, prefix] of [
  // IETF protocol assignments (2001::/23) that are not globally reachable: benchmarking, deprecated ORCHID.
  ["2001:2::", 48],
  ["2001:10::", 28],
  // Documentation (RFC 3849, RFC 9637).
  ["2001:db8::", 32],
  ["3fff::", 20],
  // SRv6 segment identifiers (RFC 9602): inside an operator's domain only.
  ["5f00::", 16],
] as const) {
  blockedV6.addSubnet(network, prefix, "ipv6");
}

/** The eight 16-bit groups of an IPv6 address (a trailing dotted IPv4 part included); undefined when it is not one. */
function ipv6Groups(address: string): number[] | undefined {
  let text = address.toLowerCase();
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const parse = (part: string | undefined) => (part ? part.split(":").map((group) => Number.parseInt(group, 16)) : []);
  const head = parse(halves[0]);
  const tail = parse(halves[1]);
  const groups = halves.length === 2 ? [...head, ...new Array(8 - head.length - tail.length).fill(0), ...tail] : head;
  return groups.length === 8 && groups.every((group) => Number.isInteger(group) && group >= 0 && group <= 0xffff)
    ? groups
    : undefined;
}

function ipv4From(high: number, low: number): string {
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join(".");
}

/**
 * The IPv4 addresses an IPv6 address carries, each of which a translator or
 * relay would connect to; `undefined` when the address is no such form.
 * `64:ff9b::/96` (NAT64's well-known prefix, RFC 6052) is judged by the
 * address it carries rather than refused wholesale: on an IPv6-only host
 * behind DNS64, that is how every public IPv4 site is reached. The
 * local-use NAT64 prefix `64:ff9b:1::/48` (RFC 8215) is refused wholesale
 * instead: where its IPv4 address sits depends on the operator's prefix
 * length, so it cannot be decoded with certainty.
 */
function embeddedIPv4(groups: number[]): string[] | undefined {
  const [g0, g1, g2, g3, g4, g5, g6, g7] = groups as [number, number, number, number, number, number, number, number];
  const zeroTo = (count: number) => groups.slice(0, count).every((group) => group === 0);
  // ::ffff:a.b.c.d (mapped), ::a.b.c.d (compatible, deprecated; :: and ::1 fall in 0.0.0.0/8), ::ffff:0:a.b.c.d (translated).
  if (zeroTo(5) && (g5 === 0xffff || g5 === 0)) return [ipv4From(g6, g7)];
  if (zeroTo(4) && g4 === 0xffff && g5 === 0) return [ipv4From(g6, g7)];
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return [ipv4From(g6, g7)];
  // 6to4 (2002::/16): the relay's tunnel goes to the IPv4 address in bits 16-47.
  if (g0 === 0x2002) return [ipv4From(g1, g2)];
  // Teredo (2001::/32): the server in bits 32-63, the client's address inverted in the last 32 bits.
  if (g0 === 0x2001 && g1 === 0) return [ipv4From(g2, g3), ipv4From(g6 ^ 0xffff, g7 ^ 0xffff)];
  return undefined;
}

export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  if (family === 4) return !blockedV4.check(address, "ipv4");
  // A zone index (fe80::1%eth0) names a link: never public.
  if (address.includes("%")) return false;
  const groups = ipv6Groups(address);
  if (!groups) return false;
  const carried = embeddedIPv4(groups);
  if (carried) return carried.every((inner) => !blockedV4.check(inner, "ipv4"));
  return globalUnicast.check(address, "ipv6") && !blockedV6.check(address, "ipv6");
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
