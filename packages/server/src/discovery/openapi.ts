import {
  AUTH_BASE_PATH,
  appRouter,
  type Config,
  ERROR_CODES,
  type ErrorCode,
  JOB_FAILURE_CODES,
  MAX_BATCH_SIZE,
  type MultipartForm,
  type ProcedureMeta,
  processItemSchema,
  sessionCookieName,
} from "@retouch/core";
import { generateOpenApiDocument, type OpenAPIObject } from "trpc-to-openapi";
import { z } from "zod";
import { PROCESS_EVENTS_PATH } from "../http/events.handler";
import { MCP_PATH } from "../mcp/mcp.handler";

/**
 * The OpenAPI 3.1 document, generated from the router and then completed so
 * it tells the truth: trpc-to-openapi documents every success as 200 and its
 * own error shape, and knows nothing of cookies, idempotency or Retry-After.
 */

type Json = Record<string, unknown>;
type Operation = Json & { responses: Record<string, Json>; parameters?: Json[]; requestBody?: Json; security?: unknown };

const ERROR_SCHEMA = "#/components/schemas/Error";

const errorSchema: Json = {
  type: "object",
  description: "Every error answer has this shape.",
  required: ["code", "message"],
  properties: {
    code: { type: "string", enum: Object.keys(ERROR_CODES), description: "Stable machine-readable code" },
    message: { type: "string", description: "What went wrong, in words a person can act on" },
    issues: {
      type: "array",
      description: "For invalid input: each field and its problem",
      items: {
        type: "object",
        required: ["path", "message"],
        properties: { path: { type: "string" }, message: { type: "string" } },
      },
    },
    error: { type: "string", description: 'With `job_failed`: the spec\'s generic text, "Processing failed"' },
    error_code: {
      type: "string",
      enum: Object.keys(JOB_FAILURE_CODES),
      description: "With `job_failed`: why the job failed, as its status says it (a job failure code)",
    },
    error_message: { type: "string", description: "With `job_failed`: why the job failed, in a sentence a person can act on" },
  },
};

const retryAfter = {
  "Retry-After": { description: "Seconds to wait before retrying", schema: { type: "integer", minimum: 1 } },
};

const STATUS_TEXT: Record<number, string> = {
  400: "Invalid request",
  401: "Authentication required or invalid credentials",
  402: "Not enough credits",
  403: "Forbidden",
  404: "Not found",
  408: "The request body stopped arriving",
  413: "Request body too large",
  415: "Unsupported body type",
  422: "Unprocessable",
  429: "Too many requests",
  500: "Server error",
  502: "Upstream provider failure",
  503: "Too many large requests in flight; retry after Retry-After",
};

/** An error body as the service writes it; a failed job's says why it failed. */
function exampleBody(code: ErrorCode): Json {
  if (code !== "job_failed") return { code, message: ERROR_CODES[code].message };
  const why = JOB_FAILURE_CODES.nothing_detected.message;
  return {
    code,
    message: `Job job_01jz8q5n7d3k2m4p6r8t0v2x4y failed (nothing_detected): ${why} Its credit was refunded.`,
    error: "Processing failed",
    error_code: "nothing_detected",
    error_message: why,
  };
}

