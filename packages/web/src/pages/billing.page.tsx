import { useMutation, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { Link, Redirect, useSearch } from "wouter";
import { errorCode } from "../api/errors";
import { refusalMessage } from "../api/refusal-messages";
import { trpc } from "../api/trpc";
import { DashboardLayout } from "../components/dashboard-layout";
import { formatDate, formatMoney, plural } from "../components/format";
import { limitsText, Stat } from "../components/stat";
import { TableRegion } from "../components/table-region";
import { useTitle } from "../components/use-title";

const PLAN_LABELS: Record<string, string> = { free: "Free", starter: "Starter", core: "Core", pro: "Pro" };
const PURCHASE_STATUS: Record<string, string> = {
  paid: "Paid",
  partially_refunded: "Partly refunded",
  refunded: "Refunded",
  disputed: "Disputed",
};
/** How long the page looks again for the payment Stripe confirms after the checkout (its event may come a little later). */
const CONFIRMATION_WAIT_MS = 60_000;

const LIVE_STATUSES = new Set(["active", "trialing", "past_due"]);

const planLabel = (plan: string) => PLAN_LABELS[plan] ?? plan;

/** Checkout and the portal send the browser back to `/billing` (the service's PUBLIC_BASE_URL/billing): the page lives here. */
export function BillingReturn() {
  const search = useSearch();
  return <Redirect to={`/dashboard/billing${search ? `?${search}` : ""}`} replace />;
}

/** A refused checkout or portal: the table's sentence, except that here the provider that did not answer is Stripe. */
function paymentRefusal(error: unknown): string {
  return errorCode(error) === "upstream_error"
    ? "Stripe did not answer. Try again in a moment; nothing was charged."
    : refusalMessage(error);
}

/** Leaves the dashboard for Stripe's page (checkout or portal), which sends the browser back to /billing. */
function goTo(url: string): void {
  window.location.assign(url);
}

export function BillingPage() {
  useTitle("Billing");
  const checkout = new URLSearchParams(useSearch()).get("checkout");
  // Back from a paid checkout: the credits arrive with Stripe's event, so look again for a while.
  const [waitingSince] = useState(() => (checkout === "success" ? Date.now() : undefined));
  const state = useQuery(
    trpc.billing.state.queryOptions(undefined, {
      refetchInterval: () => (waitingSince !== undefined && Date.now() - waitingSince < CONFIRMATION_WAIT_MS ? 2000 : false),
    }),
  );
  const notConfigured = errorCode(state.error) === "payments_not_configured";
  // Without payments the page still shows the balance and plan, from the account.
  const account = useQuery(trpc.account.get.queryOptions(undefined, { enabled: notConfigured }));
  const buy = useMutation(trpc.billing.checkout.mutationOptions({ onSuccess: ({ url }) => goTo(url) }));
  const portal = useMutation(trpc.billing.portal.mutationOptions({ onSuccess: ({ url }) => goTo(url) }));
  // A redirect under way: the buttons stay disabled until the browser has left.
  const leaving = buy.isPending || buy.isSuccess || portal.isPending || portal.isSuccess;

  const data = state.data;
  // A plan is held while its subscription is live (the service's rule); another is then chosen in the portal.
  const subscribed = data?.subscription ? LIVE_STATUSES.has(data.subscription.status) : false;
  return (
    <DashboardLayout>
      <h1>Billing</h1>
      {checkout === "success" ? (
        <p className="note note-success" role="status">
          Thank you. Your payment is confirmed by Stripe in a few seconds; your credits and plan show here as soon as it is.
        </p>
      ) : null}
      {checkout === "canceled" ? (
        <p className="note" role="status">
          The checkout was cancelled: nothing was charged.
        </p>
      ) : null}

      {notConfigured ? (
        <>
          <div className="note" role="status">
            <p>
              <strong>This server does not take payments.</strong> Credits and plans are given by whoever runs it: ask them if you
              need more.
            </p>
          </div>
          {account.data ? (
            <dl className="stats">
              <Stat
                label="Credits"
                value={account.data.credits_remaining}
                note="One per image, refunded if an edit fails."
                testId="billing-credits"
              />
              <Stat label="Plan" value={planLabel(account.data.plan)} note={limitsText(account.data.limits)} />
            </dl>
          ) : null}
        </>
      ) : state.error ? (
        <p className="note note-error" role="alert">
          Your billing could not be loaded: {refusalMessage(state.error)}
        </p>
      ) : null}
      {state.isPending ? <p className="loading">Loading your billing…</p> : null}

      {data ? (
        <>
          <dl className="stats">
            <Stat
              label="Credits"
              value={data.credits_remaining}
              note={
                data.allowance
                  ? `${data.allowance.remaining} of them from this period’s allowance, spent first.`
                  : "One per image. Bought credits never expire."
              }
              testId="billing-credits"
            />
            <Stat label="Plan" value={planLabel(data.plan)} note={limitsText(data.limits)} testId="billing-plan" />
            {data.allowance ? (
              <Stat
                label="Allowance"
                value={data.allowance.remaining}
                note={`Left of ${data.allowance.monthly} this period; a plan’s credits renew each period and do not roll over.`}
                testId="billing-allowance"
              />
            ) : null}
            {data.subscription ? (
              <Stat
                label={data.subscription.cancel_at_period_end ? "Ends" : "Renews"}
                value={formatDate(data.subscription.renews_at)}
                valueClass="stat-value-small"
                note={
                  data.subscription.cancel_at_period_end
                    ? `Your ${planLabel(data.subscription.plan)} plan ends then, and the account is Free again.`
                    : data.subscription.status === "past_due"
                      ? "The last payment failed; Stripe tries again. Update your card with “Manage your plan”."
                      : `${planLabel(data.subscription.plan)}, ${data.subscription.status}.`
                }
              />
            ) : null}
          </dl>

          <section aria-labelledby="packs-title">
            <h2 id="packs-title">Buy credits</h2>
            {data.packs.length === 0 ? (
              <p className="muted">No credit packs are on sale here.</p>
            ) : (
              <>
                <p className="muted">
                  One payment, no subscription. Bought credits never expire; a plan’s allowance is spent before them.
                </p>
                <ul className="cards">
                  {data.packs.map((pack) => (
                    <li key={pack.credits} className="card">
                      <p className="stat-value">{plural(pack.credits, "credit")}</p>
                      <p className="muted">{formatMoney(pack.amount, pack.currency)}</p>
                      <button
                        type="button"
                        disabled={leaving}
                        onClick={() => buy.mutate({ credits: pack.credits })}
                        aria-label={`Buy ${plural(pack.credits, "credit")}${pack.amount !== null ? ` for ${formatMoney(pack.amount, pack.currency)}` : ""}`}
                      >
                        Buy
                      </button>
                    </li>
                  ))}
                </ul>
              </>
            )}
          </section>

          <section aria-labelledby="plans-title">
            <h2 id="plans-title">Plans</h2>
            {data.plans.length === 0 ? (
              <p className="muted">No plans are on sale here.</p>
            ) : (
              <>
                <p className="muted">
                  {subscribed
                    ? "Change or cancel your plan, your card and your invoices with “Manage your plan”: a change applies at once."
                    : "A monthly subscription: its credits each period and higher limits. Cancel at any time."}
                </p>
                <ul className="cards">
                  {data.plans.map((plan) => {
                    const current = subscribed && data.subscription?.plan === plan.plan;
                    return (
                      <li key={plan.plan} className="card">
                        <h3>
                          <span>{planLabel(plan.plan)}</span>
                          {current ? <span className="badge badge-done">Your plan</span> : null}
                        </h3>
                        <p>
                          {formatMoney(plan.amount, plan.currency)}
                          {plan.interval ? ` a ${plan.interval}` : ""}
                        </p>
                        <p className="muted">
                          {plural(plan.monthly_credits, "credit")} each period; {plural(plan.limits.per_minute, "image")} a
                          minute, {plan.limits.concurrent} at once.
                        </p>
                        {subscribed ? null : (
                          <button type="button" disabled={leaving} onClick={() => buy.mutate({ plan: plan.plan })}>
                            Choose {planLabel(plan.plan)}
                          </button>
                        )}
                      </li>
                    );
                  })}
                </ul>
              </>
            )}
          </section>

          {buy.error ? (
            <p className="note note-error" role="alert">
              {paymentRefusal(buy.error)}
            </p>
          ) : null}

          <section aria-labelledby="portal-title">
            <h2 id="portal-title">Payments and invoices</h2>
            <p className="muted">Stripe’s customer portal: your card, your plan (change or cancel), and your invoices.</p>
            <div className="actions">
              <button type="button" className="button-quiet" disabled={leaving} onClick={() => portal.mutate()}>
                Manage your plan
              </button>
            </div>
            {portal.error ? (
              <p className="note note-error" role="alert">
                {paymentRefusal(portal.error)}
              </p>
            ) : null}
          </section>

          <section aria-labelledby="purchases-title">
            <h2 id="purchases-title">Purchases</h2>
            {data.purchases.length === 0 ? (
              <p className="muted">No purchases yet.</p>
            ) : (
              <TableRegion label="Purchases">
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Date</th>
                      <th scope="col">What</th>
                      <th scope="col">Credits</th>
                      <th scope="col">Amount</th>
                      <th scope="col">Status</th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.purchases.map((purchase) => (
                      <tr key={purchase.id}>
                        <td>{formatDate(purchase.created_at)}</td>
                        <th scope="row">
                          {purchase.kind === "pack"
                            ? `${plural(purchase.credits, "credit")} pack`
                            : `${planLabel(purchase.plan ?? "")} plan, one period`}
                        </th>
                        <td>{purchase.credits}</td>
                        <td>{formatMoney(purchase.amount, purchase.currency)}</td>
                        <td>
                          <span className={`badge ${purchase.status === "paid" ? "badge-done" : "badge-pending"}`}>
                            {PURCHASE_STATUS[purchase.status] ?? purchase.status}
                          </span>
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </TableRegion>
            )}
          </section>
        </>
      ) : null}
      <p className="muted">
        Credits pay for edits: one per image, refunded when an edit fails. See what you used on the{" "}
        <Link href="/dashboard">overview</Link>.
      </p>
    </DashboardLayout>
  );
}
