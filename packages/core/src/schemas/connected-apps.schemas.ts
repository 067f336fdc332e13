import { z } from "zod";

export const connectedApp = z.object({
  client_id: z.string().describe("The app's OAuth client id"),
  name: z.string().nullable().describe("The name the app registered with, or null"),
  uri: z.string().nullable().describe("The app's home page, as it registered it, or null"),
  icon: z.string().nullable().describe("The app's logo URL, as it registered it, or null"),
  scopes: z.array(z.string()).describe("What the person allowed: `mcp` (use the MCP tools), `offline_access` (stay connected)"),
  granted_at: z.string().describe("When the person last approved the app (ISO 8601)"),
  last_used_at: z
    .string()
    .nullable()
    .describe("When the app last got an access token, on approval or by refreshing one (ISO 8601), or null"),
});

export const listConnectedAppsOutput = z.object({ apps: z.array(connectedApp) });

export const revokeConnectedAppInput = z.object({
  client_id: z.string().min(1).max(200).describe("The app's OAuth client id"),
});
