import { type AppRouter, type Context, type ProcedureMeta, routerOperations, toRetouchError } from "@retouch/core";
import type { TRPCError } from "@trpc/server";

let metaByPath: Map<string, ProcedureMeta> | undefined;

export function procedureMeta(path: string | undefined): ProcedureMeta | undefined {
  if (!path) return undefined;
  metaByPath ??= new Map(routerOperations().map((operation) => [operation.path, operation.meta]));
  return metaByPath.get(path);
}

/**
 * Status and headers of a REST or tRPC response: the procedure's declared
 * success status (201 for key creation), the headers it asked for
 * (`Set-Cookie`), and for errors the status of the domain error table plus
 * `Retry-After`.
 */
export function responseMetaFor(opts: {
  ctx?: Context | undefined;
  paths?: readonly string[] | undefined;
  errors: readonly TRPCError[];
  /** REST only: the procedure's output, for a status that depends on it (202 for a pending result). */
  data?: readonly unknown[];
}): { status?: number; headers: Record<string, string | string[]> } {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of opts.ctx?.responseHeaders ?? []) {
    const existing = headers[name];
    headers[name] = existing === undefined ? value : [...(Array.isArray(existing) ? existing : [existing]), value];
  }
  const [error] = opts.errors;
  if (error) {
    const domain = toRetouchError(error);
    return { status: domain.status, headers: { ...headers, ...domain.headers() } };
  }
  const declared = opts.paths?.length === 1 ? procedureMeta(opts.paths[0])?.successStatus : undefined;
  const status = typeof declared === "function" ? declared(opts.data?.[0]) : declared;
  return status ? { status, headers } : { headers };
}

export type { AppRouter };
