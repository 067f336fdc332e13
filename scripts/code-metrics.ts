/**
 * `pnpm metrics`: the code-health figures issue 27 compares before and after a clean-up (lines per package, the
 * largest files and functions, import circles, the OpenAPI post-processing's length, repeated code), printed as
 * Markdown so that a run can be pasted into docs/architecture.md as it is. Measured, not guessed: files are the
 * ones git tracks, functions are found by the TypeScript compiler's parser, circles by madge, repeats by the
 * workplace's `duplicates` tool (a row says so when it is not installed).
 *
 * Runs on Node's own TypeScript support (`node scripts/code-metrics.ts`), so it needs no build.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";

const root = path.resolve(import.meta.dirname, "..");
const SOURCE = /\.(ts|tsx|mts|cts|js|mjs|cjs)$/;
// Written by a tool, not by a person: counting them would measure the generator.
const GENERATED = /\.generated\.ts$/;
// madge is run through npx at a pinned version rather than added to every install for one report.
const MADGE = "madge@8.0.0";

function git(args: string[]): string {
  return execFileSync("git", args, { cwd: root, encoding: "utf8" }).trim();
}

/** Tracked source files below `folder` (relative to the root), generated ones left out. */
function sourceFiles(folder: string): string[] {
  const listed = git(["ls-files", "--", folder]);
  return listed ? listed.split("\n").filter((file) => SOURCE.test(file) && !GENERATED.test(file)) : [];
}

function lineCount(text: string): number {
  if (text.length === 0) return 0;
  return text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
}

const text = new Map<string, string>();
function read(file: string): string {
  let content = text.get(file);
  if (content === undefined) {
    content = readFileSync(path.join(root, file), "utf8");
    text.set(file, content);
  }
  return content;
}

function lines(files: string[]): number {
  return files.reduce((sum, file) => sum + lineCount(read(file)), 0);
}

/** A function's name as a reader would look for it: its own, or that of what holds it (`const x = () =>`, `x: () =>`). */
function functionName(node: ts.Node, source: ts.SourceFile): string {
  const own = (node as ts.FunctionLikeDeclaration).name;
  if (own) return own.getText(source);
  if (ts.isConstructorDeclaration(node)) return "constructor";
  const parent = node.parent;
  if ((ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) && parent.name) {
    return parent.name.getText(source);
  }
  if (ts.isCallExpression(parent)) return `(callback of ${parent.expression.getText(source).slice(0, 40)})`;
  return "(anonymous)";
}

interface FunctionLength {
  file: string;
  name: string;
  line: number;
  lines: number;
}

