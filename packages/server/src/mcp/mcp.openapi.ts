import { ERROR_SCHEMA, type Json, type Operation } from "../discovery/error-responses";
import { MCP_PATH } from "./mcp.handler";

/**
 * `POST /mcp` and `GET /mcp.json` in the OpenAPI document: not procedures
 * (the MCP SDK serves the first, the discovery handler the second), so the
 * generator cannot derive them; described beside the endpoint they document.
 */
export function mcpPaths(): Record<string, Record<string, Operation>> {
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
