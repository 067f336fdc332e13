import { appRouter, type Config, type CredentialKind, type ProcedureMeta } from "@retouch/core";
import { MCP_PATH } from "../mcp/mcp.handler";

/** Largest body of an operation that carries no images. */
export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;
export const TRPC_PREFIX = "/trpc/";

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

type ProcedureRecord = Record<string, { _def: { meta?: ProcedureMeta } }>;

/**
 * The policy of every request for the router, from the procedures' own
 * metadata (who may call it, whether its body carries images), so a new
 * operation needs no entry here. Undefined for anything else (404 later).
 */
export function createRoutePolicies(config: Pick<Config, "maxRequestBytes">) {
  const procedures = Object.entries(appRouter._def.procedures as unknown as ProcedureRecord).map(([name, procedure]) => ({
    name,
    meta: procedure._def.meta ?? {},
  }));
  const byName = new Map(procedures.map((procedure) => [procedure.name, procedure.meta]));
  const bodyLimit = (meta: ProcedureMeta) => (meta.imageBody ? config.maxRequestBytes : DEFAULT_BODY_LIMIT_BYTES);
  const rest = procedures.flatMap(({ meta }) =>
    meta.openapi
      ? [
          {
            method: meta.openapi.method,
            // "/api/keys/{id}" matches one path segment where the parameter is.
            pattern: new RegExp(`^${meta.openapi.path.replace(/\{[^/}]+\}/g, "[^/]+")}$`),
            policy: { surface: "rest", auth: meta.auth ?? "public", maxBodyBytes: bodyLimit(meta) } satisfies RoutePolicy,
          },
        ]
      : [],
  );

  return (method: string, pathname: string): RoutePolicy | undefined => {
    if (pathname === MCP_PATH) {
      // Tool calls carry images.
      return method === "POST" ? { surface: "mcp", auth: "api_key", maxBodyBytes: config.maxRequestBytes } : undefined;
    }
    if (pathname.startsWith(TRPC_PREFIX)) return trpcPolicy(pathname.slice(TRPC_PREFIX.length).split(","));
    const path = `/${pathname.replace(/^\/+|\/+$/g, "")}`;
    return rest.find((route) => route.method === method && route.pattern.test(path))?.policy;
  };

  /**
   * A batched call (`a,b?batch=1`) is checked for the strictest credentials
   * its procedures share: none at the edge if any is public (each procedure's
   * middleware decides), a key if any needs one. Unknown names are left to
   * tRPC's 404.
   */
  function trpcPolicy(names: string[]): RoutePolicy {
    const metas = names.map((name) => byName.get(name));
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
}

export type RoutePolicies = ReturnType<typeof createRoutePolicies>;