function functionLengths(file: string): FunctionLength[] {
  const kind = file.endsWith("x") ? ts.ScriptKind.TSX : file.match(/\.[cm]?js$/) ? ts.ScriptKind.JS : ts.ScriptKind.TS;
  const source = ts.createSourceFile(file, read(file), ts.ScriptTarget.Latest, true, kind);
  const found: FunctionLength[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && "body" in node && node.body) {
      const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      found.push({ file, name: functionName(node, source), line: start + 1, lines: end - start + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** madge's circles among a package's sources (type-only imports included: they still tie the files together). */
function circles(folder: string): string[][] | string {
  const result = spawnSync(
    "npx",
    ["--yes", MADGE, "--circular", "--json", "--no-spinner", "--extensions", "ts,tsx", "--ts-config", "tsconfig.json", folder],
    { cwd: root, encoding: "utf8" },
  );
  try {
    return JSON.parse(result.stdout) as string[][];
  } catch {
    return `madge did not run (${(result.stderr || result.error?.message || "no output").trim().split("\n")[0]})`;
  }
}

/** `duplicates` pairs whose two places are both in some package's src/, or why there is no figure. */
function duplicatePairs(): { pairs: number; perPackage: Map<string, number>; note: string } | string {
  const result = spawnSync("duplicates", ["--repo", "packages", "--most", "200", "--seconds", "120"], {
    cwd: root,
    encoding: "utf8",
  });
  if (result.error || result.status !== 0) return "`duplicates` is not installed here (a workplace tool, not an npm package)";
  const perPackage = new Map<string, number>();
  let pairs = 0;
  for (const row of result.stdout.split("\n").filter((line) => /^D\d+ /.test(line))) {
    const [, left, right] = /^D\d+ (\S+?):\d+-\d+ ~ (\S+?):\d+-\d+/.exec(row) ?? [];
    const leftPackage = left?.match(/^([^/]+)\/src\//)?.[1];
    const rightPackage = right?.match(/^([^/]+)\/src\//)?.[1];
    if (!leftPackage || !rightPackage) continue;
    pairs += 1;
    const key = leftPackage === rightPackage ? leftPackage : "across packages";
    perPackage.set(key, (perPackage.get(key) ?? 0) + 1);
  }
  const cut = /\(\+\d+ more pairs\)|incomplete:/.test(result.stdout);
  return { pairs, perPackage, note: cut ? " (a lower bound: duplicates did not list every pair)" : "" };
}

const packages = git(["ls-files", "--", "packages/*/package.json"])
  .split("\n")
  .map((file) => path.basename(path.dirname(file)))
  .sort();
const out: string[] = [];
const commit = git(["rev-parse", "--short", "HEAD"]);
const dirty = git(["status", "--porcelain", "--untracked-files=no"]) ? " with uncommitted changes" : "";
out.push(`Measured ${new Date().toISOString().slice(0, 10)} at commit ${commit}${dirty} (\`pnpm metrics\`).`, "");

out.push("| package | src files | src lines | test files | test lines |", "| --- | ---: | ---: | ---: | ---: |");
const allSrc: string[] = [];
for (const name of packages) {
  const src = sourceFiles(`packages/${name}/src`);
  const test = sourceFiles(`packages/${name}/test`);
  allSrc.push(...src);
  out.push(`| ${name} | ${src.length} | ${lines(src)} | ${test.length} | ${lines(test)} |`);
}

out.push("", "The 10 largest files in src:", "", "| file | lines |", "| --- | ---: |");
for (const file of [...allSrc].sort((a, b) => lineCount(read(b)) - lineCount(read(a))).slice(0, 10)) {
  out.push(`| ${file} | ${lineCount(read(file))} |`);
}

out.push("", "The 10 longest functions in src:", "", "| function | at | lines |", "| --- | --- | ---: |");
const longest = allSrc
  .flatMap(functionLengths)
  .sort((a, b) => b.lines - a.lines)
  .slice(0, 10);
for (const entry of longest) out.push(`| ${entry.name} | ${entry.file}:${entry.line} | ${entry.lines} |`);

out.push("", `Import circles in each package's src (\`npx ${MADGE} --circular\`, type-only imports included):`, "");
for (const name of packages) {
  const found = circles(`packages/${name}/src`);
  if (typeof found === "string") {
    out.push(`- ${name}: ${found}`);
    continue;
  }
  out.push(`- ${name}: ${found.length}${found.length ? ":" : ""}`);
  for (const circle of found) out.push(`  - ${circle.join(" > ")}`);
}

const openapi = "packages/server/src/discovery/openapi.ts";
out.push("", "The OpenAPI document's post-processing and the patches on libraries:", "");
out.push(`- ${openapi}: ${lineCount(read(openapi))} lines`);
for (const patch of git(["ls-files", "--", "patches"]).split("\n").filter(Boolean)) {
  out.push(`- ${patch}: ${lineCount(read(patch))} lines`);
}

const duplicates = duplicatePairs();
out.push("", "Repeated code (`duplicates --repo packages`, pairs with both places in a package's src/):", "");
if (typeof duplicates === "string") out.push(`- ${duplicates}`);
else {
  out.push(`- ${duplicates.pairs} pairs${duplicates.note}`);
  for (const [key, count] of [...duplicates.perPackage].sort()) out.push(`  - ${key}: ${count}`);
}

console.log(out.join("\n"));
