import { parseArgs } from "node:util";
import { AbortedError, ApiError, JobFailedError, LocalError, NetworkError, TimeoutError } from "@retouch/sdk";
import { type CommandContext, loadContext, UsageError } from "./command-context";
import { login, logout, resendVerification, signup } from "./commands/account.commands";
import { listJobs, whoami } from "./commands/account-overview.commands";
import { billing, buy, plan } from "./commands/billing.commands";
import { disconnectApp, listConnectedApps } from "./commands/connected-apps.commands";
import { EDIT_FLAGS, EditsFailedError, edit, result, status } from "./commands/jobs.commands";
import { createKey, listKeys, revokeKey, webhookSecret } from "./commands/keys.commands";
import { capabilities } from "./commands/service.commands";
import { configPath } from "./config-store";
import { Output } from "./output";

const VERSION = "0.1.0";

/** Exit codes scripts can rely on. */
export const EXIT = { ok: 0, failure: 1, usage: 2, auth: 3, limits: 4, network: 5, jobFailed: 6 } as const;

/** `retouch edit --help`'s options: the edit's own flags (EDIT_FLAGS) between the command's. */
function editOptionsHelp(): string {
  const rows: Array<[string, string]> = [
    [
      "-o, --output <p>",
      "where to save: a file for one image, a folder for several\n(default: next to each input, as <name>.retouched.<ext>;\nfor a URL, in the current folder)",
    ],
    ...Object.values(EDIT_FLAGS).map((spec): [string, string] => [`--${spec.flag} ${spec.value}`, spec.help]),
    ["--no-wait", "submit and print the job id without waiting"],
    ["--timeout <t>", "give up waiting after this long (default 10m)"],
    ["--batch-size <n>", "images per batch, at most your plan's concurrency (default 3)"],
  ];
  const width = Math.max(...rows.map(([usage]) => usage.length));
  const lines = rows.map(([usage, help]) => `  ${usage.padEnd(width)}  ${help.replaceAll("\n", `\n${" ".repeat(width + 4)}`)}`);
  return `An image can be a file, a folder, a glob, or an http(s) URL that the service
fetches itself (it must be public https unless the server allows otherwise).

Edit options:
${lines.join("\n")}`;
}

interface Command {
  words: string[];
  usage: string;
  summary: string;
  /** More for `retouch <command> --help`. */
  details?: string;
  run(ctx: CommandContext): Promise<void>;
}

const COMMANDS: Command[] = [
  { words: ["signup"], usage: "signup --email <address> [--name <name>]", summary: "create an account and sign in", run: signup },
  {
    words: ["login"],
    usage: "login --email <address> | login --key <pk_...>",
    summary: "sign in, or store an API key",
    run: login,
  },
  { words: ["logout"], usage: "logout", summary: "end the session and forget the stored session and key", run: logout },
  {
    words: ["resend-verification"],
    usage: "resend-verification [--email <address>]",
    summary: "email a fresh verification link",
    run: resendVerification,
  },
  {
    words: ["whoami"],
    usage: "whoami",
    summary: "your account: email, plan and limits, credits, jobs this month",
    run: whoami,
  },
  {
    words: ["billing"],
    usage: "billing [--portal] [--open]",
    summary: "plan, credits, allowance, packs and plans on sale, purchases (--portal: the customer portal's URL)",
    run: billing,
  },
  {
    words: ["buy"],
    usage: "buy <credits> [--open]",
    summary: "print (or --open) the checkout URL of a credit pack",
    run: buy,
  },
  {
    words: ["plan"],
    usage: "plan <starter|core|pro> [--open]",
    summary: "print (or --open) the checkout URL of a plan",
    run: plan,
  },
  { words: ["keys", "list"], usage: "keys list", summary: "list your API keys", run: listKeys },
  {
    words: ["keys", "create"],
    usage: "keys create <name> [--use]",
    summary: "create an API key (--use: keep it for this CLI)",
    run: createKey,
  },
  { words: ["keys", "revoke"], usage: "keys revoke <key_id>", summary: "revoke an API key", run: revokeKey },
  // Before "apps": the first command whose words match runs.
  {
    words: ["apps", "disconnect"],
    usage: "apps disconnect <client_id>",
    summary: "disconnect an app: its tokens stop working",
    run: disconnectApp,
  },
  { words: ["apps"], usage: "apps", summary: "the MCP clients you connected with OAuth", run: listConnectedApps },
  {
    words: ["edit"],
    usage: 'edit <image|folder|glob|url>... "<prompt>" [options]',
    summary: "edit images and save the results (several images run as batches)",
    details: editOptionsHelp(),
    run: edit,
  },
  {
    words: ["jobs"],
    usage: "jobs [--limit <n>] [--all] [filters]",
    summary: "your recent jobs, newest first (--all: every one)",
    details: `Filters (the service applies them to every page):
  --status <s>      pending, done or error
  --workflow <w>    background_removal, object_removal or generative_edit
  --from <day>      submitted on or after this day (YYYY-MM-DD, UTC)
  --to <day>        submitted on or before this day (YYYY-MM-DD, UTC)`,
    run: listJobs,
  },
  { words: ["status"], usage: "status <job_id|batch_id>", summary: "show a job's (or a batch's) status", run: status },
  { words: ["result"], usage: "result <job_id> [-o file]", summary: "print a job's result link, or save the image", run: result },
  { words: ["secret"], usage: "secret", summary: "print your webhook signing secret", run: webhookSecret },
  {
    words: ["capabilities"],
    usage: "capabilities",
    summary: "what the server can do: instructions, detectable objects, provider",
    run: capabilities,
  },
];