function errorResponses(codes: ErrorCode[]): Record<string, Json> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const { status } = ERROR_CODES[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus.entries()]
      .sort(([a], [b]) => a - b)
      .map(([status, statusCodes]) => [
        String(status),
        {
          description: `${STATUS_TEXT[status] ?? "Error"}: ${statusCodes.map((code) => `\`${code}\``).join(", ")}`,
          ...(status === 429 || status === 503 ? { headers: retryAfter } : {}),
          content: {
            "application/json": {
              schema: { $ref: ERROR_SCHEMA },
              examples: Object.fromEntries(statusCodes.map((code) => [code, { value: exampleBody(code) }])),
            },
          },
        },
      ]),
  );
}

function proceduresByRoute(): Map<string, ProcedureMeta> {
  const routes = new Map<string, ProcedureMeta>();
  for (const procedure of Object.values(
    appRouter._def.procedures as unknown as Record<string, { _def: { meta?: ProcedureMeta } }>,
  )) {
    const meta = procedure._def.meta;
    if (meta?.openapi) routes.set(`${meta.openapi.method.toLowerCase()} ${meta.openapi.path}`, meta);
  }
  return routes;
}

const jsonSchemaOf = (schema: z.ZodType): Json => {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as Json;
  return rest;
};

/** zod writes the safe-integer bounds on every integer; they say nothing to a reader. */
function dropSafeIntegerBounds(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) dropSafeIntegerBounds(item);
    return;
  }
  if (!node || typeof node !== "object") return;
  const record = node as Json;
  if (record.minimum === Number.MIN_SAFE_INTEGER) delete record.minimum;
  if (record.maximum === Number.MAX_SAFE_INTEGER) delete record.maximum;
  for (const value of Object.values(record)) dropSafeIntegerBounds(value);
}

/**
 * An operation's multipart body (what curl's `-F` sends) as OpenAPI 3.1 says
 * one: each file part binary (`contentMediaType`), each text part with the
 * JSON field's own schema, and the part types the host accepts.
 */
function multipartContent(form: MultipartForm, item: Json): Json {
  const fields = (item.properties ?? {}) as Record<string, Json>;
  const files = Object.entries(form.files);
  const required = [
    ...files.filter(([, file]) => file.required && !file.alternative).map(([name]) => name),
    ...((item.required ?? []) as string[]).filter((name) => form.text.includes(name)),
  ];
  return {
    schema: {
      type: "object",
      description:
        "One image as form parts, as `curl -F image=@photo.jpg -F prompt=...` sends them (a batch is sent as JSON). Each file part is at most the server's image limit (413 while it streams); a file part declared as anything but an image or `application/octet-stream` is refused with 415.",
      ...(required.length > 0 ? { required } : {}),
      properties: {
        ...Object.fromEntries(
          files.map(([name, file]) => [
            name,
            {
              type: "string",
              contentMediaType: "application/octet-stream",
              description: `${file.description}, as a file part${file.required ? `; required${file.alternative ? ` unless \`${file.alternative}\` is sent` : ""}` : ""}`,
            },
          ]),
        ),
        ...Object.fromEntries(form.text.map((name) => [name, fields[name] ?? { type: "string" }])),
      },
      additionalProperties: false,
    },
    encoding: Object.fromEntries(
      files.map(([name]) => [name, { contentType: "image/jpeg, image/png, image/webp, application/octet-stream" }]),
    ),
  };
}

/**
 * `POST /mcp` and `GET /mcp.json` are not procedures (the MCP SDK serves the
 * first, the discovery handler the second), so they are described here.
 */
function mcpPaths(): Record<string, Record<string, Operation>> {
  const jsonRpcRequest: Json = {
    type: "object",
    required: ["jsonrpc", "method"],
    properties: {
      jsonrpc: { const: "2.0" },
      id: { type: ["string", "integer", "null"], description: "Absent for a notification" },
      method: { type: "string", examples: ["initialize", "tools/list", "tools/call"] },
      params: { type: "object" },
    },
  };
  const jsonRpcResponse: Json = {
    type: "object",
    required: ["jsonrpc"],
    properties: {
      jsonrpc: { const: "2.0" },
      id: { type: ["string", "integer", "null"] },
      result: { type: "object", description: "For `tools/call`: `content`, `structuredContent` and `isError`" },
      error: {
        type: "object",
        required: ["code", "message"],
        properties: { code: { type: "integer" }, message: { type: "string" }, data: {} },
      },
    },
  };
  const oneOrMany = (schema: Json): Json => ({ oneOf: [schema, { type: "array", minItems: 1, items: schema }] });
  return {
    [MCP_PATH]: {
      post: {
        operationId: "mcp",
        summary: "MCP endpoint (JSON-RPC 2.0 over Streamable HTTP)",
        description:
          "Stateless Streamable HTTP: `initialize`, `tools/list`, then `tools/call` with `edit_image`, `get_job_status` or `get_job_result` (the same validation, credits and limits as the REST operations). Send `Accept: application/json, text/event-stream`; answers are JSON. Domain errors come back as tool results with `isError: true`.",
        tags: ["MCP"],
        security: [{ bearerAuth: [] }, { mcpOAuth: ["mcp"] }],
        requestBody: { required: true, content: { "application/json": { schema: oneOrMany(jsonRpcRequest) } } },
        responses: {
          "200": {
            description: "A JSON-RPC response, or an array of them for a batch",
            content: { "application/json": { schema: oneOrMany(jsonRpcResponse) } },
          },
          "202": { description: "A notification was accepted; no body" },
          "401": {
            description:
              "Authentication required: send an API key, or an OAuth access token issued for this endpoint, as a bearer token",
            headers: {
              "WWW-Authenticate": { description: "`Bearer` challenge naming the resource", schema: { type: "string" } },
            },
            content: { "application/json": { schema: { $ref: ERROR_SCHEMA } } },
          },
          "406": { description: "The `Accept` header must allow both `application/json` and `text/event-stream`" },
          "413": {
            description: "Request body too large",
            content: { "application/json": { schema: jsonRpcResponse } },
          },
        },
      },
    },
    "/mcp.json": {
      get: {
        operationId: "getMcpManifest",
        summary: "MCP manifest",
        description: "Where the MCP endpoint is, how to authenticate, and the tools it offers. Public.",
        tags: ["MCP"],
        security: [],
        responses: {
          "200": {
            description: "The manifest",
            content: {
              "application/json": {
                schema: {
                  type: "object",
                  required: ["name", "version", "description", "transport", "endpoint", "auth", "tools"],
                  properties: {
                    name: { type: "string" },
                    version: { type: "string" },
                    description: { type: "string" },
                    transport: { const: "streamable-http" },
                    endpoint: { type: "string", format: "uri" },
                    auth: {
                      type: "object",
                      required: ["type", "description"],
                      properties: { type: { const: "bearer" }, description: { type: "string" } },
                    },
                    tools: {
                      type: "array",
                      items: {
                        type: "object",
                        required: ["name", "description"],
                        properties: { name: { type: "string" }, description: { type: "string" } },
                      },
                    },
                  },
                },
              },
            },
          },
        },
      },
    },
  };
}

