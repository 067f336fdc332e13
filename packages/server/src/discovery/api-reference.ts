/**
 * docs/api.md, rendered from the OpenAPI document the service serves: every route with its
 * credentials, parameters, body fields, answers and error codes. Generated rather than written
 * so the reference in the repository cannot drift from the service (api-reference.test.ts
 * compares the file with this rendering of the live /openapi.json; `pnpm docs:api` rewrites it).
 * Nothing of one deployment (its address, its OAuth URLs) goes in: the file is the same for all.
 */

interface Schema {
  $ref?: string;
  type?: string | string[];
  description?: string;
  enum?: unknown[];
  const?: unknown;
  format?: string;
  items?: Schema;
  properties?: Record<string, Schema>;
  required?: string[];
  oneOf?: Schema[];
  anyOf?: Schema[];
  allOf?: Schema[];
}

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  description?: string;
  schema?: Schema;
}

interface Operation {
  summary?: string;
  description?: string;
  tags?: string[];
  security?: Array<Record<string, string[]>>;
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content?: Record<string, { schema?: Schema }> };
  responses?: Record<string, { description?: string }>;
}

export interface ApiDocument {
  info: { title: string; description?: string; version: string };
  tags?: Array<{ name: string; description?: string }>;
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Schema>; securitySchemes?: Record<string, { description?: string }> };
}

const METHODS = ["get", "post", "put", "patch", "delete"];

/** How each security scheme reads in a sentence. */
const CREDENTIALS: Record<string, string> = {
  bearerAuth: "API key",
  sessionCookie: "session cookie",
  mcpOAuth: "MCP OAuth token",
};

function oneLine(text: string | undefined): string {
  return (text ?? "").replace(/\s*\n\s*/g, " ").trim();
}

function cell(text: string | undefined): string {
  return oneLine(text).replace(/\|/g, "\\|");
}

function refName(ref: string): string {
  return ref.split("/").at(-1) ?? ref;
}

function typeOf(schema: Schema | undefined): string {
  if (!schema) return "";
  if (schema.$ref) return refName(schema.$ref);
  if (schema.const !== undefined) return `\`${JSON.stringify(schema.const)}\``;
  if (schema.enum) return schema.enum.map((value) => `\`${JSON.stringify(value)}\``).join(" \\| ");
  const variants = schema.oneOf ?? schema.anyOf;
  if (variants) return variants.map(typeOf).join(" or ");
  if (schema.type === "array") return `${typeOf(schema.items) || "any"}[]`;
  const type = Array.isArray(schema.type) ? schema.type.join(" \\| ") : (schema.type ?? "");
  return schema.format ? `${type} (${schema.format})` : type;
}

function resolve(document: ApiDocument, schema: Schema | undefined): Schema | undefined {
  if (!schema?.$ref) return schema;
  return document.components?.schemas?.[refName(schema.$ref)];
}

function fieldTable(schema: Schema): string[] {
  const required = new Set(schema.required ?? []);
  return [
    "| Field | Type | Required | Description |",
    "|---|---|---|---|",
    ...Object.entries(schema.properties ?? {}).map(
      ([name, field]) => `| \`${name}\` | ${typeOf(field)} | ${required.has(name) ? "yes" : "no"} | ${cell(field.description)} |`,
    ),
  ];
}

function credentials(operation: Operation): string {
  const schemes = (operation.security ?? []).flatMap((requirement) => Object.keys(requirement));
  if (schemes.length === 0) return "none";
  return schemes.map((scheme) => CREDENTIALS[scheme] ?? `\`${scheme}\``).join(" or ");
}

