import { appRouter, type Config, type CredentialKind, type ProcedureMeta } from "@retouch/core";

/** Largest body of an operation that carries no images. */
export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;
/** Where the typed endpoint of the SDK is mounted: `/trpc/<procedure>`. */
export const TRPC_ENDPOINT = "/trpc";

/** The three ways into the router; each renders the host's refusals in its own format. */
export type Surface = "rest" | "trpc" | "mcp";

/** What the host checks before an adapter sees the request. */
export interface RoutePolicy {
  surface: Surface;
  /** Credentials checked from the headers before the body is read; "public" means none at the edge. */
  auth: "public" | CredentialKind;
  /** Largest body accepted (413 above it). */
  maxBodyBytes: number;
}

/** A REST operation as the host routes it: Hono's path syntax (`/api/keys/:id`) and its policy. */
export interface RestRoute {
  method: string;
  path: string;
  policy: RoutePolicy;
}

type ProcedureRecord = Record<string, { _def: { meta?: ProcedureMeta } }>;

/**
 * The routes and policies of every request for the router, from the
 * procedures' own metadata (who may call it, whether its body carries
 * images), so a new operation needs no entry here.
 */
export function createRoutePolicies(config: Pick<Config, "maxRequestBytes">) {
  const procedures = Object.entries(appRouter._def.procedures as unknown as ProcedureRecord).map(([name, procedure]) => ({
    name,
    meta: procedure._def.meta ?? {},
  }));
  const byName = new Map(procedures.map((procedure) => [procedure.name, procedure.meta]));
  const bodyLimit = (meta: ProcedureMeta) => (meta.imageBody ? config.maxRequestBytes : DEFAULT_BODY_LIMIT_BYTES);
  const rest: RestRoute[] = procedures.flatMap(({ meta }) =>
    meta.openapi
      ? [
          {
            method: meta.openapi.method,
            path: meta.openapi.path.replace(/\{([^/}]+)\}/g, ":$1"),
            policy: { surface: "rest", auth: meta.auth ?? "public", maxBodyBytes: bodyLimit(meta) },
          },
        ]
      : [],
  );
  // Tool calls carry images. A pk_ key, or an OAuth access token issued for /mcp.
  const mcp: RoutePolicy = { surface: "mcp", auth: "key_or_mcp_token", maxBodyBytes: config.maxRequestBytes };

  /**
   * A tRPC call (`/trpc/a` or batched, `/trpc/a,b?batch=1`) is checked for
   * the strictest credentials its procedures share: none at the edge if any is
   * public (each procedure's middleware decides), a key if any needs one.
   * Unknown names are left to tRPC's 404.
   */
  function trpc(pathname: string): RoutePolicy {
    const metas = pathname
      .slice(TRPC_ENDPOINT.length + 1)
      .split(",")
      .map((name) => byName.get(name));
    const auth = metas.some((meta) => !meta || (meta.auth ?? "public") === "public")
      ? "public"
      : metas.some((meta) => meta?.auth === "api_key")
        ? "api_key"
        : "key_or_session";
    // A large body only from a caller the edge has authenticated.
    const maxBodyBytes =
      auth !== "public" && metas.some((meta) => meta?.imageBody) ? config.maxRequestBytes : DEFAULT_BODY_LIMIT_BYTES;
    return { surface: "trpc", auth, maxBodyBytes };
  }

  return { rest, trpc, mcp };
}

export type RoutePolicies = ReturnType<typeof createRoutePolicies>;
