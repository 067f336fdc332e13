import { RetouchError } from "@retouch/core";

/** Deepest JSON nesting accepted. Real requests use at most 5 levels (an MCP tool call's arguments). */
export const MAX_JSON_DEPTH = 32;

/**
 * Why PostgreSQL could not store this text as sent, if it could not: `text`
 * and `jsonb` refuse U+0000, and an unpaired UTF-16 surrogate would be
 * silently replaced by U+FFFD on the way in. Both checks are native scans
 * (`includes`, and `isWellFormed`, which is immediate on one-byte strings
 * such as base64), so megabytes of image cost next to nothing.
 */
function textProblem(text: string): string | undefined {
  if (text.includes("\u0000")) return "contains a NUL character (U+0000), which cannot be stored; remove it";
  if (!text.isWellFormed()) return "contains an unpaired surrogate (invalid Unicode), which cannot be stored; send valid UTF-8";
  return undefined;
}

function refuse(field: string, problem: string): RetouchError {
  return new RetouchError("invalid_request", `${field}: ${problem}`, { issues: [{ path: field, message: problem }] });
}

/** Refuses text that cannot be stored as sent (400 naming the field). */
export function checkText(text: string, field: string): void {
  const problem = textProblem(text);
  if (problem) throw refuse(field, problem);
}

/** Refuses a query string (or a form body's fields) with text that cannot be stored, in a name or a value. */
export function checkQuery(params: URLSearchParams, what = "query parameter"): void {
  for (const [name, value] of params) {
    checkText(name, `${what} name`);
    checkText(value, name);
  }
}

function tooDeep(): RetouchError {
  return new RetouchError("invalid_request", `The JSON body is nested deeper than ${MAX_JSON_DEPTH} levels.`);
}

/**
 * Nesting counted on the raw bytes as they arrive, for small bodies: deep
 * JSON is refused (400) at its 33rd bracket rather than read to the size
 * limit (which would answer 413 for what is really a depth problem). Brackets
 * inside strings do not count; multi-byte UTF-8 never contains the ASCII
 * bytes looked at. Malformed JSON is JSON.parse's to refuse.
 */
export function createJsonDepthScanner(): (chunk: Buffer) => void {
  let depth = 0;
  let inString = false;
  let escaped = false;
  return (chunk) => {
    for (let index = 0; index < chunk.length; index++) {
      const byte = chunk[index];
      if (inString) {
        if (escaped) escaped = false;
        else if (byte === 0x5c) escaped = true;
        else if (byte === 0x22) inString = false;
      } else if (byte === 0x22) inString = true;
      else if (byte === 0x5b || byte === 0x7b) {
        if (++depth > MAX_JSON_DEPTH) throw tooDeep();
      } else if (byte === 0x5d || byte === 0x7d) depth--;
    }
  };
}

interface Container {
  value: object;
  depth: number;
  parent: Container | undefined;
  key: string | number | undefined;
}

/** "images.0.prompt": the field's path, as validation messages name fields. */
function pathOf(container: Container | undefined, key: string | number | undefined): string {
  const parts: Array<string | number> = key === undefined ? [] : [key];
  for (let at = container; at?.key !== undefined; at = at.parent) parts.unshift(at.key);
  return parts.join(".") || "body";
}

/**
 * One walk over a parsed body, before any adapter sees it: nesting deeper
 * than MAX_JSON_DEPTH (which would otherwise reach recursive code further on)
 * and text that cannot be stored, in any value or key, are a 400 naming the
 * field. Iterative, so any depth is refused without recursion.
 */
export function checkJson(body: unknown): void {
  if (typeof body === "string") checkText(body, "body");
  if (body === null || typeof body !== "object") return;
  const stack: Container[] = [{ value: body, depth: 1, parent: undefined, key: undefined }];
  for (let container = stack.pop(); container; container = stack.pop()) {
    if (container.depth > MAX_JSON_DEPTH) throw tooDeep();
    const entries: Array<[string | number, unknown]> = Array.isArray(container.value)
      ? container.value.map((item, index) => [index, item])
      : Object.entries(container.value);
    for (const [key, value] of entries) {
      if (typeof key === "string") {
        const problem = textProblem(key);
        if (problem) throw refuse(pathOf(container, key), `the field name ${problem}`);
      }
      if (typeof value === "string") {
        const problem = textProblem(value);
        if (problem) throw refuse(pathOf(container, key), problem);
      } else if (value !== null && typeof value === "object") {
        stack.push({ value, depth: container.depth + 1, parent: container, key });
      }
    }
  }
}