function body(document: ApiDocument, operation: Operation): string[] {
  const content = operation.requestBody?.content ?? {};
  const lines: string[] = [];
  for (const [mediaType, { schema }] of Object.entries(content)) {
    const variants = schema?.oneOf ?? schema?.anyOf;
    lines.push(`Body (\`${mediaType}\`${variants ? `, one of: ${variants.map(typeOf).join(", ")}` : ""}):`, "");
    for (const variant of variants ?? [schema]) {
      const resolved = resolve(document, variant);
      if (!resolved?.properties) continue;
      if (variants) lines.push(`${typeOf(variant)}${resolved.description ? `: ${oneLine(resolved.description)}` : ""}`, "");
      lines.push(...fieldTable(resolved), "");
    }
  }
  return lines;
}

function parameters(operation: Operation): string[] {
  const list = operation.parameters ?? [];
  if (list.length === 0) return [];
  return [
    "| Parameter | In | Type | Required | Description |",
    "|---|---|---|---|---|",
    ...list.map(
      (parameter) =>
        `| \`${parameter.name}\` | ${parameter.in} | ${typeOf(parameter.schema)} | ${parameter.required ? "yes" : "no"} | ${cell(parameter.description)} |`,
    ),
    "",
  ];
}

function responses(operation: Operation): string[] {
  return [
    "| Status | Meaning |",
    "|---|---|",
    ...Object.entries(operation.responses ?? {}).map(([status, response]) => `| ${status} | ${cell(response.description)} |`),
    "",
  ];
}

function anchor(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^a-z0-9 _-]/g, "")
    .replace(/ /g, "-");
}

export function renderApiReference(document: ApiDocument): string {
  const operations = Object.entries(document.paths).flatMap(([path, item]) =>
    METHODS.flatMap((method) => {
      const operation = item[method];
      return operation ? [{ path, method: method.toUpperCase(), operation }] : [];
    }),
  );
  const tagNames = [
    ...(document.tags ?? []).map((tag) => tag.name),
    ...operations.flatMap(({ operation }) => operation.tags ?? ["Other"]),
  ].filter((name, index, all) => all.indexOf(name) === index);
  const tagged = tagNames
    .map((name) => ({
      name,
      description: document.tags?.find((tag) => tag.name === name)?.description,
      operations: operations.filter(({ operation }) => (operation.tags ?? ["Other"])[0] === name),
    }))
    .filter((tag) => tag.operations.length > 0);

  const lines = [
    `# ${document.info.title} reference`,
    "",
    "<!-- Generated from the service's OpenAPI document by `pnpm docs:api`; edit the procedures' meta, not this file. -->",
    "",
    oneLine(document.info.description),
    "",
    "The same document, interactive, is served by every Retouch at `/docs` (Swagger UI) and as JSON at",
    "`/openapi.json`; agents read `/llms.txt`. Error codes, their statuses and what to do about each:",
    '[errors.md](errors.md). Every error answer is `{ "code": "...", "message": "..." }`, and a 429 or',
    "503 carries `Retry-After`.",
    "",
    "## Credentials",
    "",
    ...Object.entries(document.components?.securitySchemes ?? {}).map(
      ([name, scheme]) => `- **${CREDENTIALS[name] ?? name}** (\`${name}\`): ${oneLine(scheme.description)}`,
    ),
    "",
    "## Routes",
    "",
    "| Method | Path | What it does | Credentials |",
    "|---|---|---|---|",
    ...operations.map(
      ({ path, method, operation }) =>
        `| ${method} | [\`${path}\`](#${anchor(`${method} ${path}`)}) | ${cell(operation.summary)} | ${credentials(operation)} |`,
    ),
    "",
  ];
  for (const tag of tagged) {
    lines.push(`## ${tag.name}`, "");
    if (tag.description) lines.push(oneLine(tag.description), "");
    for (const { path, method, operation } of tag.operations) {
      lines.push(`### ${method} ${path}`, "");
      if (operation.summary)
        lines.push(`**${oneLine(operation.summary)}.**${operation.description ? ` ${oneLine(operation.description)}` : ""}`, "");
      lines.push(`Credentials: ${credentials(operation)}.`, "");
      lines.push(...parameters(operation), ...body(document, operation), ...responses(operation));
    }
  }
  return `${lines
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trimEnd()}\n`;
}
