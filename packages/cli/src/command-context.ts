import { Retouch } from "@retouch/sdk";
import { readConfig, type StoredConfig, writeConfig } from "./config-store";
import type { Output } from "./output";

export class UsageError extends Error {}

export type Flags = Record<string, string | boolean | Array<string | boolean> | undefined>;

export interface CommandContext {
  /** Positional arguments after the command words. */
  args: string[];
  flags: Flags;
  out: Output;
  env: NodeJS.ProcessEnv;
  configFile: string;
  baseUrl: string;
  config: StoredConfig;
}

export async function loadContext(
  options: Omit<CommandContext, "config" | "baseUrl"> & { baseUrlFlag?: string },
): Promise<CommandContext> {
  const config = await readConfig(options.configFile);
  const baseUrl = (options.baseUrlFlag ?? options.env.RETOUCH_BASE_URL ?? config.baseUrl ?? "http://localhost:3000").replace(
    /\/+$/,
    "",
  );
  return { ...options, config, baseUrl };
}

/** A client without credentials (sign-up, sign-in). */
export function anonymousClient(ctx: CommandContext): Retouch {
  return new Retouch({ baseUrl: ctx.baseUrl });
}

/** A client with the best credentials at hand: RETOUCH_API_KEY, then the stored key, then the stored session. */
export function authedClient(ctx: CommandContext, options: { keyRequired?: string } = {}): Retouch {
  const apiKey = ctx.env.RETOUCH_API_KEY ?? ctx.config.apiKey;
  const sessionCookie = ctx.config.sessionCookie;
  if (!apiKey && options.keyRequired) throw new UsageError(options.keyRequired);
  if (!apiKey && !sessionCookie) {
    throw new UsageError("not signed in: run `retouch login --email <you@example.com>` or set RETOUCH_API_KEY");
  }
  return new Retouch({ baseUrl: ctx.baseUrl, ...(apiKey ? { apiKey } : sessionCookie ? { sessionCookie } : {}) });
}

/** Jobs need an API key: say how to get one. */
export const KEY_REQUIRED =
  "this needs an API key: run `retouch keys create <name> --use` (after `retouch login`), or set RETOUCH_API_KEY";

export async function saveConfig(ctx: CommandContext, update: Partial<StoredConfig>): Promise<void> {
  const next: StoredConfig = { ...ctx.config, ...update, baseUrl: ctx.baseUrl };
  for (const key of Object.keys(next) as Array<keyof StoredConfig>) if (next[key] === undefined) delete next[key];
  await writeConfig(ctx.configFile, next);
  ctx.config = next;
}

export function requireArg(ctx: CommandContext, index: number, what: string): string {
  const value = ctx.args[index];
  if (!value) throw new UsageError(`missing ${what}`);
  return value;
}

export function stringFlag(ctx: CommandContext, name: string): string | undefined {
  const value = ctx.flags[name];
  return typeof value === "string" ? value : undefined;
}
