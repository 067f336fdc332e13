import { authedClient, type CommandContext, requireArg } from "../command-context";
import { table } from "../output";

/** `retouch apps`: the MCP clients you approved through OAuth instead of giving them a key. */
export async function listConnectedApps(ctx: CommandContext): Promise<void> {
  const apps = await authedClient(ctx).connectedApps();
  ctx.out.result({ apps }, () =>
    apps.length === 0
      ? "No connected apps. An MCP client that signs in with OAuth shows up here once you approve it."
      : table([
          ["CLIENT ID", "NAME", "SCOPES", "APPROVED", "LAST ACTIVE"],
          ...apps.map((app) => [
            app.client_id,
            app.name ?? "(unnamed)",
            app.scopes.join(" "),
            app.granted_at,
            app.last_used_at ?? "never",
          ]),
        ]),
  );
}

/** `retouch apps disconnect <client_id>`: the app's approval and every token it holds are gone at once. */
export async function disconnectApp(ctx: CommandContext): Promise<void> {
  const clientId = requireArg(ctx, 0, "client id (retouch apps disconnect <client_id>; `retouch apps` lists them)");
  await authedClient(ctx).disconnectApp(clientId);
  ctx.out.result({ ok: true, client_id: clientId }, () => `Disconnected ${clientId}: its tokens no longer work.`);
}
