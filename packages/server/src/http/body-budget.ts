/** Which allowance a request's body draws on: public routes have their own, so they never take an upload's room. */
export type BodyPool = "authenticated" | "public";

export interface BodyBudgetLimits {
  /** Bytes all authenticated requests may hold at once (RETOUCH_MAX_BODY_BYTES_IN_FLIGHT). */
  authenticatedBytes: number;
  /** Bytes all requests on public routes may hold at once (RETOUCH_PUBLIC_BODY_BYTES_IN_FLIGHT). */
  publicBytes: number;
  /** Bytes one address may hold of the authenticated allowance (RETOUCH_BODY_BYTES_PER_ADDRESS). */
  perAddressBytes: number;
}

/** One address may hold a quarter of the public allowance: a single client never takes all of it. */
const PUBLIC_SHARE_PER_ADDRESS = 4;

/** What one request's body holds; given back whole by `release`, as soon as the body is read and parsed. */
export interface BodyShare {
  /** Whether `bytes` more would fit now (a declared length, checked before anything is read). */
  fits(bytes: number): boolean;
  /** Takes `bytes` that have arrived, if they fit. */
  take(bytes: number): boolean;
  /** Gives back everything this request holds; safe to call twice. */
  release(): void;
}

interface Pool {
  capacity: number;
  perAddress: number;
  used: number;
  byAddress: Map<string, number>;
}

/**
 * Request bytes the host holds at once. Bytes are counted as they ARRIVE,
 * never as announced (a `Content-Length` nobody sends holds nothing), in two
 * separate allowances, one for authenticated requests and one for public
 * routes, each also split per client address. A body that does not fit is
 * refused (503 with Retry-After), never queued; its share is given back as
 * soon as the body is parsed, so a request that then waits (an MCP call with
 * `wait_seconds`) holds nothing.
 */
export class BodyBudget {
  private readonly pools: Record<BodyPool, Pool>;

  constructor(limits: BodyBudgetLimits) {
    const pool = (capacity: number, perAddress: number): Pool => ({ capacity, perAddress, used: 0, byAddress: new Map() });
    this.pools = {
      authenticated: pool(limits.authenticatedBytes, limits.perAddressBytes),
      public: pool(limits.publicBytes, Math.floor(limits.publicBytes / PUBLIC_SHARE_PER_ADDRESS)),
    };
  }

  /** A share for one request's body, from `pool`, for the client at `address`. */
  open(poolName: BodyPool, address: string): BodyShare {
    const pool = this.pools[poolName];
    let held = 0;
    const room = () => Math.min(pool.capacity - pool.used, pool.perAddress - (pool.byAddress.get(address) ?? 0));
    return {
      fits: (bytes) => bytes <= room(),
      take: (bytes) => {
        if (bytes > room()) return false;
        pool.used += bytes;
        pool.byAddress.set(address, (pool.byAddress.get(address) ?? 0) + bytes);
        held += bytes;
        return true;
      },
      release: () => {
        if (held === 0) return;
        pool.used -= held;
        const left = (pool.byAddress.get(address) ?? 0) - held;
        if (left > 0) pool.byAddress.set(address, left);
        else pool.byAddress.delete(address);
        held = 0;
      },
    };
  }

  /** Each allowance's bytes held now and its capacity (the /metrics gauges, read at each scrape). */
  allowance(): Array<{ pool: BodyPool; usedBytes: number; capacityBytes: number }> {
    return (Object.keys(this.pools) as BodyPool[]).map((pool) => ({
      pool,
      usedBytes: this.pools[pool].used,
      capacityBytes: this.pools[pool].capacity,
    }));
  }

  /** Bytes held now, per allowance (for the log line of a refusal). */
  get usedBytes(): Record<BodyPool, number> {
    return { authenticated: this.pools.authenticated.used, public: this.pools.public.used };
  }
}
