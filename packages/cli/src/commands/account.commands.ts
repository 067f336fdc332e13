import { anonymousClient, type CommandContext, saveConfig, stringFlag, UsageError } from "../command-context";
import { promptSecret } from "../prompt";

async function readPassword(ctx: CommandContext): Promise<string> {
  const password = ctx.env.RETOUCH_PASSWORD ?? (await promptSecret("Password: "));
  if (!password) throw new UsageError("a password is needed (type it at the prompt, pipe it on stdin, or set RETOUCH_PASSWORD)");
  return password;
}

function requireEmail(ctx: CommandContext): string {
  const email = stringFlag(ctx, "email") ?? ctx.args[0];
  if (!email) throw new UsageError("missing --email <address>");
  return email;
}

export async function signup(ctx: CommandContext): Promise<void> {
  const email = requireEmail(ctx);
  const name = stringFlag(ctx, "name") ?? email.split("@")[0] ?? email;
  const session = await anonymousClient(ctx).signUp({ email, password: await readPassword(ctx), name });
  await saveConfig(ctx, { email: session.user.email, sessionCookie: session.cookie, apiKey: undefined });
  ctx.out.result(session.user, () =>
    [
      `Account created for ${session.user.email}; you are signed in.`,
      `We sent a verification link to ${session.user.email}. Open it, then create a key:`,
      "  retouch keys create my-laptop --use",
    ].join("\n"),
  );
}

export async function login(ctx: CommandContext): Promise<void> {
  const key = stringFlag(ctx, "key");
  if (key) {
    const { Retouch } = await import("@retouch/sdk");
    // Check the key before keeping it.
    await new Retouch({ baseUrl: ctx.baseUrl, apiKey: key }).listKeys();
    await saveConfig(ctx, { apiKey: key });
    ctx.out.result({ ok: true, credential: "api_key" }, () => `Saved the API key for ${ctx.baseUrl}.`);
    return;
  }
  const email = requireEmail(ctx);
  const session = await anonymousClient(ctx).signIn({ email, password: await readPassword(ctx) });
  await saveConfig(ctx, { email: session.user.email, sessionCookie: session.cookie, apiKey: undefined });
  ctx.out.result(session.user, () => `Signed in as ${session.user.email} on ${ctx.baseUrl}.`);
}

export async function logout(ctx: CommandContext): Promise<void> {
  const sessionCookie = ctx.config.sessionCookie;
  let ended = false;
  if (sessionCookie) {
    // The session ends on the server too, so a copy of the cookie stops working; offline, it is still forgotten here.
    const { Retouch } = await import("@retouch/sdk");
    ended = await new Retouch({ baseUrl: ctx.baseUrl, sessionCookie, maxRetries: 0 })
      .signOut()
      .then(() => true)
      .catch((error: unknown) => {
        ctx.out.info(`The server could not end the session (${(error as Error).message}); it is forgotten here anyway.`);
        return false;
      });
  }
  await saveConfig(ctx, { sessionCookie: undefined, apiKey: undefined });
  ctx.out.result({ ok: true, session_ended: ended }, () =>
    ended
      ? "Signed out: the session was ended on the server, and the stored session and key were removed from this machine."
      : "Signed out: the stored session and key were removed from this machine.",
  );
}

export async function resendVerification(ctx: CommandContext): Promise<void> {
  const email = stringFlag(ctx, "email") ?? ctx.args[0] ?? ctx.config.email;
  if (!email) throw new UsageError("missing --email <address>");
  await anonymousClient(ctx).resendVerification(email);
  ctx.out.result({ ok: true }, () => `If ${email} has an unverified account, a fresh link is on its way.`);
}
