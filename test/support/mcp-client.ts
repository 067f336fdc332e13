import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

/**
 * The official MCP client, connected over real HTTP to a Retouch at `baseUrl`
 * with a `pk_` key, having listed the tools as every agent does first: from
 * then on the client checks each result's structuredContent against the
 * tool's output schema (and would throw where an agent would see a protocol
 * error).
 */
export async function connectMcp(baseUrl: string, key: string, name = "retouch-test-agent"): Promise<Client> {
  const client = new Client({ name, version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${key}` } },
    }),
  );
  await client.listTools();
  return client;
}
