import { authedClient, type CommandContext, requireArg, saveConfig, UsageError } from "../command-context";
import { table } from "../output";

interface KeyListing {
  id: string;
  name: string;
  prefix: string;
  lastUsedAt: string | null;
  createdAt: string;
}

export async function listKeys(ctx: CommandContext): Promise<void> {
  const { body } = await authedClient(ctx).call<{ keys: KeyListing[] }>("GET", "/api/keys");
  ctx.out.result(body, () =>
    body.keys.length === 0
      ? "No API keys yet. Create one with: retouch keys create <name>"
      : table([
          ["ID", "NAME", "PREFIX", "LAST USED", "CREATED"],
          ...body.keys.map((key) => [key.id, key.name, key.prefix, key.lastUsedAt ?? "never", key.createdAt]),
        ]),
  );
}

export async function createKey(ctx: CommandContext): Promise<void> {
  const name = requireArg(ctx, 0, "key name (retouch keys create <name>)");
  const { body } = await authedClient(ctx).call<{ key: string; id: string; prefix: string; name: string }>("POST", "/api/keys", {
    name,
  });
  if (ctx.flags.use) await saveConfig(ctx, { apiKey: body.key });
  ctx.out.result(body, () =>
    [
      `Created key ${body.id} (${body.name}):`,
      "",
      `  ${body.key}`,
      "",
      ctx.flags.use
        ? "It is saved for this CLI. Copy it now if you need it elsewhere: it is never shown again."
        : "Copy it now: it is never shown again.",
    ].join("\n"),
  );
}

export async function revokeKey(ctx: CommandContext): Promise<void> {
  const id = requireArg(ctx, 0, "key id (retouch keys revoke <key_...>)");
  await authedClient(ctx).call("DELETE", `/api/keys/${encodeURIComponent(id)}`);
  ctx.out.result({ ok: true, id }, () => `Revoked ${id}.`);
}

export async function webhookSecret(ctx: CommandContext): Promise<void> {
  if (!ctx.env.RETOUCH_API_KEY && !ctx.config.apiKey) {
    throw new UsageError("the webhook secret is read with an API key: run `retouch keys create <name> --use` first");
  }
  const { body } = await authedClient(ctx).call<{ secret: string }>("GET", "/api/webhooks/secret");
  ctx.out.result(body, () => body.secret);
}