/**
 * The progress stream: served by the host (Server-Sent Events), not by a
 * procedure, so declared here with its own errors. Each `data` is the status
 * endpoint's answer, whose schema is the status operation's.
 */
function progressStreamPath(): Record<string, Operation> {
  const idParameter = (name: string, prefix: string, what: string): Json => ({
    name,
    in: "query",
    required: false,
    description: `${what} (${prefix}...); send exactly one of \`job_id\` and \`batch_id\``,
    schema: { type: "string" },
  });
  return {
    get: {
      operationId: "processEvents",
      summary: "Progress stream of a job or a batch",
      description:
        "Server-Sent Events instead of polling: one `status` event per change, whose `data` is exactly what `GET /api/process/status` answers for the same id at that moment; the last carries the terminal status with its metadata block, and then the stream ends by itself (for a batch, once every job is terminal). Each event has an `id:` (a job: `0` pending, `1` terminal; a batch: how many of its jobs are terminal); a client that reconnects with `Last-Event-ID` gets only what came after it, and a finished job resumed answers its terminal event again and ends. `:` comments are heartbeats. The dashboard's session cookie is accepted too (its playground follows its own jobs). An account may hold a few streams open at once (RETOUCH_EVENT_STREAMS_PER_ACCOUNT, 10 by default); the next is refused with 429 `too_many_in_flight`.",
      tags: ["Jobs"],
      security: [{ bearerAuth: [] }, { sessionCookie: [] }],
      parameters: [
        idParameter("job_id", "job_", "A job id"),
        idParameter("batch_id", "bat_", "A batch id"),
        {
          name: "Last-Event-ID",
          in: "header",
          required: false,
          description: "The `id` of the last event received, to resume after it",
          schema: { type: "string" },
        },
      ],
      responses: {
        "200": {
          description: "The event stream (`event: status`, `id:`, `data:` the status JSON), ending after the terminal status",
          content: { "text/event-stream": { schema: { type: "string" } } },
        },
        ...errorResponses(["invalid_request", "unauthorized", "not_found", "too_many_in_flight", "internal_error"]),
      },
    },
  };
}

