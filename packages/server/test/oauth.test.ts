import { createHash, randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { auth, discoverOAuthServerInfo, UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import { authenticate, defaultClientMetadataFetch } from "@retouch/core";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey, sessionCookie, signUpVerified, type TestAccount } from "../../../test/support/accounts";
import { freePort } from "../../../test/support/free-port";
import { request } from "../../../test/support/http-client";
import { base64, productPhoto } from "../../../test/support/images";
import { sweep } from "../../../test/support/maintenance";
import { connectMcp } from "../../../test/support/mcp-client";
import {
  connectApp,
  consent,
  MemoryOAuthClientProvider,
  type Navigation,
  navigate,
  throughSignIn,
} from "../../../test/support/oauth-client";
import { startTestApp, type TestApp } from "../../../test/support/test-app";

/**
 * The OAuth 2.1 authorization server for MCP clients, driven by the official
 * MCP SDK (its transport's `authProvider` and `auth()`) over real HTTP against
 * a running Retouch whose PUBLIC_BASE_URL is its own address.
 */
let app: TestApp;
let base: string;
let account: TestAccount;
const REDIRECT_URI = "http://127.0.0.1:9/callback";
const REGISTRATIONS_PER_ADDRESS = 8;
/** Requests naming a metadata document URL one address may make per minute, in this test. */
const CLIENT_METADATA_REQUESTS_PER_ADDRESS = 20;

/**
 * Client ID Metadata Documents as an MCP client's own web site serves them:
 * a real HTTP server on loopback, reached for the public name AGENT_SITE.
 * Only the transport's DNS and TLS are replaced (no public host is reachable
 * from the tests); what the plugin does with the answer is what production runs.
 */
const AGENT_SITE = "https://agent.example.com";
const documents = new Map<string, { status?: number; body: unknown; headers?: Record<string, string> }>();
const documentFetches: string[] = [];
let documentServer: Server;

function fetchFromAgentSite(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  const asked = new Request(input, init);
  const url = new URL(asked.url);
  if (url.origin !== AGENT_SITE) return Promise.reject(new TypeError(`no test site at ${url.origin}`));
  documentFetches.push(url.pathname);
  const { port } = documentServer.address() as AddressInfo;
  return fetch(`http://127.0.0.1:${port}${url.pathname}${url.search}`, {
    method: asked.method,
    headers: asked.headers,
    redirect: "manual",
    signal: asked.signal,
  });
}

beforeAll(async () => {
  documentServer = createServer((req, res) => {
    const document = documents.get(req.url ?? "");
    res.writeHead(document?.status ?? (document ? 200 : 404), { "content-type": "application/json", ...document?.headers });
    res.end(document ? JSON.stringify(document.body) : "{}");
  });
  await new Promise<void>((resolve) => documentServer.listen(0, "127.0.0.1", resolve));
  const port = await freePort();
  app = await startTestApp(
    {
      PORT: String(port),
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      // The burst test sends X-Forwarded-For so its address has a budget of its own.
      RETOUCH_TRUST_PROXY: "1",
      RETOUCH_OAUTH_REGISTRATION_RATE_LIMIT: `${REGISTRATIONS_PER_ADDRESS}/1h`,
      RETOUCH_OAUTH_CLIENT_METADATA_RATE_LIMIT: `${CLIENT_METADATA_REQUESTS_PER_ADDRESS}/1m`,
      RETOUCH_QUEUE_POLL_INTERVAL: "200ms",
    },
    { fetchClientMetadata: fetchFromAgentSite },
  );
  base = app.url;
  account = await signUpVerified(app);
});
afterAll(async () => {
  await app?.close();
  documentServer?.close();
});

async function signIn(who: TestAccount): Promise<string> {
  const response = await request(base, "POST", "/auth/sign-in/email", { body: { email: who.email, password: who.password } });
  expect(response.status).toBe(200);
  return sessionCookie(response.headers);
}

function bearer(token: string): Headers {
  return new Headers({ authorization: `Bearer ${token}` });
}

function registerClient(metadata: Record<string, unknown>, address: string) {
  return request(base, "POST", "/auth/oauth2/register", { body: metadata, headers: { "x-forwarded-for": address } });
}

function pkcePair() {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
}

describe("metadata documents", () => {
  it("protected-resource metadata (RFC 9728) names /mcp and its authorization server, at both paths", async () => {
    const [plain, suffixed] = await Promise.all([
      request(base, "GET", "/.well-known/oauth-protected-resource"),
      request(base, "GET", "/.well-known/oauth-protected-resource/mcp", { headers: { origin: "https://agent.example" } }),
    ]);
    for (const response of [plain, suffixed]) {
      expect(response.status).toBe(200);
      expect(response.body).toEqual({
        resource: `${base}/mcp`,
        authorization_servers: [`${base}/auth`],
        scopes_supported: ["mcp", "offline_access"],
        bearer_methods_supported: ["header"],
        resource_name: "Retouch MCP server",
        resource_documentation: `${base}/llms.txt`,
      });
    }
    // Public, without cookies: any origin may read it (browser-based MCP clients).
    expect(suffixed.headers.get("access-control-allow-origin")).toBe("*");
    expect(suffixed.headers.get("access-control-allow-credentials")).toBeNull();
  });

  it("authorization-server metadata (RFC 8414): S256 only, code and refresh grants, registration, at the root and the issuer's path", async () => {
    const [root, suffixed] = await Promise.all([
      request(base, "GET", "/.well-known/oauth-authorization-server"),
      request(base, "GET", "/.well-known/oauth-authorization-server/auth"),
    ]);
    expect(root.status).toBe(200);
    expect(suffixed.body).toEqual(root.body);
    expect(root.body).toMatchObject({
      issuer: `${base}/auth`,
      authorization_endpoint: `${base}/auth/oauth2/authorize`,
      token_endpoint: `${base}/auth/oauth2/token`,
      registration_endpoint: `${base}/auth/oauth2/register`,
      revocation_endpoint: `${base}/auth/oauth2/revoke`,
      response_types_supported: ["code"],
      grant_types_supported: ["authorization_code", "refresh_token"],
      code_challenge_methods_supported: ["S256"],
      scopes_supported: ["mcp", "offline_access"],
    });
    expect(root.body.token_endpoint_auth_methods_supported).toContain("none");
    // Bearer tokens only: /mcp checks no DPoP proof. Clients may name themselves by a metadata document's URL.
    expect(root.body).not.toHaveProperty("dpop_signing_alg_values_supported");
    expect(root.body.client_id_metadata_document_supported).toBe(true);
  });

  it("the official client's discovery finds both from the MCP endpoint's address", async () => {
    const info = await discoverOAuthServerInfo(`${base}/mcp`);
    expect(String(info.authorizationServerUrl)).toBe(`${base}/auth`);
    expect(info.resourceMetadata?.resource).toBe(`${base}/mcp`);
    expect(info.authorizationServerMetadata?.issuer).toBe(`${base}/auth`);
  });
});

describe("/mcp with an OAuth access token", () => {
  const initialize = {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
  };
  const post = (authorization?: string) =>
    request(base, "POST", "/mcp", {
      body: initialize,
      headers: { accept: "application/json, text/event-stream", ...(authorization ? { authorization } : {}) },
    });

  it("answers 401 with the RFC 9728 challenge: where the protected-resource metadata is", async () => {
    const challenge = `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`;
    const none = await post();
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toBe(challenge);
    expect(none.body).toMatchObject({ code: "unauthorized", message: expect.stringContaining("OAuth") });
    for (const wrong of [`Bearer mcp_at_${"x".repeat(32)}`, `Bearer pk_${"A".repeat(43)}`]) {
      const refused = await post(wrong);
      expect(refused.status).toBe(401);
      expect(refused.headers.get("www-authenticate")).toBe(`${challenge}, error="invalid_token"`);
    }
  });

  it("the official client: 401 -> sign-in and consent -> finishAuth -> tools/list and tool calls on the person's account", async () => {
    const provider = new MemoryOAuthClientProvider(REDIRECT_URI, "Transport Agent");
    const endpoint = new URL(`${base}/mcp`);
    // No credential: the transport follows the 401's challenge, registers, and sends the person to authorize.
    const first = new StreamableHTTPClientTransport(endpoint, { authProvider: provider });
    await expect(new Client({ name: "oauth-agent", version: "1.0.0" }).connect(first)).rejects.toThrow(UnauthorizedError);
    expect(provider.authorizationUrl?.pathname).toBe("/auth/oauth2/authorize");

    const cookie = await signIn(account);
    const consentPage = await throughSignIn(base, provider.authorizationUrl as URL, cookie);
    const approved = await consent(base, cookie, consentPage, true);
    await first.finishAuth(new URL(approved.body.url).searchParams.get("code") as string);
    expect(provider.tokens()?.access_token).toMatch(/^mcp_at_/);

    const client = new Client({ name: "oauth-agent", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(endpoint, { authProvider: provider }));
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(["edit_image", "get_job_result", "get_job_status"]);
    const before = (await app.services.profiles.get(account.userId)).credits;
    const started = await client.callTool({
      name: "edit_image",
      arguments: { image: base64(await productPhoto()), prompt: "make it black and white" },
    });
    expect(started.isError).toBeFalsy();
    const jobId = (started.structuredContent as { job_id: string }).job_id;
    expect(jobId).toMatch(/^job_/);
    // The person's account paid for it.
    expect((await app.services.profiles.get(account.userId)).credits).toBe(before - 1);
    const status = await client.callTool({ name: "get_job_status", arguments: { job_id: jobId } });
    expect(status.isError).toBeFalsy();
    expect(["pending", "done"]).toContain((status.structuredContent as { status: string }).status);
    await client.close();
  });
});

describe("the whole flow with the official MCP client's auth()", () => {
  it("discovery -> registration -> sign-in -> consent -> code exchange -> a token for /mcp only -> refresh -> disconnect", async () => {
    const provider = new MemoryOAuthClientProvider(REDIRECT_URI, "Flow Agent");
    expect(await auth(provider, { serverUrl: `${base}/mcp` })).toBe("REDIRECT");
    const registered = provider.clientInformation();
    expect(registered?.client_id).toEqual(expect.any(String));
    const authorizationUrl = provider.authorizationUrl as URL;
    expect(authorizationUrl.searchParams.get("code_challenge_method")).toBe("S256");
    expect(authorizationUrl.searchParams.get("resource")).toBe(`${base}/mcp`);
    expect(authorizationUrl.searchParams.get("scope")).toBe("mcp offline_access");

    // Not signed in: the dashboard's sign-in page, then (signed in) its consent page.
    const cookie = await signIn(account);
    const consentPage = await throughSignIn(base, authorizationUrl, cookie);
    expect(consentPage.searchParams.get("client_id")).toBe(registered?.client_id);
    expect(consentPage.searchParams.get("scope")).toBe("mcp offline_access");
    // What the consent page shows: the client's name.
    const client = await request(base, "GET", `/auth/oauth2/public-client?client_id=${registered?.client_id}`, { cookie });
    expect(client.status).toBe(200);
    expect(client.body).toMatchObject({ client_id: registered?.client_id, client_name: "Flow Agent" });

    const approved = await consent(base, cookie, consentPage, true);
    expect(approved.status).toBe(200);
    const callback = new URL(approved.body.url);
    expect(`${callback.origin}${callback.pathname}`).toBe(REDIRECT_URI);
    expect(callback.searchParams.get("iss")).toBe(`${base}/auth`);
    const code = callback.searchParams.get("code") as string;

    expect(await auth(provider, { serverUrl: `${base}/mcp`, authorizationCode: code })).toBe("AUTHORIZED");
    const tokens = provider.tokens();
    expect(tokens).toMatchObject({
      token_type: "Bearer",
      expires_in: 3600,
      scope: "mcp offline_access",
      access_token: expect.stringMatching(/^mcp_at_/),
      refresh_token: expect.stringMatching(/^mcp_rt_/),
    });
    const accessToken = tokens?.access_token as string;

    // The token speaks for the account on the MCP surface, and nowhere else.
    const onMcp = await authenticate(app.services, bearer(accessToken), "key_or_mcp_token");
    expect(onMcp).toMatchObject({ userId: account.userId, via: "oauth", oauthClientId: registered?.client_id });
    expect(await authenticate(app.services, bearer(accessToken), "api_key")).toBeUndefined();
    expect(await authenticate(app.services, bearer(accessToken), "key_or_session")).toBeUndefined();
    const creditsBefore = (await app.services.profiles.get(account.userId)).credits;
    for (const [method, path, body] of [
      ["GET", "/api/keys", undefined],
      ["GET", "/api/process/status?job_id=job_0000000000000000000000000", undefined],
      ["POST", "/api/process", { image_url: "https://example.com/a.jpg", prompt: "remove the background" }],
      ["GET", "/api/webhooks/secret", undefined],
      ["GET", "/api/connected-apps", undefined],
      ["GET", "/trpc/keys.list", undefined],
    ] as const) {
      const response = await request(base, method, path, { key: accessToken, ...(body ? { body } : {}) });
      expect(response.status, `${method} ${path}`).toBe(401);
    }
    expect((await app.services.profiles.get(account.userId)).credits).toBe(creditsBefore);

    // The dashboard's list of connected apps shows it.
    const listed = await request(base, "GET", "/api/connected-apps", { cookie });
    expect(listed.status).toBe(200);
    expect(listed.body.apps).toContainEqual({
      client_id: registered?.client_id,
      name: "Flow Agent",
      uri: null,
      icon: null,
      scopes: ["mcp", "offline_access"],
      granted_at: expect.any(String),
      last_used_at: expect.any(String),
    });

    // Refresh: a new access token that works; the client keeps going without the person.
    expect(await auth(provider, { serverUrl: `${base}/mcp` })).toBe("AUTHORIZED");
    const refreshed = provider.tokens();
    expect(refreshed?.access_token).toMatch(/^mcp_at_/);
    expect(refreshed?.access_token).not.toBe(accessToken);
    expect(refreshed?.refresh_token).not.toBe(tokens?.refresh_token);
    expect(await authenticate(app.services, bearer(refreshed?.access_token as string), "key_or_mcp_token")).toMatchObject({
      userId: account.userId,
    });

    // Disconnecting the app ends every token it holds at once; it has to ask the person again.
    const revoked = await request(base, "DELETE", `/api/connected-apps/${registered?.client_id}`, { cookie });
    expect(revoked.status).toBe(200);
    for (const token of [accessToken, refreshed?.access_token as string]) {
      expect(await authenticate(app.services, bearer(token), "key_or_mcp_token")).toBeUndefined();
    }
    expect(await auth(provider, { serverUrl: `${base}/mcp` })).toBe("REDIRECT");
    const remaining = (await request(base, "GET", "/api/connected-apps", { cookie })).body.apps as Array<{ client_id: string }>;
    expect(remaining.map((app) => app.client_id)).not.toContain(registered?.client_id);
    const again = await request(base, "DELETE", `/api/connected-apps/${registered?.client_id}`, { cookie });
    expect(again.status).toBe(404);
  });

  it("signing out of the session that approved the app ends its access token; its refresh token carries on", async () => {
    const provider = new MemoryOAuthClientProvider(REDIRECT_URI, "Session Agent");
    await auth(provider, { serverUrl: `${base}/mcp` });
    const cookie = await signIn(account);
    const consentPage = await throughSignIn(base, provider.authorizationUrl as URL, cookie);
    const code = new URL((await consent(base, cookie, consentPage, true)).body.url).searchParams.get("code") as string;
    await auth(provider, { serverUrl: `${base}/mcp`, authorizationCode: code });
    const accessToken = provider.tokens()?.access_token as string;
    expect(await authenticate(app.services, bearer(accessToken), "key_or_mcp_token")).toBeDefined();
    const signedOut = await request(base, "POST", "/auth/sign-out", { cookie, headers: { origin: base }, body: {} });
    expect(signedOut.status).toBe(200);
    expect(await authenticate(app.services, bearer(accessToken), "key_or_mcp_token")).toBeUndefined();
    expect(await auth(provider, { serverUrl: `${base}/mcp` })).toBe("AUTHORIZED");
    expect(await authenticate(app.services, bearer(provider.tokens()?.access_token as string), "key_or_mcp_token")).toBeDefined();
  });

  it("Deny sends the person back to the client with access_denied, and no code", async () => {
    const provider = new MemoryOAuthClientProvider(REDIRECT_URI, "Denied Agent");
    await auth(provider, { serverUrl: `${base}/mcp` });
    const cookie = await signIn(account);
    const consentPage = await throughSignIn(base, provider.authorizationUrl as URL, cookie);
    const denied = await consent(base, cookie, consentPage, false);
    expect(denied.status).toBe(200);
    const callback = new URL(denied.body.url);
    expect(callback.searchParams.get("error")).toBe("access_denied");
    expect(callback.searchParams.get("code")).toBeNull();
  });

  it("consent needs the session cookie, from the service's own origin", async () => {
    const provider = new MemoryOAuthClientProvider(REDIRECT_URI, "Consent Agent");
    await auth(provider, { serverUrl: `${base}/mcp` });
    const cookie = await signIn(account);
    const consentPage = await throughSignIn(base, provider.authorizationUrl as URL, cookie);
    const anonymous = await request(base, "POST", "/auth/oauth2/consent", {
      headers: { origin: base },
      body: { accept: true, oauth_query: consentPage.search.slice(1) },
    });
    expect(anonymous.status).toBe(401);
    const foreign = await consent(base, cookie, consentPage, true, "https://evil.example");
    expect(foreign.status).toBe(403);
    // A tampered query (another redirect) breaks the signature.
    const tampered = new URL(consentPage);
    tampered.searchParams.set("redirect_uri", "http://127.0.0.1:9/elsewhere");
    expect((await consent(base, cookie, tampered, true)).status).toBe(400);
  });
});

describe("PKCE and resource binding", () => {
  /** A public client registered directly, a signed-in person, and the authorize URL builder. */
  async function registeredClient(address: string) {
    const registered = await registerClient(
      { client_name: "PKCE Probe", redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: "none" },
      address,
    );
    expect(registered.status, registered.text).toBe(201);
    const clientId = registered.body.client_id as string;
    const authorizeUrl = (params: Record<string, string>) => {
      const url = new URL(`${base}/auth/oauth2/authorize`);
      for (const [name, value] of Object.entries({
        response_type: "code",
        client_id: clientId,
        redirect_uri: REDIRECT_URI,
        scope: "mcp offline_access",
        state: "s1",
        ...params,
      })) {
        if (value) url.searchParams.set(name, value);
      }
      return url;
    };
    return { clientId, authorizeUrl, cookie: await signIn(account) };
  }

  /** The consent page the first time; once approved, authorize answers the client at once. */
  async function codeFor(url: URL, cookie: string): Promise<string> {
    const answer = await navigate(url, cookie);
    if (answer.location?.pathname !== "/oauth/consent") return answer.location?.searchParams.get("code") as string;
    const approved = await consent(base, cookie, answer.location as URL, true);
    return new URL(approved.body.url).searchParams.get("code") as string;
  }

  function exchange(params: Record<string, string>) {
    return request(base, "POST", "/auth/oauth2/token", {
      rawBody: new URLSearchParams({ grant_type: "authorization_code", redirect_uri: REDIRECT_URI, ...params }).toString(),
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
  }

  it("an authorization request without a code challenge, or with `plain`, goes back to the client as invalid_request", async () => {
    const { authorizeUrl, cookie } = await registeredClient("198.51.100.1");
    const { challenge } = pkcePair();
    const cases: Array<Record<string, string>> = [
      { resource: `${base}/mcp` },
      { resource: `${base}/mcp`, code_challenge: challenge, code_challenge_method: "plain" },
      { resource: `${base}/mcp`, code_challenge: challenge },
    ];
    for (const params of cases) {
      const answer = await navigate(authorizeUrl(params), cookie);
      expect(answer.status).toBe(302);
      expect(`${answer.location?.origin}${answer.location?.pathname}`).toBe(REDIRECT_URI);
      expect(answer.location?.searchParams.get("error")).toBe("invalid_request");
      expect(answer.location?.searchParams.get("code")).toBeNull();
    }
  });

  it("the code is exchanged only with its verifier", async () => {
    const { clientId, authorizeUrl, cookie } = await registeredClient("198.51.100.2");
    const pkce = pkcePair();
    const url = authorizeUrl({ resource: `${base}/mcp`, code_challenge: pkce.challenge, code_challenge_method: "S256" });
    const missing = await exchange({ client_id: clientId, code: await codeFor(url, cookie) });
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ error: "invalid_request", error_description: expect.stringContaining("code_verifier") });
    const wrong = await exchange({ client_id: clientId, code: await codeFor(url, cookie), code_verifier: pkcePair().verifier });
    // better-auth answers 401: for a public client the verifier is its only proof.
    expect(wrong.status).toBe(401);
    expect(wrong.body).toMatchObject({ error: "invalid_request", error_description: "code verification failed" });
    const right = await exchange({ client_id: clientId, code: await codeFor(url, cookie), code_verifier: pkce.verifier });
    expect(right.status, right.text).toBe(200);
    expect(await authenticate(app.services, bearer(right.body.access_token), "key_or_mcp_token")).toMatchObject({
      userId: account.userId,
    });
  });

  it("a token not issued for /mcp (no resource asked for) is refused there", async () => {
    const { clientId, authorizeUrl, cookie } = await registeredClient("198.51.100.3");
    const pkce = pkcePair();
    const url = authorizeUrl({ code_challenge: pkce.challenge, code_challenge_method: "S256" });
    const unbound = await exchange({ client_id: clientId, code: await codeFor(url, cookie), code_verifier: pkce.verifier });
    expect(unbound.status, unbound.text).toBe(200);
    expect(unbound.body.access_token).toMatch(/^mcp_at_/);
    expect(await authenticate(app.services, bearer(unbound.body.access_token), "key_or_mcp_token")).toBeUndefined();
  });

  it("a resource other than /mcp is refused at the authorization endpoint", async () => {
    const { authorizeUrl, cookie } = await registeredClient("198.51.100.4");
    const { challenge } = pkcePair();
    const answer = await navigate(
      authorizeUrl({ resource: `${base}/api`, code_challenge: challenge, code_challenge_method: "S256" }),
      cookie,
    );
    expect(answer.location?.searchParams.get("error")).toBe("invalid_target");
  });
});

describe("dynamic client registration (RFC 7591)", () => {
  const metadata = { client_name: "Burst", redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: "none" };

  it("is limited per address: 429 with Retry-After once the budget is spent, other addresses unaffected", async () => {
    const address = "203.0.113.7";
    for (let i = 0; i < REGISTRATIONS_PER_ADDRESS; i++) {
      expect((await registerClient(metadata, address)).status).toBe(201);
    }
    const refused = await registerClient(metadata, address);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(refused.body).toMatchObject({ code: "rate_limited", error: "rate_limited", message: expect.any(String) });
    expect(refused.body.error_description).toBe(refused.body.message);
    expect((await registerClient(metadata, "203.0.113.8")).status).toBe(201);
  });

  it("takes a loopback-redirect client that names no type as a native app; an https one stays a web app", async () => {
    const native = await registerClient(metadata, "192.0.2.10");
    expect(native.status).toBe(201);
    expect(native.body.application_type).toBe("native");
    const web = await registerClient({ ...metadata, redirect_uris: ["https://agent.example/callback"] }, "192.0.2.10");
    expect(web.status).toBe(201);
    expect(web.body.application_type).toBe("web");
    const webLoopback = await registerClient({ ...metadata, application_type: "web" }, "192.0.2.10");
    expect(webLoopback.status).toBe(400);
    expect(webLoopback.body.error).toBe("invalid_redirect_uri");
  });
});

describe("Client ID Metadata Documents (the client_id is the URL of the client's metadata)", () => {
  const documentUrl = (path: string) => `${AGENT_SITE}${path}`;
  const publish = (path: string, body: Record<string, unknown>, headers?: Record<string, string>) =>
    documents.set(path, { body: { client_id: documentUrl(path), ...body }, ...(headers ? { headers } : {}) });
  const agentMetadata = {
    client_name: "Metadata Agent",
    client_uri: AGENT_SITE,
    redirect_uris: [REDIRECT_URI],
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
  };

  /** An authorization request as the SDK builds one, for a client_id it did not register. */
  function authorizeUrlFor(clientId: string, redirectUri = REDIRECT_URI) {
    const url = new URL(`${base}/auth/oauth2/authorize`);
    const { challenge } = pkcePair();
    for (const [name, value] of Object.entries({
      response_type: "code",
      client_id: clientId,
      redirect_uri: redirectUri,
      scope: "mcp",
      resource: `${base}/mcp`,
      state: "s",
      code_challenge: challenge,
      code_challenge_method: "S256",
    }))
      url.searchParams.set(name, value);
    return url;
  }

  it("the official client's auth() uses the document's URL as its client_id: no registration, consent names the client, tools work", async () => {
    publish("/oauth/client.json", agentMetadata, { "cache-control": "max-age=600" });
    const clientId = documentUrl("/oauth/client.json");
    const provider = new MemoryOAuthClientProvider(REDIRECT_URI, "Metadata Agent", clientId);
    const fetchesBefore = documentFetches.length;
    expect(await auth(provider, { serverUrl: `${base}/mcp` })).toBe("REDIRECT");
    // The SDK took the server's word that it reads metadata documents, and registered nothing.
    expect(provider.clientInformation()?.client_id).toBe(clientId);
    const authorizationUrl = provider.authorizationUrl as URL;
    expect(authorizationUrl.searchParams.get("client_id")).toBe(clientId);

    const cookie = await signIn(account);
    const consentPage = await throughSignIn(base, authorizationUrl, cookie);
    expect(consentPage.searchParams.get("client_id")).toBe(clientId);
    const shown = await request(base, "GET", `/auth/oauth2/public-client?client_id=${encodeURIComponent(clientId)}`, {
      cookie,
    });
    expect(shown.status).toBe(200);
    expect(shown.body).toMatchObject({ client_id: clientId, client_name: "Metadata Agent" });
    // Fetched once, then served from the cache its max-age allows (the authorize requests came twice).
    expect(documentFetches.length - fetchesBefore).toBe(1);

    const approved = await consent(base, cookie, consentPage, true);
    expect(approved.status).toBe(200);
    const code = new URL(approved.body.url).searchParams.get("code") as string;
    expect(await auth(provider, { serverUrl: `${base}/mcp`, authorizationCode: code })).toBe("AUTHORIZED");
    expect(provider.tokens()?.access_token).toMatch(/^mcp_at_/);

    const client = new Client({ name: "metadata-agent", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider }));
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toContain("edit_image");
    const unknown = await client.callTool({ name: "get_job_status", arguments: { job_id: "job_0000000000000000000000000" } });
    expect(unknown.isError).toBe(true);
    await client.close();

    const listed = await request(base, "GET", "/api/connected-apps", { cookie });
    expect(listed.body.apps).toContainEqual(
      expect.objectContaining({ client_id: clientId, name: "Metadata Agent", uri: AGENT_SITE }),
    );
  });

  it("refuses a document that does not name itself, a redirect it does not list, a private address, and a site that does not answer", async () => {
    const cookie = await signIn(account);
    /** Refused before sign-in or consent, and never sent to the redirect URI the request names (it is not trusted). */
    const refusal = async (url: URL) => {
      const answer = await navigate(url, cookie);
      expect(answer.status, url.href).toBe(400);
      expect(answer.location).toBeUndefined();
    };
    documents.set("/impostor.json", { body: { ...agentMetadata, client_id: documentUrl("/someone-else.json") } });
    await refusal(authorizeUrlFor(documentUrl("/impostor.json")));

    // A redirect the document does not list: the person sees why on the dashboard's error page.
    publish("/listed.json", agentMetadata);
    const elsewhere = await navigate(authorizeUrlFor(documentUrl("/listed.json"), "http://127.0.0.1:9/elsewhere"), cookie);
    expect(elsewhere.status).toBe(302);
    expect(`${elsewhere.location?.origin}${elsewhere.location?.pathname}`).toBe(`${base}/oauth/error`);
    expect(elsewhere.location?.searchParams.get("error")).toBe("invalid_redirect");

    const fetchesBefore = documentFetches.length;
    await refusal(authorizeUrlFor("https://127.0.0.1/client.json"));
    await refusal(authorizeUrlFor("https://10.0.0.8/client.json"));
    // Refused before any fetch: the URL itself names an address inside.
    expect(documentFetches.length).toBe(fetchesBefore);

    await refusal(authorizeUrlFor(documentUrl("/missing.json")));
    documents.set("/broken.json", { status: 500, body: {} });
    await refusal(authorizeUrlFor(documentUrl("/broken.json")));

    // Registration's rules hold for a document too: no name that passes for the service, no oversized name.
    publish("/impersonator.json", { ...agentMetadata, client_name: "Retouch Security" });
    await refusal(authorizeUrlFor(documentUrl("/impersonator.json")));
    publish("/long-name.json", { ...agentMetadata, client_name: "A".repeat(5000) });
    await refusal(authorizeUrlFor(documentUrl("/long-name.json")));
  });

  it("gives each address its share of document fetches: a burst from one address does not stop another's new client", async () => {
    const burst = "203.0.113.90";
    const statuses: number[] = [];
    let last: Navigation | undefined;
    // 130 made-up clients on as many sites: more than the plugin's old global budget (120 a minute).
    for (let i = 0; i < 130; i++) {
      last = await navigate(authorizeUrlFor(`https://burst-${i}.example/client.json`), undefined, { "x-forwarded-for": burst });
      statuses.push(last.status);
    }
    expect(statuses.slice(0, CLIENT_METADATA_REQUESTS_PER_ADDRESS).every((status) => status === 400)).toBe(true);
    expect(statuses.slice(CLIENT_METADATA_REQUESTS_PER_ADDRESS).every((status) => status === 429)).toBe(true);
    expect(Number(last?.headers["retry-after"])).toBeGreaterThan(0);

    // Another address brings a client the server has never seen: its document is fetched, the person is asked to sign in.
    publish("/after-burst.json", { ...agentMetadata, client_name: "After Burst" });
    const fetchesBefore = documentFetches.length;
    const other = await navigate(authorizeUrlFor(documentUrl("/after-burst.json")), undefined, {
      "x-forwarded-for": "203.0.113.91",
    });
    expect(other.status).toBe(302);
    expect(other.location?.pathname).toBe("/sign-in");
    expect(documentFetches.length).toBe(fetchesBefore + 1);
  });

  it("by default fetches documents through core's outbound guard: https only, public addresses only", async () => {
    await expect(defaultClientMetadataFetch("https://localhost/oauth/client.json")).rejects.toThrow(/public/);
    await expect(defaultClientMetadataFetch("https://[::ffff:10.0.0.8]/oauth/client.json")).rejects.toThrow(/public/);
    await expect(defaultClientMetadataFetch("http://agent.example.com/oauth/client.json")).rejects.toThrow(/https:/);
  });
});

describe("API keys on /mcp", () => {
  it("a pk_ key still works, as before", async () => {
    const { key } = await createKey(base, { cookie: await signIn(account) });
    const client = await connectMcp(base, key);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toContain("get_job_status");
    await client.close();
  });
});

describe("the maintenance sweep and expired tokens", () => {
  async function tokenCounts(clientId: string) {
    const client = new pg.Client({ connectionString: app.config.databaseUrl });
    await client.connect();
    const count = async (table: string) =>
      Number((await client.query(`select count(*) from "${table}" where "clientId" = $1`, [clientId])).rows[0].count);
    const counts = { access: await count("oauthAccessToken"), refresh: await count("oauthRefreshToken") };
    await client.end();
    return counts;
  }

  it("deletes tokens a day after they expire, keeping each app's newest access token (its last-active time)", async () => {
    const cookie = await signIn(account);
    const { clientId, provider } = await connectApp(base, cookie, "Sweep Agent");
    // A refresh: a second pair, the first refresh token rotated out.
    provider.saveTokens({ ...(provider.tokens() as OAuthTokens), expires_in: 0 });
    expect(await auth(provider, { serverUrl: `${base}/mcp` })).toBe("AUTHORIZED");
    expect(await tokenCounts(clientId)).toEqual({ access: 2, refresh: 2 });
    const listed = async () =>
      ((await request(base, "GET", "/api/connected-apps", { cookie })).body.apps as Array<Record<string, unknown>>).find(
        (app) => app.client_id === clientId,
      );
    const before = await listed();

    // Nothing expired yet: nothing goes.
    await sweep(app, Date.now());
    expect(await tokenCounts(clientId)).toEqual({ access: 2, refresh: 2 });
    // Past the refresh tokens' 30 days and the day of grace.
    await sweep(app, Date.now() + 32 * 24 * 3_600_000);
    expect(await tokenCounts(clientId)).toEqual({ access: 1, refresh: 0 });
    expect(await listed()).toEqual(before);
  });
});
