import { spawn } from "node:child_process";
import type { BillingState, PaidPlan } from "@retouch/sdk";
import { authedClient, type CommandContext, requireArg, UsageError } from "../command-context";
import { table } from "../output";

const PAID_PLANS: readonly PaidPlan[] = ["starter", "core", "pro"];

function money(amount: number | null, currency: string | null): string {
  if (amount === null || currency === null) return "";
  return new Intl.NumberFormat("en", { style: "currency", currency: currency.toUpperCase() }).format(amount / 100);
}

function day(iso: string | null): string {
  return iso ? iso.slice(0, 10) : "";
}

function billingText(state: BillingState): string {
  const lines = [
    `Plan:       ${state.plan} (${state.limits.per_minute} images a minute, ${state.limits.concurrent} at once)`,
    `Credits:    ${state.credits_remaining}`,
  ];
  if (state.allowance)
    lines.push(`Allowance:  ${state.allowance.remaining} of ${state.allowance.monthly} left this period (does not roll over)`);
  if (state.subscription) {
    const { status, renews_at: renewsAt, cancel_at_period_end: ending } = state.subscription;
    const when = renewsAt ? (ending ? `, ends ${day(renewsAt)}` : `, renews ${day(renewsAt)}`) : "";
    lines.push(`Subscription: ${state.subscription.plan}, ${status}${when}`);
  }
  if (state.packs.length > 0) {
    lines.push("", "Credit packs (never expire): retouch buy <credits>");
    lines.push(table(state.packs.map((pack) => [`  ${pack.credits} credits`, money(pack.amount, pack.currency)])));
  }
  if (state.plans.length > 0) {
    lines.push("", "Plans: retouch plan <name>");
    lines.push(
      table(
        state.plans.map((plan) => [
          `  ${plan.plan}`,
          `${money(plan.amount, plan.currency)}${plan.interval ? `/${plan.interval}` : ""}`,
          `${plan.monthly_credits} credits a month`,
          `${plan.limits.per_minute}/min, ${plan.limits.concurrent} at once`,
        ]),
      ),
    );
  }
  if (state.purchases.length > 0) {
    lines.push("", "Purchases:");
    lines.push(
      table([
        ["  DATE", "WHAT", "CREDITS", "PAID", "STATUS"],
        ...state.purchases.map((purchase) => [
          `  ${day(purchase.created_at)}`,
          purchase.kind === "pack" ? "credit pack" : `${purchase.plan} plan`,
          String(purchase.credits),
          money(purchase.amount, purchase.currency),
          purchase.status.replace("_", " "),
        ]),
      ]),
    );
  }
  lines.push("", "Change card, plan or cancel: retouch billing --portal");
  return lines.join("\n");
}

/**
 * Opens `url` in the person's browser: $BROWSER if set (the convention of many
 * tools), else the platform's opener. Never waits for it; the URL is printed anyway.
 */
function openInBrowser(ctx: CommandContext, url: string): void {
  const [command, args] = ctx.env.BROWSER
    ? [ctx.env.BROWSER, [url]]
    : process.platform === "darwin"
      ? ["open", [url]]
      : process.platform === "win32"
        ? ["cmd", ["/c", "start", '""', url]]
        : ["xdg-open", [url]];
  try {
    const child = spawn(command, args, { detached: true, stdio: "ignore" });
    child.on("error", () => ctx.out.info(`could not open a browser (${command}); open the URL above yourself`));
    child.unref();
  } catch {
    ctx.out.info(`could not open a browser (${command}); open the URL above yourself`);
  }
}

async function printUrl(ctx: CommandContext, { url }: { url: string }, what: string): Promise<void> {
  ctx.out.result({ url }, () => url);
  if (ctx.flags.open) openInBrowser(ctx, url);
  else ctx.out.info(`Open it in a browser to ${what} (or add --open).`);
}

/** `retouch billing [--portal] [--open]`: plan, balance, allowance, what is on sale, purchases; or the portal's URL. */
export async function billing(ctx: CommandContext): Promise<void> {
  const client = authedClient(ctx);
  if (ctx.flags.portal) {
    await printUrl(ctx, await client.billingPortal(), "change card or plan, cancel, or read invoices");
    return;
  }
  const state = await client.billing();
  ctx.out.result(state, () => billingText(state));
}

/** `retouch buy <credits> [--open]`: the checkout URL of a credit pack. */
export async function buy(ctx: CommandContext): Promise<void> {
  const text = requireArg(ctx, 0, "the credits of a pack (retouch billing lists them)");
  if (!/^\d+$/.test(text)) throw new UsageError(`"${text}" is not a number of credits (retouch billing lists the packs)`);
  await printUrl(ctx, await authedClient(ctx).buyCredits(Number(text)), `pay for the ${text}-credit pack`);
}

/** `retouch plan <starter|core|pro> [--open]`: the checkout URL of a plan. */
export async function plan(ctx: CommandContext): Promise<void> {
  const name = requireArg(ctx, 0, `a plan (${PAID_PLANS.join(", ")})`);
  if (!(PAID_PLANS as readonly string[]).includes(name)) {
    throw new UsageError(`"${name}" is not a plan you can buy (${PAID_PLANS.join(", ")})`);
  }
  await printUrl(ctx, await authedClient(ctx).subscribe(name as PaidPlan), `subscribe to ${name}`);
}
