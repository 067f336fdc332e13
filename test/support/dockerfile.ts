/**
 * A small reader for the repository's Dockerfile, enough to check it and to
 * replay its steps without Docker (packages/server/test/dockerfile.test.ts):
 * line continuations, comments, parser directives, instruction flags
 * (`--from=build`), the exec (JSON) and shell forms, ENV's key=value pairs and
 * ARG substitution in FROM. Heredocs and the legacy `ENV key value` form are
 * refused rather than misread: the file does not use them.
 */

import path from "node:path";

export interface DockerInstruction {
  /** Upper case: FROM, RUN, COPY, ... */
  keyword: string;
  /** `--name=value` flags before the arguments (`--from`, `--interval`, ...). */
  flags: Record<string, string>;
  /** The arguments after the flags, as written (continuations joined). */
  args: string;
  /** The JSON-array form's words, when the arguments are one. */
  exec?: string[];
  /** The line where the instruction starts (1-based). */
  line: number;
}

export interface DockerStage {
  /** `AS name`, or the stage's index. */
  name: string;
  /** The base image with the global ARGs substituted. */
  base: string;
  instructions: DockerInstruction[];
}

export interface Dockerfile {
  /** ARGs declared before the first FROM, with their defaults. */
  globalArgs: Record<string, string>;
  stages: DockerStage[];
}

const FLAG = /^--([a-z-]+)=(\S*)\s*/;

function parseExec(args: string): string[] | undefined {
  if (!args.startsWith("[")) return undefined;
  try {
    const words: unknown = JSON.parse(args);
    return Array.isArray(words) && words.every((word) => typeof word === "string") ? words : undefined;
  } catch {
    return undefined;
  }
}

/** Splits the instructions, joining `\`-continued lines and dropping comments (also inside continuations, as Docker does). */
function instructions(text: string): DockerInstruction[] {
  const result: DockerInstruction[] = [];
  let pending: { text: string; line: number } | undefined;
  const lines = text.split("\n");
  for (const [index, raw] of lines.entries()) {
    const line = raw.replace(/\r$/, "");
    if (/^\s*#/.test(line) || (pending === undefined && line.trim() === "")) continue;
    const continued = /\\\s*$/.test(line);
    const part = continued ? line.replace(/\\\s*$/, "") : line;
    pending = pending ? { text: `${pending.text} ${part.trim()}`, line: pending.line } : { text: part.trim(), line: index + 1 };
    if (continued) continue;
    const match = /^(\S+)\s*(.*)$/.exec(pending.text);
    if (!match?.[1]) throw new Error(`Dockerfile line ${pending.line}: cannot read "${pending.text}"`);
    let args = match[2] ?? "";
    if (args.includes("<<")) throw new Error(`Dockerfile line ${pending.line}: heredocs are not supported by this reader`);
    const flags: Record<string, string> = {};
    for (let flag = FLAG.exec(args); flag; flag = FLAG.exec(args)) {
      flags[flag[1] as string] = flag[2] as string;
      args = args.slice(flag[0].length);
    }
    const exec = parseExec(args);
    result.push({ keyword: match[1].toUpperCase(), flags, args, ...(exec ? { exec } : {}), line: pending.line });
    pending = undefined;
  }
  if (pending) throw new Error(`Dockerfile line ${pending.line}: ends inside a continued line`);
  return result;
}

/** `${NAME}`, `${NAME:-default}` and `$NAME` from `values`; unknown names become empty, as in Docker. */
export function substitute(text: string, values: Record<string, string>): string {
  return text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (_, braced, fallback, bare) => {
    const value = values[(braced ?? bare) as string];
    return value !== undefined && value !== "" ? value : (fallback ?? "");
  });
}

/** ENV's `key=value` pairs (values may be double-quoted); the legacy `ENV key value` form is refused. */
export function parseEnv(args: string): Record<string, string> {
  const pairs: Record<string, string> = {};
  const pattern = /([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*"|\S*)\s*/y;
  let rest = args.trim();
  while (rest.length > 0) {
    pattern.lastIndex = 0;
    const match = pattern.exec(rest);
    if (!match) throw new Error(`ENV ${args}: only key=value pairs are supported`);
    const value = match[2] as string;
    pairs[match[1] as string] = value.startsWith('"') ? (JSON.parse(value) as string) : value;
    rest = rest.slice(match[0].length);
  }
  return pairs;
}

/** ARG's `name` or `name=default`. */
export function parseArg(args: string): [string, string | undefined] {
  const [name, ...value] = args.trim().split("=");
  return [name as string, value.length > 0 ? value.join("=") : undefined];
}

export function parseDockerfile(text: string): Dockerfile {
  const globalArgs: Record<string, string> = {};
  const stages: DockerStage[] = [];
  for (const instruction of instructions(text)) {
    if (instruction.keyword === "FROM") {
      const [image, as, name] = instruction.args.split(/\s+/);
      if (!image || (as !== undefined && (as.toUpperCase() !== "AS" || !name))) {
        throw new Error(`Dockerfile line ${instruction.line}: FROM image [AS name]`);
      }
      stages.push({ name: name ?? String(stages.length), base: substitute(image, globalArgs), instructions: [] });
    } else if (stages.length === 0) {
      if (instruction.keyword !== "ARG") throw new Error(`Dockerfile line ${instruction.line}: only ARG may come before FROM`);
      const [name, value] = parseArg(instruction.args);
      globalArgs[name] = value ?? "";
    } else {
      stages.at(-1)?.instructions.push(instruction);
    }
  }
  return { globalArgs, stages };
}

/**
 * A .dockerignore as Docker reads it: one pattern a line (`#` comments), `**` for any
 * folders, `!` re-includes, the last matching line decides, and a pattern that matches
 * a folder leaves out everything in it. Returns whether a context path is left out.
 */
export function dockerIgnore(text: string): (relativePath: string) => boolean {
  const rules = text
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"))
    .map((line) => {
      const negated = line.startsWith("!");
      return { negated, pattern: (negated ? line.slice(1) : line).replace(/^\/+/, "").replace(/\/+$/, "") };
    });
  return (relativePath) => {
    const parts = relativePath.split("/");
    // The path itself and each folder above it.
    const candidates = parts.map((_, index) => parts.slice(0, index + 1).join("/"));
    let ignored = false;
    for (const rule of rules) {
      if (candidates.some((candidate) => path.matchesGlob(candidate, rule.pattern))) ignored = !rule.negated;
    }
    return ignored;
  };
}
