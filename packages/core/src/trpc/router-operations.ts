import { appRouter } from "./router";
import type { ProcedureMeta } from "./trpc";

/** One procedure of the router, as the transports that are views of it (REST, MCP, OpenAPI) read it. */
export interface RouterOperation {
  /** The router path, e.g. "process.submit": tRPC's path, and the name a caller is reached by. */
  path: string;
  type: "query" | "mutation" | "subscription";
  /** The procedure's metadata; `{}` for one that declares none. */
  meta: ProcedureMeta;
  /** The input parsers in the order they were chained (the first is the operation's schema). */
  inputs: readonly unknown[];
  /** The output parser, if the procedure declares one. */
  output: unknown;
}

/**
 * The shape of a built procedure at run time. tRPC types `_def.procedures`
 * as the nested record the router was written as, while the value is flat
 * ("process.submit" -> procedure), and keeps `inputs` and `output` off its
 * public types: this is the one place that reads it as it is.
 */
interface BuiltProcedure {
  _def: { type: RouterOperation["type"]; meta?: ProcedureMeta; inputs: unknown[]; output?: unknown };
}

let operations: readonly RouterOperation[] | undefined;

/** Every procedure of the router with its metadata, in the router's order (the router never changes: read once). */
export function routerOperations(): readonly RouterOperation[] {
  operations ??= Object.entries(appRouter._def.procedures as unknown as Record<string, BuiltProcedure>).map(
    ([path, procedure]) => ({
      path,
      type: procedure._def.type,
      meta: procedure._def.meta ?? {},
      inputs: procedure._def.inputs,
      output: procedure._def.output,
    }),
  );
  return operations;
}
