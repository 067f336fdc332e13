import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

/**
 * Writes the router's client-facing type as plain TypeScript: every
 * procedure's input and output (and the error shape) expanded from what the
 * compiler infers for `appRouter`, with no trace of the server's context.
 * The SDK's declarations then need nothing but @trpc/server's types, so users
 * install no server code. `pnpm --filter @retouch/sdk generate` refreshes it; a
 * test fails when it is stale.
 */

const here = path.dirname(fileURLToPath(import.meta.url));
export const ROUTER_FILE = path.resolve(here, "../../core/src/trpc/router.ts");
export const GENERATED_FILE = path.resolve(here, "../src/router.generated.ts");

function printer(checker: ts.TypeChecker) {
  const print = (type: ts.Type, depth = 0): string => {
    if (depth > 30) throw new Error("type too deep to print");
    const flags = type.flags;
    if (flags & ts.TypeFlags.String) return "string";
    if (flags & ts.TypeFlags.Number) return "number";
    if (flags & ts.TypeFlags.Boolean) return "boolean";
    if (flags & ts.TypeFlags.Null) return "null";
    if (flags & ts.TypeFlags.Undefined) return "undefined";
    if (flags & ts.TypeFlags.Void) return "void";
    if (flags & ts.TypeFlags.Never) return "never";
    if (flags & (ts.TypeFlags.Unknown | ts.TypeFlags.Any)) return "unknown";
    if (type.isStringLiteral()) return JSON.stringify(type.value);
    if (type.isNumberLiteral()) return String(type.value);
    if (flags & ts.TypeFlags.BooleanLiteral) return checker.typeToString(type);
    if (type.isUnion()) {
      const members = type.types;
      const hasTrue = members.some((member) => checker.typeToString(member) === "true");
      const hasFalse = members.some((member) => checker.typeToString(member) === "false");
      const printed = members
        .filter((member) => !(hasTrue && hasFalse && member.flags & ts.TypeFlags.BooleanLiteral))
        .map((member) => print(member, depth + 1));
      if (hasTrue && hasFalse) printed.push("boolean");
      return [...new Set(printed)].join(" | ");
    }
    if (type.isIntersection()) return type.types.map((member) => `(${print(member, depth + 1)})`).join(" & ");
    if (checker.isArrayType(type)) {
      const [element] = checker.getTypeArguments(type as ts.TypeReference);
      return `Array<${element ? print(element, depth + 1) : "unknown"}>`;
    }
    if (flags & ts.TypeFlags.Object) {
      const members = checker.getPropertiesOfType(type).map((property) => {
        const optional = (property.flags & ts.SymbolFlags.Optional) !== 0;
        const propertyType = checker.getTypeOfSymbol(property);
        // An optional property's type carries `undefined`; the `?` says it already.
        const shown =
          optional && propertyType.isUnion()
            ? propertyType.types
                .filter((member) => !(member.flags & ts.TypeFlags.Undefined))
                .map((member) => print(member, depth + 1))
                .join(" | ")
            : print(propertyType, depth + 1);
        return `${JSON.stringify(property.name)}${optional ? "?" : ""}: ${shown};`;
      });
      const index = checker.getIndexInfoOfType(type, ts.IndexKind.String);
      if (index) members.push(`[key: string]: ${print(index.type, depth + 1)};`);
      return members.length === 0 ? "Record<string, never>" : `{ ${members.join(" ")} }`;
    }
    throw new Error(`cannot print the type ${checker.typeToString(type)}`);
  };
  return print;
}

function propertyType(checker: ts.TypeChecker, type: ts.Type, name: string, location: ts.Node): ts.Type {
  const property = type.getProperty(name);
  if (!property) throw new Error(`no property ${name} on ${checker.typeToString(type)}`);
  return checker.getTypeOfSymbolAtLocation(property, location);
}

export function generateRouterTypes(): string {
  const program = ts.createProgram([ROUTER_FILE], {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2023,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    types: ["node"],
    typeRoots: [path.resolve(here, "../../../node_modules/@types")],
  });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(ROUTER_FILE);
  if (!source) throw new Error(`cannot read ${ROUTER_FILE}`);
  const moduleSymbol = checker.getSymbolAtLocation(source);
  const routerSymbol = moduleSymbol && checker.getExportsOfModule(moduleSymbol).find((symbol) => symbol.name === "appRouter");
  if (!routerSymbol) throw new Error("appRouter is not exported from the router module");
  const routerType = checker.getTypeOfSymbolAtLocation(routerSymbol, source);
  const print = printer(checker);

  const routerDef = propertyType(checker, routerType, "_def", source);
  const config = propertyType(checker, routerDef, "_config", source);
  const errorShape = print(propertyType(checker, propertyType(checker, config, "$types", source), "errorShape", source));
  const record = propertyType(checker, routerDef, "record", source);

  const printRecord = (recordType: ts.Type, indent: string): string => {
    const entries = checker.getPropertiesOfType(recordType).map((entry) => {
      const value = checker.getTypeOfSymbolAtLocation(entry, source);
      const def = value.getProperty("_def") ? propertyType(checker, value, "_def", source) : undefined;
      if (def?.getProperty("procedure")) {
        const kind = checker.typeToString(propertyType(checker, def, "type", source));
        const types = propertyType(checker, def, "$types", source);
        const wrapper = kind === '"query"' ? "TRPCQueryProcedure" : kind === '"mutation"' ? "TRPCMutationProcedure" : undefined;
        if (!wrapper) throw new Error(`${entry.name}: unsupported procedure type ${kind}`);
        return `${indent}${entry.name}: ${wrapper}<{ input: ${print(propertyType(checker, types, "input", source))}; output: ${print(
          propertyType(checker, types, "output", source),
        )}; meta: object; errorShape: ErrorShape }>;`;
      }
      // A sub-router: its record.
      const nested = def ? propertyType(checker, def, "record", source) : value;
      return `${indent}${entry.name}: {\n${printRecord(nested, `${indent}  `)}\n${indent}};`;
    });
    return entries.join("\n");
  };

  return `// Generated by packages/sdk/scripts/router-types.ts from packages/core/src/trpc/router.ts. Do not edit.
// Run \`pnpm --filter @retouch/sdk generate\` after changing a procedure's input or output.
import type { TRPCBuiltRouter, TRPCMutationProcedure, TRPCQueryProcedure } from "@trpc/server";

/** The shape of an error as the tRPC endpoint sends it. */
export type ErrorShape = ${errorShape};

/** Every operation of the Retouch API, as the typed client sees it. */
export type AppRouter = TRPCBuiltRouter<
  { ctx: object; meta: object; errorShape: ErrorShape; transformer: false },
  {
${printRecord(record, "    ")}
  }
>;
`;
}