function help(): string {
  const width = Math.max(...COMMANDS.map((command) => command.usage.length));
  return `retouch ${VERSION}: the Retouch image-editing API from your terminal

Usage: retouch <command> [options]

Commands:
${COMMANDS.map((command) => `  ${command.usage.padEnd(width)}  ${command.summary}`).join("\n")}

Options:
  --base-url <url>  server address (env RETOUCH_BASE_URL; default http://localhost:3000)
  --json            print results as JSON (for scripts)
  -q, --quiet       print nothing but errors
  -h, --help        show help (also after a command)
  -v, --version     print the version

Passwords are read from a hidden prompt, from stdin when piped, or from RETOUCH_PASSWORD.
Credentials are kept in ${configPath(process.env)} (mode 0600); RETOUCH_API_KEY overrides them.

Exit codes: 0 ok, 1 failure, 2 usage error, 3 authentication or verification needed,
4 out of credits or rate limited, 5 server unreachable, 6 an edit failed (refunded).
`;
}

function explain(error: ApiError, ctx: CommandContext | undefined): string {
  switch (error.code) {
    case "email_unverified":
      return `verify your email first: open the link we sent to ${ctx?.config.email ?? "your address"} (or run \`retouch resend-verification\`)`;
    case "unauthorized":
      return "not signed in or the credential was revoked: run `retouch login --email <you@example.com>`";
    case "invalid_credentials":
      return "wrong email or password";
    case "insufficient_credits":
      // Where the server sells credits its message says so; `retouch buy` is the same from here.
      return error.message.includes("/api/billing/checkout")
        ? `${error.message} (from here: \`retouch billing\`, then \`retouch buy <credits>\`)`
        : `${error.message} (ask the operator for credits, e.g. \`pnpm retouch admin grant-credits\`)`;
    case "rate_limited":
    case "too_many_in_flight":
      return `${error.message}${error.retryAfterSeconds ? ` (retry in ${error.retryAfterSeconds} s)` : ""}`;
    default:
      return error.message;
  }
}

function exitCodeFor(error: ApiError): number {
  if (error.status === 401 || error.status === 403) return EXIT.auth;
  if (error.status === 402 || error.status === 429) return EXIT.limits;
  return EXIT.failure;
}

export async function run(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        "base-url": { type: "string" },
        json: { type: "boolean" },
        quiet: { type: "boolean", short: "q" },
        help: { type: "boolean", short: "h" },
        version: { type: "boolean", short: "v" },
        email: { type: "string" },
        name: { type: "string" },
        key: { type: "string" },
        use: { type: "boolean" },
        output: { type: "string", short: "o" },
        ...(Object.fromEntries(Object.values(EDIT_FLAGS).map((spec) => [spec.flag, { type: "string" }])) as Record<
          string,
          { type: "string" }
        >),
        "no-wait": { type: "boolean" },
        timeout: { type: "string" },
        "batch-size": { type: "string" },
        limit: { type: "string" },
        all: { type: "boolean" },
        status: { type: "string" },
        workflow: { type: "string" },
        from: { type: "string" },
        to: { type: "string" },
        open: { type: "boolean" },
        portal: { type: "boolean" },
      },
    });
  } catch (error) {
    process.stderr.write(`error: ${(error as Error).message}\n\n${help()}`);
    return EXIT.usage;
  }
  const { values, positionals } = parsed;
  const out = new Output({ json: values.json === true, quiet: values.quiet === true });
  if (values.version) {
    process.stdout.write(`${VERSION}\n`);
    return EXIT.ok;
  }
  const command = COMMANDS.find((candidate) => candidate.words.every((word, index) => positionals[index] === word));
  if (values.help || !command) {
    if (values.help && command) {
      process.stdout.write(
        `Usage: retouch ${command.usage}\n\n${command.summary}\n${command.details ? `\n${command.details}\n` : ""}`,
      );
    } else process.stdout.write(help());
    return values.help || positionals.length === 0 ? EXIT.ok : EXIT.usage;
  }

  let ctx: CommandContext | undefined;
  try {
    ctx = await loadContext({
      args: positionals.slice(command.words.length),
      flags: values,
      out,
      env,
      configFile: configPath(env),
      ...(typeof values["base-url"] === "string" ? { baseUrlFlag: values["base-url"] } : {}),
    });
    await command.run(ctx);
    return EXIT.ok;
  } catch (error) {
    if (error instanceof UsageError) {
      out.error(error.message, { code: "usage", message: error.message });
      return EXIT.usage;
    }
    // Before ApiError, which it is: a failed job says its code and why, and exits 6.
    if (error instanceof JobFailedError) {
      out.error(error.message, {
        code: error.code,
        job_id: error.jobId,
        error_code: error.errorCode,
        error_message: error.errorMessage,
        message: error.message,
      });
      return EXIT.jobFailed;
    }
    if (error instanceof ApiError) {
      out.error(explain(error, ctx), { code: error.code, status: error.status, message: error.message });
      return exitCodeFor(error);
    }
    if (error instanceof EditsFailedError) {
      out.error(error.message, { code: "job_failed", message: error.message });
      return EXIT.jobFailed;
    }
    if (error instanceof NetworkError) {
      out.error(`${error.message} (is the server running? set --base-url or RETOUCH_BASE_URL)`, {
        code: "network",
        message: error.message,
      });
      return EXIT.network;
    }
    if (error instanceof TimeoutError || error instanceof AbortedError || error instanceof LocalError) {
      out.error(error.message, { code: error.name, message: error.message });
      return EXIT.failure;
    }
    out.error((error as Error).message ?? String(error));
    return EXIT.failure;
  }
}

run(process.argv.slice(2), process.env).then((code) => {
  process.exitCode = code;
});
