import { parseArgs } from "node:util";
import { ConfigError, createAdminService, createLogger, isPlanName, loadConfig, PLAN_NAMES, RetouchError } from "@retouch/core";
import { isModelError } from "@retouch/engine";
import { pino } from "pino";
import { openConfiguredDatabase } from "../postgres/database";
import { BLOBS_USAGE, BlobsMigrateRefusal, BlobsUsageError, runBlobsCommand } from "./blobs-migrate.command";
import { MODELS_USAGE, ModelsUsageError, runModelsCommand } from "./models.command";

const USAGE = `Usage: pnpm retouch admin <command> [arguments]

Operator commands. They act on DATABASE_URL when it is set, otherwise on the
embedded database in RETOUCH_DATA_DIR (the running server's, or started for
the duration of the command).

Commands:
  verify-email <email>                     mark the account's email as verified
  grant-credits <email> <amount> [--note <text>]
                                           add credits (a negative amount removes them)
  set-plan <email> <${PLAN_NAMES.join("|")}>  change the account's plan
  show <email>                             print the account's plan, credits and status
  blobs migrate --to s3 [--dry-run]        copy the file store into the S3 bucket (see below)

${BLOBS_USAGE}
${MODELS_USAGE}`;

class UsageError extends Error {}

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      note: { type: "string" },
      to: { type: "string" },
      "dry-run": { type: "boolean" },
      concurrency: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  const [scope, command, ...args] = positionals;
  // Model commands need no database.
  if (scope === "models" && !values.help) return runModelsCommand(command, args, loadConfig());
  // Nor does copying the file store into a bucket: it reads files and writes objects.
  if (scope === "admin" && command === "blobs" && !values.help) {
    return runBlobsCommand(args[0], { to: values.to, dryRun: values["dry-run"], concurrency: values.concurrency }, loadConfig());
  }
  if (values.help || scope !== "admin" || !command) {
    process.stdout.write(USAGE);
    return values.help ? 0 : 2;
  }
  const config = loadConfig();
  // Logs go to stderr so stdout carries only the command's result.
  const logger = createLogger(config.logLevel === "info" ? "warn" : config.logLevel, pino.destination(2));
  const database = await openConfiguredDatabase(config, logger, { maxConnections: 2 });
  try {
    const admin = createAdminService({ db: database.db, config });
    const email = args[0];
    if (!email) throw new UsageError(`${command} needs an email address`);
    switch (command) {
      case "verify-email": {
        const user = await admin.verifyEmail(email);
        process.stdout.write(`Verified ${user.email} (${user.id}).\n`);
        return 0;
      }
      case "grant-credits": {
        const amount = Number(args[1]);
        if (!Number.isInteger(amount) || amount === 0) throw new UsageError("grant-credits needs a non-zero whole amount");
        const { user, balance } = await admin.grantCredits(email, amount, values.note);
        process.stdout.write(
          `${amount > 0 ? "Granted" : "Removed"} ${Math.abs(amount)} credits ${amount > 0 ? "to" : "from"} ${user.email}; balance is now ${balance}.\n`,
        );
        return 0;
      }
      case "set-plan": {
        const plan = args[1] ?? "";
        if (!isPlanName(plan)) throw new UsageError(`set-plan needs one of: ${PLAN_NAMES.join(", ")}`);
        const user = await admin.setPlan(email, plan);
        process.stdout.write(`${user.email} is now on the ${plan} plan.\n`);
        return 0;
      }
      case "show": {
        const account = await admin.describe(email);
        process.stdout.write(`${JSON.stringify(account, null, 2)}\n`);
        return 0;
      }
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } finally {
    await database.shutdown();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof UsageError || error instanceof ModelsUsageError || error instanceof BlobsUsageError) {
      const usage = error instanceof ModelsUsageError ? MODELS_USAGE : error instanceof BlobsUsageError ? BLOBS_USAGE : USAGE;
      process.stderr.write(`${error.message}\n\n${usage}`);
      process.exit(2);
    }
    if (error instanceof BlobsMigrateRefusal) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    if (error instanceof RetouchError || error instanceof ConfigError || isModelError(error)) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    process.stderr.write(`command failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
