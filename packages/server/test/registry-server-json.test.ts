import { readFile } from "node:fs/promises";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyedAccount } from "../../../test/support/accounts";
import { startTestApp, type TestApp } from "../../../test/support/test-app";
import { MCP_PATH, MCP_SERVER_VERSION } from "../src/mcp/mcp.handler";

/**
 * `server.json`, the MCP Registry's description of this server. The
 * registry's JSON Schema ships in no npm package, so this checks the rules its
 * 2025-12-11 schema and the registry's docs state (required fields, lengths,
 * patterns, the GitHub namespace, URL template variables), and that the
 * remote it describes is this service: its path, its version, and a header
 * filled in as a client would fill it is accepted.
 */
interface Input {
  description?: string;
  isRequired?: boolean;
  isSecret?: boolean;
  value?: string;
  placeholder?: string;
  variables?: Record<string, Input>;
}
interface ServerJson {
  $schema: string;
  name: string;
  title?: string;
  description: string;
  version: string;
  websiteUrl?: string;
  repository?: { url: string; source: string };
  remotes: Array<{ type: string; url: string; variables?: Record<string, Input>; headers?: Array<Input & { name: string }> }>;
}

const SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json";
let server: ServerJson;
let app: TestApp;

/** `{name}` placeholders, replaced from `values`; every one must be declared. */
function fill(template: string, variables: Record<string, Input> | undefined, values: Record<string, string>): string {
  return template.replace(/\{([^}]+)\}/g, (_all, name: string) => {
    expect(variables?.[name], `{${name}} is not declared in variables`).toBeDefined();
    return values[name] ?? "";
  });
}

beforeAll(async () => {
  server = JSON.parse(await readFile(new URL("../../../server.json", import.meta.url), "utf8")) as ServerJson;
  app = await startTestApp({}, { role: "api" });
}, 120_000);
afterAll(() => app?.close());

describe("server.json for the MCP Registry", () => {
  it("follows the registry's schema rules", () => {
    expect(server.$schema).toBe(SCHEMA);
    expect(server.name).toMatch(/^[a-zA-Z0-9.-]+\/[a-zA-Z0-9._-]+$/);
    expect(server.name.length).toBeGreaterThanOrEqual(3);
    expect(server.name.length).toBeLessThanOrEqual(200);
    for (const text of [server.description, server.title ?? "x"]) {
      expect(text.length).toBeGreaterThanOrEqual(1);
      expect(text.length).toBeLessThanOrEqual(100);
    }
    // A specific version, never a range; the one the server answers at initialize.
    expect(server.version).toBe(MCP_SERVER_VERSION);
    expect(server.version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(server.repository).toMatchObject({ source: "github", url: expect.stringMatching(/^https:\/\/github\.com\//) });
    // Publishing under io.github.<owner>/ is proved by signing in to GitHub as that owner.
    const owner = new URL(server.repository?.url as string).pathname.split("/")[1];
    expect(server.name.startsWith(`io.github.${owner}/`)).toBe(true);
    expect(server.remotes.length).toBeGreaterThan(0);
    for (const remote of server.remotes) {
      expect(["streamable-http", "sse"]).toContain(remote.type);
      expect(remote.url).toMatch(/^https?:\/\/[^\s]+$/);
      for (const header of remote.headers ?? []) {
        expect(header.name).toMatch(/^[A-Za-z0-9-]+$/);
        for (const variable of Object.values(header.variables ?? {})) expect(typeof variable.description).toBe("string");
      }
    }
  });

  it("describes this service: Streamable HTTP at PUBLIC_BASE_URL/mcp, the key in a secret header", () => {
    const [remote] = server.remotes;
    expect(remote?.type).toBe("streamable-http");
    const url = fill(remote?.url as string, remote?.variables, { retouch_host: "retouch.example.com/edit" });
    expect(url).toBe(`https://retouch.example.com/edit${MCP_PATH}`);
    const header = remote?.headers?.find((candidate) => candidate.name === "Authorization");
    expect(header).toMatchObject({ isSecret: true, value: "Bearer {api_key}" });
    expect(header?.variables?.api_key).toMatchObject({ isSecret: true, placeholder: "pk_..." });
  });

  it("a client that fills the header as described connects and lists the tools", async () => {
    const account = await keyedAccount(app);
    const header = server.remotes[0]?.headers?.[0] as Input & { name: string };
    const value = fill(header.value as string, header.variables, { api_key: account.key });
    const client = new Client({ name: "registry-client", version: "1.0.0" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${app.url}${MCP_PATH}`), { requestInit: { headers: { [header.name]: value } } }),
    );
    try {
      expect((await client.listTools()).tools).toHaveLength(3);
      expect(client.getServerVersion()?.version).toBe(server.version);
    } finally {
      await client.close();
    }
  });
});
