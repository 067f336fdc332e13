import { useMutation, useQuery } from "@tanstack/react-query";
import { lazy, Suspense } from "react";
import { Link } from "wouter";
import { trpc } from "../api/trpc";
import { DashboardLayout } from "../components/dashboard-layout";
import { ErrorNote } from "../components/error-note";
import { limitsText, Stat } from "../components/stat";
import { useTitle } from "../components/use-title";

/** The chart library is most of the chart's weight: loaded with the overview, not with every page. */
const UsageChart = lazy(() => import("../components/usage-chart").then((module) => ({ default: module.UsageChart })));

export function OverviewPage() {
  useTitle("Overview");
  const account = useQuery(trpc.account.get.queryOptions());
  const resend = useMutation(trpc.auth.resendVerification.mutationOptions());
  const data = account.data;
  return (
    <DashboardLayout>
      <h1>Overview</h1>
      <ErrorNote error={account.error} prefix="Your account could not be loaded:" />
      {account.isPending ? <p className="loading">Loading your account…</p> : null}
      {data ? (
        <>
          {data.email_verified ? null : (
            <div className="note note-warning" role="status">
              <p>
                Confirm your email address to create API keys and run edits: open the link we sent to{" "}
                <strong>{data.email}</strong>.
              </p>
              <button
                type="button"
                className="button-small"
                onClick={() => resend.mutate({ email: data.email })}
                disabled={resend.isPending || resend.isSuccess}
              >
                {resend.isSuccess ? "Link sent" : "Send the link again"}
              </button>
              <ErrorNote error={resend.error} />
            </div>
          )}
          <dl className="stats">
            <Stat
              label="Credits"
              value={data.credits_remaining}
              note="One per image, refunded if an edit fails."
              testId="credits"
            />
            <Stat label="Plan" value={data.plan} note={limitsText(data.limits)} valueClass="capitalize" />
            <Stat
              label="This month"
              value={data.usage.this_month}
              note={data.usage.this_month === 1 ? "image edited" : "images edited"}
            />
          </dl>
          <p>
            Signed in as <strong>{data.name}</strong> ({data.email}).
          </p>
        </>
      ) : null}
      <section aria-labelledby="usage-title">
        <h2 id="usage-title">Usage</h2>
        <Suspense fallback={<p className="loading">Loading your usage…</p>}>
          <UsageChart />
        </Suspense>
      </section>
      <section aria-labelledby="next-steps">
        <h2 id="next-steps">Next steps</h2>
        <ul className="links">
          <li>
            <Link href="/dashboard/keys">Create an API key</Link> for your code, the CLI or an agent.
          </li>
          <li>
            <Link href="/dashboard/playground">Try an edit</Link> in the playground.
          </li>
          <li>
            <Link href="/dashboard/connect">Connect</Link> an MCP client, curl or the SDK.
          </li>
        </ul>
      </section>
    </DashboardLayout>
  );
}
