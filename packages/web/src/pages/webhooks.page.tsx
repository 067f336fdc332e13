import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { trpc } from "../api/trpc";
import { CopyButton } from "../components/copy-button";
import { DashboardLayout } from "../components/dashboard-layout";
import { ErrorNote } from "../components/error-note";
import { formatDate, formatDuration } from "../components/format";
import { TableRegion } from "../components/table-region";
import { useTitle } from "../components/use-title";

const STATUS_LABELS: Record<string, string> = { pending: "Retrying", delivered: "Delivered", failed: "Failed" };

function took(from: string, to: string | null): string {
  return to ? formatDuration(new Date(to).getTime() - new Date(from).getTime()) : "—";
}

export function WebhooksPage() {
  useTitle("Webhooks");
  // Read on the session when asked for, and forgotten when hidden: the secret is not kept in the page's cache.
  const [revealed, setRevealed] = useState(false);
  const deliveries = useQuery(
    trpc.webhooks.deliveries.queryOptions(
      { limit: 50 },
      // Deliveries still being retried change on their own: look again while any is pending.
      { refetchInterval: (query) => (query.state.data?.deliveries.some((item) => item.status === "pending") ? 3000 : false) },
    ),
  );
  const secret = useQuery(
    trpc.webhooks.sessionSecret.queryOptions(undefined, { enabled: revealed, gcTime: 0, staleTime: Number.POSITIVE_INFINITY }),
  );
  return (
    <DashboardLayout>
      <h1>Webhooks</h1>
      <p className="muted">
        Give a <code>webhook_url</code> with a submission and the outcome is posted there, signed with your secret (
        <code>X-Retouch-Signature</code>, and the Standard Webhooks headers).
      </p>

      <section aria-labelledby="secret-title">
        <h2 id="secret-title">Signing secret</h2>
        {revealed && secret.data ? (
          <dl className="secrets">
            <dt>Secret (X-Retouch-Signature)</dt>
            <dd className="secret">
              <code>{secret.data.secret}</code>
              <CopyButton text={secret.data.secret} label="Copy secret" />
            </dd>
            <dt>The same key for Standard Webhooks libraries</dt>
            <dd className="secret">
              <code>{secret.data.standard_webhooks_secret}</code>
              <CopyButton text={secret.data.standard_webhooks_secret} label="Copy Standard Webhooks secret" />
            </dd>
          </dl>
        ) : null}
        <div className="actions">
          {revealed && secret.data ? (
            <button type="button" className="button-quiet" onClick={() => setRevealed(false)}>
              Hide the secret
            </button>
          ) : (
            <button type="button" disabled={revealed && secret.isFetching} onClick={() => setRevealed(true)}>
              Reveal the secret
            </button>
          )}
        </div>
        <ErrorNote error={secret.error} prefix="The secret could not be read:" />
      </section>

      <section aria-labelledby="deliveries-title">
        <h2 id="deliveries-title">Deliveries</h2>
        <ErrorNote error={deliveries.error} />
        {deliveries.data && deliveries.data.deliveries.length === 0 ? (
          <p className="muted">No deliveries yet: none of your jobs had a webhook_url.</p>
        ) : null}
        {deliveries.data && deliveries.data.deliveries.length > 0 ? (
          <TableRegion label="Webhook deliveries">
            <table>
              <thead>
                <tr>
                  <th scope="col">Job</th>
                  <th scope="col">URL</th>
                  <th scope="col">Status</th>
                  <th scope="col">Attempts</th>
                  <th scope="col">Last answer</th>
                  <th scope="col">Last attempt</th>
                  <th scope="col">Next attempt</th>
                  <th scope="col">Delivered after</th>
                </tr>
              </thead>
              <tbody>
                {deliveries.data.deliveries.map((delivery) => (
                  <tr key={delivery.id}>
                    <th scope="row">
                      <code>{delivery.job_id}</code>
                    </th>
                    <td className="wrap">{delivery.url}</td>
                    <td>
                      <span className={`badge badge-${delivery.status}`}>
                        {STATUS_LABELS[delivery.status] ?? delivery.status}
                      </span>
                    </td>
                    <td>{delivery.attempts}</td>
                    <td>
                      {delivery.last_status_code ?? "—"}
                      {delivery.last_error ? <span className="muted"> {delivery.last_error}</span> : null}
                    </td>
                    <td>{formatDate(delivery.last_attempt_at)}</td>
                    <td>{formatDate(delivery.next_attempt_at)}</td>
                    <td>{took(delivery.created_at, delivery.delivered_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableRegion>
        ) : null}
      </section>
    </DashboardLayout>
  );
}
