import {
  appRouter,
  type Context,
  createCallerFactory,
  type ProcedureMeta,
  RetouchError,
  routerOperations,
  toRetouchError,
} from "@retouch/core";
import { z } from "zod";

/**
 * MCP tools are not written a second time: every router procedure with `mcp`
 * metadata becomes a tool, with the procedure's zod schemas as its input and
 * output schemas, and a call goes through the procedure itself (same
 * validation, credits, limits, idempotency and errors as REST).
 */
export interface McpTool {
  name: string;
  title: string;
  description: string;
  annotations: NonNullable<ProcedureMeta["mcp"]>["annotations"];
  /** The router path, e.g. "process.submit". */
  path: string;
  input: z.ZodObject;
  output: z.ZodObject;
}

/** MCP output schemas must be objects: a union of objects becomes one object whose keys not shared by every branch are optional. */
function asObjectSchema(schema: unknown, path: string): z.ZodObject {
  if (schema instanceof z.ZodObject) return schema;
  if (schema instanceof z.ZodUnion && schema.options.every((option) => option instanceof z.ZodObject)) {
    const options = schema.options as z.ZodObject[];
    const keys = [...new Set(options.flatMap((option) => Object.keys(option.shape)))];
    const shape = Object.fromEntries(
      keys.map((key) => {
        const holders = options.filter((option) => key in option.shape);
        const field = holders[0]?.shape[key] as z.ZodType;
        return [key, holders.length === options.length ? field : field.optional()];
      }),
    );
    return z.object(shape);
  }
  throw new Error(`${path}: an MCP tool needs an object (or a union of objects) as output`);
}

export function mcpToolsFromRouter(): McpTool[] {
  return routerOperations().flatMap(({ path, meta: { mcp: meta }, inputs, output: procedureOutput }) => {
    if (!meta) return [];
    const input = meta.input ?? inputs[0];
    if (!(input instanceof z.ZodObject)) throw new Error(`${path}: an MCP tool needs an object input`);
    const output = meta.output ?? asObjectSchema(procedureOutput, path);
    return [
      { name: meta.name, title: meta.title, description: meta.description, annotations: meta.annotations, path, input, output },
    ];
  });
}

const createCaller = createCallerFactory(appRouter);

/** Calls the tool's procedure; a domain error comes back as a RetouchError. */
export async function callTool(tool: McpTool, args: Record<string, unknown>, context: Context): Promise<unknown> {
  const caller = createCaller(context) as unknown as Record<string, Record<string, (input: unknown) => Promise<unknown>>>;
  const [group, name] = tool.path.split(".");
  const procedure = group && name ? caller[group]?.[name] : undefined;
  if (!procedure) throw new RetouchError("internal_error", undefined, { cause: new Error(`no procedure ${tool.path}`) });
  try {
    return await procedure(args);
  } catch (error) {
    throw toRetouchError(error);
  }
}

/** The tool `edit_image` answers as when `wait_seconds` saw its job settle. */
export const RESULT_TOOL = "get_job_result";

/**
 * A tool as `tools/list` shows it: the zod schemas as JSON Schema draft 7
 * (what the SDK's own tool helper sends), the title and the behaviour hints.
 */
export function listedTool(tool: McpTool) {
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: z.toJSONSchema(tool.input, { target: "draft-7", io: "input" }) as { type: "object" },
    outputSchema: z.toJSONSchema(tool.output, { target: "draft-7", io: "output" }) as { type: "object" },
    annotations: { title: tool.title, ...tool.annotations },
  };
}
