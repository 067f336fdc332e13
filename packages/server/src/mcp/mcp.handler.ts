import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import {
  bearerToken,
  type Context,
  isClientError,
  MAX_WAIT_SECONDS,
  MCP_PATH,
  RATE_LIMIT_HEADERS,
  type RetouchError,
  type Services,
  toRetouchError,
} from "@retouch/core";
import { createHttpContext, type HttpContext } from "../http/request-context";
import { jsonResponse } from "../http/responses";
import { mcpBearerChallenge } from "../oauth/oauth.routes";
import { createResultContent } from "./mcp-results";
import { callTool, listedTool, type McpTool, mcpToolsFromRouter, RESULT_TOOL } from "./mcp-tools";

/** Defined once in core: it is also the resource OAuth tokens are issued for. */
export { MCP_PATH };
export const MCP_SERVER_VERSION = "1.0.0";

const INSTRUCTIONS = `Retouch edits images from plain-language instructions, as asynchronous jobs.
1. edit_image with the picture (image_url: a public https: URL the service fetches, best for a real photo; or image: base64 JPEG, PNG or WebP) and a prompt: it returns a job_id at once and costs 1 credit (refunded if the job fails). With wait_seconds (up to ${MAX_WAIT_SECONDS}) it returns the finished result instead when the job settles in time.
2. get_job_status every 2-5 seconds until status is "done" or "error".
3. get_job_result: a resource_link to a signed https url (valid 1 hour, no credentials needed), the picture itself when it is small, and its metadata.
Errors are tool results with isError: their text is JSON {"code", "message"} and the message says what to do. "email_unverified": the account owner must verify their email first; "insufficient_credits": the balance is empty; "rate_limited" (with retry_after_seconds) and "too_many_in_flight": wait before retrying, with the same idempotency_key.`;

type McpSdk = typeof import("@modelcontextprotocol/sdk/server/index.js") &
  typeof import("@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js") &
  typeof import("@modelcontextprotocol/sdk/types.js");
let sdk: Promise<McpSdk> | undefined;

/** The MCP SDK is loaded by the first MCP request, not at every start. */
function loadSdk(): Promise<McpSdk> {
  sdk ??= Promise.all([
    import("@modelcontextprotocol/sdk/server/index.js"),
    import("@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"),
    import("@modelcontextprotocol/sdk/types.js"),
  ]).then(([server, transport, types]) => ({ ...server, ...transport, ...types }));
  return sdk;
}

/**
 * A domain error as a tool result the agent reads: the error body as JSON
 * text (the code, a message that says what to do, why a job failed) and, since
 * no header reaches an agent, the `Retry-After` seconds. No
 * structuredContent: a client that listed the tools validates it against the
 * tool's output schema, and would turn the error into a protocol error.
 */
function toolError(error: RetouchError): CallToolResult {
  const body = {
    ...error.toBody(),
    ...(error.retryAfterSeconds === undefined ? {} : { retry_after_seconds: error.retryAfterSeconds }),
  };
  return { isError: true, content: [{ type: "text", text: JSON.stringify(body) }] };
}

/**
 * MCP over Streamable HTTP, stateless: a fresh server and transport per
 * request, JSON responses (no SSE), authenticated by the same `pk_` bearer key
 * (checked by the host from the headers, like every route, before the body).
 * The tools are served with the SDK's low-level server so that every call,
 * its arguments' validation included, answers with the service's own error
 * codes and messages (the SDK's tool helper answers invalid arguments with its
 * own text).
 */
