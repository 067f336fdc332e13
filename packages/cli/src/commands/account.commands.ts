import { ApiClient } from "../api-client";
import { type CommandContext, saveConfig, stringFlag, UsageError } from "../command-context";
import { promptSecret } from "../prompt";

interface SessionBody {
  token: string;
  user: { id: string; email: string; name: string };
}

async function readPassword(ctx: CommandContext): Promise<string> {
  const password = ctx.env.RETOUCH_PASSWORD ?? (await promptSecret("Password: "));
  if (!password) throw new UsageError("a password is needed (type it at the prompt, pipe it on stdin, or set RETOUCH_PASSWORD)");
  return password;
}

function cookieFrom(headers: Headers): string | undefined {
  return headers
    .getSetCookie()
    .find((cookie) => cookie.includes(".session_token="))
    ?.split(";")[0];
}

function requireEmail(ctx: CommandContext): string {
  const email = stringFlag(ctx, "email") ?? ctx.args[0];
  if (!email) throw new UsageError("missing --email <address>");
  return email;
}

export async function signup(ctx: CommandContext): Promise<void> {
  const email = requireEmail(ctx);
  const name = stringFlag(ctx, "name") ?? email.split("@")[0] ?? email;
  const password = await readPassword(ctx);
  const { body, headers } = await new ApiClient(ctx.baseUrl).call<SessionBody>("POST", "/auth/sign-up/email", {
    email,
    password,
    name,
  });
  await saveConfig(ctx, { email: body.user.email, sessionCookie: cookieFrom(headers), apiKey: undefined });
  ctx.out.result(body.user, () =>
    [
      `Account created for ${body.user.email}; you are signed in.`,
      `We sent a verification link to ${body.user.email}. Open it, then create a key:`,
      "  retouch keys create my-laptop --use",
    ].join("\n"),
  );
}

export async function login(ctx: CommandContext): Promise<void> {
  const key = stringFlag(ctx, "key");
  if (key) {
    // Check the key before keeping it.
    await new ApiClient(ctx.baseUrl, { apiKey: key }).call("GET", "/api/keys");
    await saveConfig(ctx, { apiKey: key });
    ctx.out.result({ ok: true, credential: "api_key" }, () => `Saved the API key for ${ctx.baseUrl}.`);
    return;
  }
  const email = requireEmail(ctx);
  const password = await readPassword(ctx);
  const { body, headers } = await new ApiClient(ctx.baseUrl).call<SessionBody>("POST", "/auth/sign-in/email", {
    email,
    password,
  });
  await saveConfig(ctx, { email: body.user.email, sessionCookie: cookieFrom(headers), apiKey: undefined });
  ctx.out.result(body.user, () => `Signed in as ${body.user.email} on ${ctx.baseUrl}.`);
}

export async function logout(ctx: CommandContext): Promise<void> {
  await saveConfig(ctx, { sessionCookie: undefined, apiKey: undefined });
  ctx.out.result({ ok: true }, () => "Signed out: the stored session and key were removed from this machine.");
}

export async function resendVerification(ctx: CommandContext): Promise<void> {
  const email = stringFlag(ctx, "email") ?? ctx.args[0] ?? ctx.config.email;
  if (!email) throw new UsageError("missing --email <address>");
  await new ApiClient(ctx.baseUrl).call("POST", "/auth/send-verification-email", { email });
  ctx.out.result({ ok: true }, () => `If ${email} has an unverified account, a fresh link is on its way.`);
}
