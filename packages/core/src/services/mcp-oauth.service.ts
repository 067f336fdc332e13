import type { ResourceServerMetadata } from "@better-auth/oauth-provider";
import type { z } from "zod";
import type { Auth } from "../auth/auth";
import { MCP_SCOPE, type McpTokenCheck, mcpResource, OAUTH_SCOPES, withClientAddress } from "../auth/mcp-oauth.plugin";
import type { Config } from "../config/env";
import { RetouchError } from "../errors/retouch-error";
import type { connectedApp } from "../schemas/connected-apps.schemas";
import type { OAuthGrantsStore } from "../stores/oauth-grants.store";
import type { RateLimitsStore } from "../stores/rate-limits.store";
import type { UsersStore } from "../stores/users.store";
import type { Principal, RequestInfo } from "./principal";

/**
 * The MCP side of the OAuth authorization server: who an access token speaks
 * for, how often an address may register clients, and the apps a person has
 * connected (listed and revoked).
 */
export class McpOAuthService {
  private readonly resource: string;

  constructor(
    private readonly deps: {
      auth: Auth;
      users: UsersStore;
      grants: OAuthGrantsStore;
      rateLimits: RateLimitsStore;
      config: Pick<Config, "publicBaseUrl" | "oauthRegistrationRateLimit">;
    },
  ) {
    this.resource = mcpResource(deps.config.publicBaseUrl);
  }

  /**
   * Hands one OAuth protocol request to better-auth's handler, with the
   * client's address as the host worked it out: the per-address share of
   * metadata document fetches (mcp-oauth.plugin.ts) counts by it. Without it
   * that share can only use X-Forwarded-For behind a trusted proxy.
   */
  handle(request: Request, clientAddress: string): Promise<Response> {
    return withClientAddress(clientAddress, () => this.deps.auth.handler(request));
  }

  /**
   * The account an OAuth access token acts for, if the token is live, was
   * issued for the MCP endpoint (its audience) with the `mcp` scope, and is a
   * plain bearer token. A DPoP-bound token is refused: its proof of possession
   * is not checked here, and accepting it without one would drop the binding.
   */
  async authenticate(token: string): Promise<Principal | undefined> {
    const check: McpTokenCheck = await this.deps.auth.api.verifyMcpAccessToken({ body: { token } });
    if (!check.active || !check.sub || check.senderConstrained) return undefined;
    if (!check.audience?.includes(this.resource) || !check.scopes?.includes(MCP_SCOPE)) return undefined;
    const user = await this.deps.users.findById(check.sub);
    if (!user) return undefined;
    return {
      userId: user.id,
      email: user.email,
      name: user.name,
      emailVerified: user.emailVerified,
      via: "oauth",
      ...(check.clientId ? { oauthClientId: check.clientId } : {}),
    };
  }

  /**
   * RFC 9728 protected-resource metadata of the MCP endpoint. The
   * authorization server is named by better-auth's own issuer (it turns an
   * http: base URL that is not loopback into https:, and the two documents
   * must agree). `scopes_supported` names `offline_access` too: MCP clients
   * take the scopes to ask for from here (the official SDK does), and without
   * it better-auth issues no refresh token.
   */
  async protectedResourceMetadata() {
    const { issuer } = await this.deps.auth.api.getOAuthServerConfig();
    return {
      resource: this.resource,
      authorization_servers: [issuer],
      scopes_supported: OAUTH_SCOPES,
      bearer_methods_supported: ["header"],
      resource_name: "Retouch MCP server",
      resource_documentation: `${this.deps.config.publicBaseUrl}/llms.txt`,
    } satisfies ResourceServerMetadata & { resource_name: string };
  }

  /**
   * RFC 8414 authorization-server metadata, as better-auth's provider states
   * it, less DPoP: the MCP endpoint takes bearer tokens only (it refuses a
   * DPoP-bound one), so clients are not invited to bind them.
   */
  async authorizationServerMetadata(): Promise<Record<string, unknown>> {
    const { dpop_signing_alg_values_supported: _dpop, ...metadata } = await this.deps.auth.api.getOAuthServerConfig();
    return metadata;
  }

  /** Counts one client registration from the caller's address, or refuses it (429 with Retry-After). */
  async limitRegistration(request: RequestInfo): Promise<void> {
    const { count, windowMs } = this.deps.config.oauthRegistrationRateLimit;
    const decision = await this.deps.rateLimits.hit(`oauth-register:${request.ip}`, { limit: count, windowMs });
    if (!decision.allowed) {
      throw new RetouchError(
        "rate_limited",
        "Too many client registrations from this address; retry after the time given in Retry-After.",
        { retryAfterSeconds: decision.retryAfterSeconds },
      );
    }
  }

  async listConnectedApps(principal: Principal): Promise<Array<z.infer<typeof connectedApp>>> {
    const grants = await this.deps.grants.listForUser(principal.userId);
    return grants.map((grant) => ({
      client_id: grant.clientId,
      name: grant.clientName,
      uri: grant.clientUri,
      icon: grant.clientIcon,
      scopes: grant.scopes,
      granted_at: grant.grantedAt.toISOString(),
      last_used_at: grant.lastTokenAt?.toISOString() ?? null,
    }));
  }

  /** Ends an app's access to the account: its consent and all its tokens. */
  async revokeConnectedApp(principal: Principal, clientId: string): Promise<{ ok: true }> {
    if (!(await this.deps.grants.revokeForUser(principal.userId, clientId))) {
      throw new RetouchError("not_found", `No connected app with client id ${clientId}.`);
    }
    return { ok: true };
  }
}