export function createMcpHandler(services: Services) {
  const tools = mcpToolsFromRouter();
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  const listed = tools.map(listedTool);
  const found = byName.get(RESULT_TOOL);
  if (!found) throw new Error(`no ${RESULT_TOOL} tool: edit_image's wait_seconds answers as it does`);
  const resultTool: McpTool = found;
  const results = createResultContent(services);

  function buildServer({ Server, ListToolsRequestSchema, CallToolRequestSchema, McpError, ErrorCode }: McpSdk, context: Context) {
    const server = new Server(
      { name: "retouch", title: "Retouch", version: MCP_SERVER_VERSION },
      { capabilities: { tools: {} }, instructions: INSTRUCTIONS },
    );
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listed }));
    server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
      const tool = byName.get(request.params.name);
      if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool ${request.params.name}: tools/list names the tools.`);
      return callToolRequest(tool, request.params.arguments ?? {}, context, extra.signal);
    });
    return server;
  }

  async function callToolRequest(
    tool: McpTool,
    args: Record<string, unknown>,
    context: Context,
    signal: AbortSignal,
  ): Promise<CallToolResult> {
    const parsed = tool.input.safeParse(args);
    if (!parsed.success) return toolError(toRetouchError(parsed.error));
    const { idempotency_key: idempotencyKey, wait_seconds: waitSeconds, ...input } = parsed.data as Record<string, unknown>;
    // An agent's retry key rides on the context as the HTTP header would.
    const headers = new Headers(context.request.headers);
    if (typeof idempotencyKey === "string") headers.set("idempotency-key", idempotencyKey);
    const callContext = { ...context, request: { ...context.request, headers } };
    try {
      let output = (await callTool(tool, input, callContext)) as Record<string, unknown>;
      if (typeof waitSeconds === "number" && waitSeconds > 0 && typeof output.job_id === "string")
        output = await settled(output as { job_id: string }, waitSeconds, callContext, signal);
      return {
        content: [{ type: "text", text: JSON.stringify(output) }, ...(await results.contentFor(output))],
        structuredContent: output,
      };
    } catch (error) {
      const domain = toRetouchError(error);
      if (!isClientError(domain)) services.logger.error({ err: domain.cause ?? domain, tool: tool.name }, "MCP tool failed");
      return toolError(domain);
    }
  }

  /**
   * `wait_seconds`: waits for the submitted job to settle (woken by the
   * queue's settlement notice), then answers as get_job_result does, plus
   * the status; a job still running answers its id as without waiting. A
   * call the client abandons (its request closed) stops waiting at once.
   */
  async function settled(
    submitted: { job_id: string },
    waitSeconds: number,
    context: Context,
    signal: AbortSignal,
  ): Promise<Record<string, unknown>> {
    await services.jobs.waitForSettlement(submitted.job_id, waitSeconds * 1000, signal);
    if (signal.aborted) {
      services.logger.debug({ jobId: submitted.job_id }, "MCP call abandoned while waiting for its job");
      return { ...submitted, status: "pending" };
    }
    // Read even when the wait timed out: a settlement whose notice was missed is still seen.
    const result = (await callTool(resultTool, { job_id: submitted.job_id }, context)) as Record<string, unknown>;
    return result.status === "pending" ? { ...submitted, status: "pending" } : { ...result, status: "done" };
  }

  /**
   * The host's refusals before the transport runs: 401 with the challenge an
   * MCP client expects (RFC 9728: where to learn how to get a token, so a
   * client without a key can start the OAuth flow); anything else as a JSON-RPC error (parse error for
   * malformed JSON, invalid request otherwise) with the HTTP status and the
   * domain code in `data`.
   */
  function refuse(c: HttpContext, domain: RetouchError): Response {
    if (domain.code === "unauthorized") {
      const presented = bearerToken(c.req.header("authorization")) !== undefined;
      return jsonResponse(
        401,
        {
          code: "unauthorized",
          message:
            "Send your Retouch API key (Authorization: Bearer pk_...), or sign in with OAuth: the WWW-Authenticate header says where to start.",
        },
        {
          "WWW-Authenticate": mcpBearerChallenge(services.config.publicBaseUrl, presented ? "invalid_token" : undefined),
        },
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
    const context = createHttpContext(services, c);
    const server = buildServer(mcpSdk, context);
    const transport = new mcpSdk.WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    // A client that closes its request abandons the call: closing the server aborts its handlers (wait_seconds stops).
    const abandon = () => void server.close();
    c.req.raw.signal.addEventListener("abort", abandon, { once: true });
    try {
      await server.connect(transport);
      // The body was read by the edge: the transport gets it parsed, and a request without a stream to read.
      const request = new Request(c.req.url, { method: c.req.method, headers: c.req.raw.headers });
      const response = await transport.handleRequest(request, { parsedBody: c.var.body?.value });
      // An edit_image call's rate-limit figures, as REST sends them (an agent reading only the result loses nothing).
      for (const [name, value] of context.responseHeaders) {
        if (name in RATE_LIMIT_HEADERS) response.headers.set(name, value);
      }
      return response;
    } finally {
      c.req.raw.signal.removeEventListener("abort", abandon);
      void transport.close();
      void server.close();
    }
  }

  return { serve, refuse };
}
