import { authedClient, type CommandContext, KEY_REQUIRED, requireArg, saveConfig } from "../command-context";
import { table } from "../output";

export async function listKeys(ctx: CommandContext): Promise<void> {
  const keys = await authedClient(ctx).listKeys();
  ctx.out.result({ keys }, () =>
    keys.length === 0
      ? "No API keys yet. Create one with: retouch keys create <name>"
      : table([
          ["ID", "NAME", "PREFIX", "LAST USED", "CREATED"],
          ...keys.map((key) => [key.id, key.name, key.prefix, key.lastUsedAt ?? "never", key.createdAt]),
        ]),
  );
}

export async function createKey(ctx: CommandContext): Promise<void> {
  const name = requireArg(ctx, 0, "key name (retouch keys create <name>)");
  const created = await authedClient(ctx).createKey(name);
  if (ctx.flags.use) await saveConfig(ctx, { apiKey: created.key });
  ctx.out.result(created, () =>
    [
      `Created key ${created.id} (${created.name}):`,
      "",
      `  ${created.key}`,
      "",
      ctx.flags.use
        ? "It is saved for this CLI. Copy it now if you need it elsewhere: it is never shown again."
        : "Copy it now: it is never shown again.",
    ].join("\n"),
  );
}

export async function revokeKey(ctx: CommandContext): Promise<void> {
  const id = requireArg(ctx, 0, "key id (retouch keys revoke <key_...>)");
  await authedClient(ctx).revokeKey(id);
  ctx.out.result({ ok: true, id }, () => `Revoked ${id}.`);
}

export async function webhookSecret(ctx: CommandContext): Promise<void> {
  const secrets = await authedClient(ctx, { keyRequired: KEY_REQUIRED }).webhookSecret();
  ctx.out.result(secrets, () => secrets.secret);
}
