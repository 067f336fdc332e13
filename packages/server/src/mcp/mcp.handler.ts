import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { bearerToken, type Context, isClientError, type RetouchError, type Services } from "@retouch/core";
import { createHttpContext, type HttpContext } from "../http/request-context";
import { jsonResponse } from "../http/responses";
import { callTool, type McpTool, mcpToolsFromRouter } from "./mcp-tools";

export const MCP_PATH = "/mcp";
export const MCP_SERVER_VERSION = "1.0.0";

const INSTRUCTIONS = `Retouch edits images from plain-language instructions.
1. edit_image with the image (base64 JPEG, PNG or WebP, or image_url: a public https URL the service fetches) and a prompt: it returns a job_id at once and costs 1 credit (refunded if the job fails).
2. get_job_status every 2-5 seconds until status is "done" or "error".
3. get_job_result: a signed https url to download the image (valid 1 hour) and its metadata.
Errors come back as tool errors whose text is JSON {"code", "message"}; "email_unverified" means the account owner must verify their email first, "insufficient_credits" that the balance is empty, "rate_limited" and "too_many_in_flight" that you should wait before retrying.`;

type McpSdk = typeof import("@modelcontextprotocol/sdk/server/mcp.js") &
  typeof import("@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js");
let sdk: Promise<McpSdk> | undefined;

/** The MCP SDK (with its JSON Schema validator) is loaded by the first MCP request, not at every start. */
function loadSdk(): Promise<McpSdk> {
  sdk ??= Promise.all([
    import("@modelcontextprotocol/sdk/server/mcp.js"),
    import("@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"),
  ]).then(([server, transport]) => ({ ...server, ...transport }));
  return sdk;
}

/**
 * No structuredContent: clients that listed the tools validate it against the
 * tool's output schema, even on an error, and would turn `{ code, message }`
 * into a protocol error instead of a tool error the agent can read.
 */
function toolError(error: RetouchError) {
  return { isError: true, content: [{ type: "text" as const, text: JSON.stringify(error.toBody()) }] };
}

/**
 * MCP over Streamable HTTP, stateless: a fresh server and transport per
 * request, JSON responses (no SSE), authenticated by the same `pk_` bearer key
 * (checked by the host from the headers, like every route, before the body).
 */
export function createMcpHandler(services: Services) {
  const tools = mcpToolsFromRouter();
  const realm = `Bearer realm="Retouch", resource="${services.config.publicBaseUrl}${MCP_PATH}"`;

  function buildServer({ McpServer }: McpSdk, context: Context): McpServer {
    const server = new McpServer(
      { name: "retouch", version: MCP_SERVER_VERSION },
      { capabilities: { tools: {} }, instructions: INSTRUCTIONS },
    );
    for (const tool of tools) registerTool(server, tool, context);
    return server;
  }

  function registerTool(server: McpServer, tool: McpTool, context: Context): void {
    server.registerTool(
      tool.name,
      { description: tool.description, inputSchema: tool.input, outputSchema: tool.output },
      async (args) => {
        const { idempotency_key: idempotencyKey, ...input } = args as Record<string, unknown>;
        // An agent's retry key rides on the context as the HTTP header would.
        const headers = new Headers(context.request.headers);
        if (typeof idempotencyKey === "string") headers.set("idempotency-key", idempotencyKey);
        try {
          const output = await callTool(tool, input, { ...context, request: { ...context.request, headers } });
          return {
            content: [{ type: "text" as const, text: JSON.stringify(output) }],
            structuredContent: output as Record<string, unknown>,
          };
        } catch (error) {
          const domain = error as RetouchError;
          if (!isClientError(domain)) services.logger.error({ err: domain.cause ?? domain, tool: tool.name }, "MCP tool failed");
          return toolError(domain);
        }
      },
    );
  }

  /**
   * The host's refusals before the transport runs: 401 with the challenge an
   * MCP client expects; anything else as a JSON-RPC error (parse error for
   * malformed JSON, invalid request otherwise) with the HTTP status and the
   * domain code in `data`.
   */
  function refuse(c: HttpContext, domain: RetouchError): Response {
    if (domain.code === "unauthorized") {
      const presented = bearerToken(c.req.header("authorization")) !== undefined;
      return jsonResponse(
        401,
        { code: "unauthorized", message: "Send your Retouch API key: Authorization: Bearer pk_..." },
        { "WWW-Authenticate": `${realm}${presented ? ', error="invalid_token"' : ""}` },
      );
    }
    return jsonResponse(
      domain.status,
      {
        jsonrpc: "2.0",
        error: { code: domain.code === "invalid_json" ? -32700 : -32600, message: domain.message, data: { code: domain.code } },
        id: null,
      },
      domain.headers(),
    );
  }

  /**
   * Serves a request the edge has authenticated and whose body it has read and
   * checked, through the SDK's web-standard transport (a fetch Request in, a
   * Response out). In JSON mode the Response is whole when it resolves, so the
   * per-request server and transport are closed then.
   */
  async function serve(c: HttpContext): Promise<Response> {
    const mcpSdk = await loadSdk();
    const server = buildServer(mcpSdk, createHttpContext(services, c));
    const transport = new mcpSdk.WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    try {
      await server.connect(transport);
      // The body was read by the edge: the transport gets it parsed, and a request without a stream to read.
      const request = new Request(c.req.url, { method: c.req.method, headers: c.req.raw.headers });
      return await transport.handleRequest(request, { parsedBody: c.var.body?.value });
    } finally {
      void transport.close();
      void server.close();
    }
  }

  return { serve, refuse };
}
