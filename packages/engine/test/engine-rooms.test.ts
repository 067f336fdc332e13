import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { THREAD_SCRIPTS } from "../src/runtime/worker-script";

/**
 * The engine's layout (src/index.ts says the rule): files in rooms by concern, no import
 * circles, and a public surface that is what its users import. Read from the sources with
 * TypeScript's parser; nothing runs.
 */

const engineDir = path.resolve(import.meta.dirname, "..");
const srcDir = path.join(engineDir, "src");
const repoDir = path.resolve(engineDir, "../..");

/** Every TypeScript or JavaScript source under `dir`, skipping installed and built files. */
function sources(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === "node_modules" || entry.name === "dist" ? [] : sources(file);
    return entry.isFile() && /\.(ts|tsx|mts|mjs)$/.test(entry.name) ? [file] : [];
  });
}

function parse(file: string): ts.SourceFile {
  return ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
}

/** The engine's files that `file` imports (type-only imports and re-exports included). */
function engineImports(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
  return importedFiles
    .map(({ fileName }) => fileName)
    .filter((name) => name.startsWith("."))
    .map((name) => path.resolve(path.dirname(file), name))
    .map((target) => (target.endsWith(".ts") ? target : `${target}.ts`))
    .filter((target) => existsSync(target));
}

/** Each circle of imports among `files`, as the files along it. */
function circles(files: string[]): string[][] {
  const edges = new Map(files.map((file) => [file, engineImports(file)]));
  const found: string[][] = [];
  const done = new Set<string>();
  const walk = (file: string, trail: string[]) => {
    const at = trail.indexOf(file);
    if (at >= 0) {
      found.push(trail.slice(at).map((step) => path.relative(srcDir, step)));
      return;
    }
    if (done.has(file)) return;
    for (const next of edges.get(file) ?? []) walk(next, [...trail, file]);
    done.add(file);
  };
  for (const file of files) walk(file, []);
  return found;
}

/** The names every file outside the engine imports (or re-exports) from "@retouch/engine". */
function namesImportedByUsers(): Set<string> {
  const users = [
    ...["core", "server", "web", "cli", "sdk"].flatMap((name) => sources(path.join(repoDir, "packages", name))),
    ...sources(path.join(repoDir, "scripts")),
    ...sources(path.join(repoDir, "test")),
    ...sources(path.join(repoDir, "examples")),
  ];
  const names = new Set<string>();
  for (const file of users) {
    const visit = (node: ts.Node): void => {
      if (
        (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
        node.moduleSpecifier &&
        ts.isStringLiteral(node.moduleSpecifier) &&
        node.moduleSpecifier.text === "@retouch/engine"
      ) {
        const bindings = ts.isImportDeclaration(node) ? node.importClause?.namedBindings : node.exportClause;
        if (!bindings || !(ts.isNamedImports(bindings) || ts.isNamedExports(bindings))) {
          throw new Error(`${path.relative(repoDir, file)} imports all of @retouch/engine; name what it uses.`);
        }
        for (const element of bindings.elements) names.add((element.propertyName ?? element.name).text);
      }
      if (
        ts.isImportTypeNode(node) &&
        ts.isLiteralTypeNode(node.argument) &&
        ts.isStringLiteral(node.argument.literal) &&
        node.argument.literal.text === "@retouch/engine" &&
        node.qualifier
      ) {
        let first: ts.EntityName = node.qualifier;
        while (ts.isQualifiedName(first)) first = first.left;
        names.add(first.text);
      }
      ts.forEachChild(node, visit);
    };
    visit(parse(file));
  }
  return names;
}

/** The names src/index.ts exports; `export *` is refused, since it hides what is public. */
function namesExportedByIndex(): Set<string> {
  const names = new Set<string>();
  for (const statement of parse(path.join(srcDir, "index.ts")).statements) {
    if (!ts.isExportDeclaration(statement)) continue;
    if (!statement.exportClause || !ts.isNamedExports(statement.exportClause)) {
      throw new Error(`index.ts: "${statement.getText()}" exports names nobody listed.`);
    }
    for (const element of statement.exportClause.elements) names.add(element.name.text);
  }
  return names;
}

describe("the engine's rooms", () => {
  it("index.ts exports exactly the names that core, server, web, cli, the SDK and the scripts import from @retouch/engine", () => {
    const imported = [...namesImportedByUsers()].sort();
    const exported = [...namesExportedByIndex()].sort();
    // Both ways: a name nobody imports is surface to keep for no one; a name imported but missing fails typecheck too.
    expect(exported.filter((name) => !imported.includes(name))).toEqual([]);
    expect(imported.filter((name) => !exported.includes(name))).toEqual([]);
    expect(exported.length).toBeGreaterThan(0);
  });

  it("no file of src imports itself through others, type-only imports included", () => {
    const files = sources(srcDir);
    expect(files.length).toBeGreaterThan(40);
    expect(circles(files)).toEqual([]);
  });

  it("every thread entry is listed under its file's name and sits beside the module that starts it", () => {
    const files = sources(srcDir);
    const entries = files.filter((file) => file.endsWith(".worker.ts")).map((file) => path.relative(srcDir, file));
    expect(entries.sort()).toEqual(
      Object.values(THREAD_SCRIPTS)
        .map((source) => `${source}.ts`)
        .sort(),
    );
    for (const [name, source] of Object.entries(THREAD_SCRIPTS)) expect(path.basename(source)).toBe(name);

    const starts = files.flatMap((file) =>
      [...readFileSync(file, "utf8").matchAll(/workerScript\("([^"]+)", import\.meta\.url\)/g)].map((match) => ({
        starter: path.relative(srcDir, path.dirname(file)),
        name: match[1] as keyof typeof THREAD_SCRIPTS,
      })),
    );
    expect(new Set(starts.map(({ name }) => name))).toEqual(new Set(Object.keys(THREAD_SCRIPTS)));
    for (const { starter, name } of starts) expect(path.dirname(THREAD_SCRIPTS[name]), name).toBe(starter);
  });
});
