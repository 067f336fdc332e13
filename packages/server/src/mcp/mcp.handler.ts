import type { IncomingMessage, ServerResponse } from "node:http";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { bearerToken, type Context, isClientError, type RetouchError, type Services } from "@retouch/core";
import { readJsonBody } from "../http/body";
import { createHttpContext } from "../http/request-context";
import { sendJson } from "../http/responses";
import { callTool, type McpTool, mcpToolsFromRouter } from "./mcp-tools";

export const MCP_PATH = "/mcp";
export const MCP_SERVER_VERSION = "1.0.0";

const INSTRUCTIONS = `Retouch edits images from plain-language instructions.
1. edit_image with the image (base64 JPEG, PNG or WebP) and a prompt: it returns a job_id at once and costs 1 credit (refunded if the job fails).
2. get_job_status every 2-5 seconds until status is "done" or "error".
3. get_job_result: a signed https url to download the image (valid 1 hour) and its metadata.
Errors come back as tool errors whose text is JSON {"code", "message"}; "email_unverified" means the account owner must verify their email first, "insufficient_credits" that the balance is empty, "rate_limited" and "too_many_in_flight" that you should wait before retrying.`;

type McpSdk = typeof import("@modelcontextprotocol/sdk/server/mcp.js") &
  typeof import("@modelcontextprotocol/sdk/server/streamableHttp.js");
let sdk: Promise<McpSdk> | undefined;

/** The MCP SDK (with its JSON Schema validator) is loaded by the first MCP request, not at every start. */
function loadSdk(): Promise<McpSdk> {
  sdk ??= Promise.all([
    import("@modelcontextprotocol/sdk/server/mcp.js"),
    import("@modelcontextprotocol/sdk/server/streamableHttp.js"),
  ]).then(([server, transport]) => ({ ...server, ...transport }));
  return sdk;
}

function toolError(error: RetouchError) {
  const body: Record<string, unknown> = { ...error.toBody() };
  return { isError: true, content: [{ type: "text" as const, text: JSON.stringify(body) }], structuredContent: body };
}

/**
 * MCP over Streamable HTTP, stateless: a fresh server and transport per
 * request, JSON responses (no SSE), authenticated by the same `pk_` bearer key.
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

  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const key = bearerToken(req.headers.authorization);
    if (!key || !(await services.apiKeys.authenticate(key))) {
      sendJson(
        res,
        401,
        { code: "unauthorized", message: "Send your Retouch API key: Authorization: Bearer pk_..." },
        { "WWW-Authenticate": `${realm}${key ? ', error="invalid_token"' : ""}` },
      );
      return;
    }
    let body: unknown;
    try {
      // Tool calls carry images: the submission limit applies, not the 1 MiB of other routes.
      body = await readJsonBody(req, services.config.maxRequestBytes);
    } catch (error) {
      const domain = error as RetouchError;
      const status = domain.status ?? 400;
      sendJson(res, status, {
        jsonrpc: "2.0",
        error: { code: status === 413 ? -32600 : -32700, message: domain.message },
        id: null,
      });
      return;
    }
    const mcpSdk = await loadSdk();
    const server = buildServer(mcpSdk, createHttpContext(services, req));
    const transport = new mcpSdk.StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  };
}