export function buildOpenApiDocument(config: Pick<Config, "publicBaseUrl">): OpenAPIObject {
  const document = generateOpenApiDocument(appRouter, {
    title: "Retouch API",
    version: "1.0.0",
    openApiVersion: "3.1.0",
    baseUrl: config.publicBaseUrl,
    description:
      'Edit images from plain-language instructions. Submit an image with a prompt (`POST /api/process`); the job runs asynchronously (1 credit, refunded on failure); learn the outcome by a signed webhook or by polling `GET /api/process/status`, then fetch the signed result link from `GET /api/process/result`.\n\nAuthenticate with `Authorization: Bearer pk_...` (keys are created after sign-up and email verification). Errors are `{ "code", "message" }` with the codes listed on each operation. The same operations are offered to agents over MCP at `/mcp`.',
    securitySchemes: {
      bearerAuth: {
        type: "http",
        scheme: "bearer",
        bearerFormat: "pk_ API key",
        description: "An API key: `Authorization: Bearer pk_...`",
      },
      mcpOAuth: {
        type: "oauth2",
        description:
          "For `/mcp` only: an OAuth 2.1 access token (`mcp_at_...`) an MCP client obtains itself (dynamic client registration or a Client ID Metadata Document URL as client_id, PKCE S256, `resource` = the MCP endpoint). Discovery: `/.well-known/oauth-protected-resource/mcp`.",
        flows: {
          authorizationCode: {
            authorizationUrl: `${config.publicBaseUrl}/auth/oauth2/authorize`,
            tokenUrl: `${config.publicBaseUrl}/auth/oauth2/token`,
            refreshUrl: `${config.publicBaseUrl}/auth/oauth2/token`,
            scopes: { mcp: "Use the MCP tools on the account", offline_access: "Stay connected (a refresh token)" },
          },
        },
      },
      sessionCookie: {
        type: "apiKey",
        in: "cookie",
        name: sessionCookieName(config.publicBaseUrl),
        description:
          "The session cookie set by sign-up and sign-in (accepted on the key-management, account and job-listing routes)",
      },
    },
  }) as OpenAPIObject & { paths: Record<string, Record<string, Operation>> };

  const routes = proceduresByRoute();
  for (const [path, operations] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const meta = routes.get(`${method} ${path}`);
      if (!meta) continue;
      const success = operation.responses["200"] ?? { description: "Success" };
      const responses: Record<string, Json> = {};
      if (typeof meta.successStatus === "number") {
        responses[String(meta.successStatus)] = { ...success, description: meta.successStatus === 201 ? "Created" : "Success" };
      } else if (typeof meta.successStatus === "function") {
        // The result: 200 with the image link, 202 while the job is still processing.
        const schema = (success.content as { "application/json": { schema: { anyOf?: Json[]; oneOf?: Json[] } } })[
          "application/json"
        ].schema;
        const [done, pending] = schema.anyOf ?? schema.oneOf ?? [];
        responses["200"] = {
          description: "The job is done: a signed link and the metadata block",
          content: { "application/json": { schema: done } },
        };
        responses["202"] = { description: "The job is still processing", content: { "application/json": { schema: pending } } };
      } else {
        responses["200"] = { ...success, description: "Success" };
      }

      const hasBody = operation.requestBody !== undefined;
      const codes: ErrorCode[] = [
        ...(meta.errors ?? []),
        ...(meta.auth === "public" ? [] : (["unauthorized"] as const)),
        // The host's CSRF check (http/security.ts): a change the session cookie can make, and the /auth POSTs.
        ...((meta.auth === "key_or_session" && method !== "get") || (method === "post" && path.startsWith(`${AUTH_BASE_PATH}/`))
          ? (["cross_site_request"] as const)
          : []),
        // The host's checks of the body: size, type, room among the bodies in flight (503), a body that stalls (408).
        ...(hasBody
          ? (["invalid_json", "request_timeout", "payload_too_large", "unsupported_media_type", "service_unavailable"] as const)
          : []),
        "internal_error",
      ];
      if (meta.errors?.includes("job_failed")) codes.splice(codes.indexOf("internal_error"), 1);
      Object.assign(responses, errorResponses([...new Set(codes)]));
      // Headers the operation declares itself (a submission's X-RateLimit-*), on its success and its 429.
      if (meta.responseHeaders) {
        for (const status of Object.keys(responses).filter((status) => status.startsWith("2") || status === "429")) {
          const response = responses[status] as Json;
          responses[status] = { ...response, headers: { ...(response.headers as Json | undefined), ...meta.responseHeaders } };
        }
      }
      operation.responses = responses;

      operation.security =
        meta.auth === "public"
          ? []
          : meta.auth === "key_or_session"
            ? [{ bearerAuth: [] }, { sessionCookie: [] }]
            : [{ bearerAuth: [] }];
      if (operation.parameters?.length === 0) delete operation.parameters;
    }
  }

  // Sign-up and sign-in set the session cookie; sign-out clears it; reading the session may refresh it.
  const setCookie: Array<[method: string, path: string, description: string]> = [
    ["post", "/auth/sign-up/email", "The session cookie (`retouch.session_token=...`); resend it in a `Cookie` header"],
    ["post", "/auth/sign-in/email", "The session cookie (`retouch.session_token=...`); resend it in a `Cookie` header"],
    ["post", "/auth/sign-out", "Clears the session cookie (`Max-Age=0`)"],
    ["get", "/auth/get-session", "When the session was extended, the refreshed cookie; when it ended, one that clears it"],
  ];
  for (const [method, path, description] of setCookie) {
    const ok = document.paths[path]?.[method]?.responses?.["200"];
    if (ok) ok.headers = { "Set-Cookie": { description, schema: { type: "string" } } };
  }

  // A submission is one image or a batch; the router's single object cannot say "one of".
  const submit = document.paths["/api/process"]?.post;
  if (submit) {
    submit.parameters = [
      {
        name: "Idempotency-Key",
        in: "header",
        required: false,
        description:
          "A retry with the same key and body returns the original answer and charges nothing (keys are kept 48 hours). A UUID is ideal.",
        schema: { type: "string", minLength: 1, maxLength: 255 },
      },
    ];
    const form = routes.get("post /api/process")?.multipart;
    submit.requestBody = {
      required: true,
      content: {
        "application/json": {
          schema: { oneOf: [{ $ref: "#/components/schemas/ProcessRequestItem" }, { $ref: "#/components/schemas/BatchRequest" }] },
        },
        ...(form ? { "multipart/form-data": multipartContent(form, jsonSchemaOf(processItemSchema)) } : {}),
      },
    };
  }

  document.paths["/files/results/{file}"] = {
    get: {
      operationId: "downloadResult",
      summary: "Download a result image",
      description:
        "The `url` of `GET /api/process/result` (and of a webhook's `result_url`). The signature in the query is the credential: no header is needed, and the link works for 1 hour. A server that keeps results in an S3 bucket may hand out the bucket's own presigned URL instead, which works the same way.",
      tags: ["Jobs"],
      security: [],
      parameters: [
        { name: "file", in: "path", required: true, schema: { type: "string" }, description: "`<job_id>.<png|jpeg|webp>`" },
        {
          name: "expires",
          in: "query",
          required: true,
          schema: { type: "integer" },
          description: "Unix seconds when the link stops working",
        },
        {
          name: "signature",
          in: "query",
          required: true,
          schema: { type: "string" },
          description: "HMAC of the path and expiry",
        },
      ],
      responses: {
        "200": {
          description: "The image",
          content: {
            "image/png": { schema: { type: "string", contentMediaType: "image/png" } },
            "image/jpeg": { schema: { type: "string", contentMediaType: "image/jpeg" } },
            "image/webp": { schema: { type: "string", contentMediaType: "image/webp" } },
          },
        },
        ...errorResponses(["signed_url_invalid", "not_found"]),
      },
    },
  };

  document.paths[PROCESS_EVENTS_PATH] = progressStreamPath();
  Object.assign(document.paths, mcpPaths());

  const item = jsonSchemaOf(processItemSchema);
  document.components = {
    ...document.components,
    schemas: {
      Error: errorSchema,
      ProcessRequestItem: {
        ...item,
        description: "One image to edit: `image` (the spec's required field) or, instead, `image_url`",
        // The spec's `image` stays required unless its alternative `image_url` is given: exactly one of the two.
        oneOf: [
          { required: ["image"], not: { required: ["image_url"] } },
          { required: ["image_url"], not: { required: ["image"] } },
        ],
      },
      BatchRequest: {
        type: "object",
        description: `A batch: 1 to ${MAX_BATCH_SIZE} images (at most your plan's concurrent-jobs limit)`,
        required: ["images"],
        properties: {
          images: {
            type: "array",
            minItems: 1,
            maxItems: MAX_BATCH_SIZE,
            items: { $ref: "#/components/schemas/ProcessRequestItem" },
          },
        },
        additionalProperties: false,
      },
    },
  };
  document.tags = [
    {
      name: "Accounts",
      description:
        "Sign up, verify the email, sign in and out, reset a forgotten password; the account's plan, balance and usage",
    },
    { name: "API keys", description: "Mint, list and revoke `pk_` keys" },
    { name: "Jobs", description: "Submit edits, poll their status, fetch the results, list past jobs" },
    { name: "Webhooks", description: "The signing secret and the delivery log of settlement callbacks" },
    { name: "Connected apps", description: "The MCP apps the account approved through OAuth, and disconnecting them" },
    { name: "MCP", description: "The same operations as tools for agents (Model Context Protocol over Streamable HTTP)" },
  ];
  document.info = {
    ...document.info,
    license: { name: "MIT", identifier: "MIT" },
    contact: { name: "Retouch", url: config.publicBaseUrl },
  };
  dropSafeIntegerBounds(document);
  return document;
}
