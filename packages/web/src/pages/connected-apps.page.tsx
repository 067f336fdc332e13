import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { SCOPE_DESCRIPTIONS } from "../api/oauth";
import { trpc } from "../api/trpc";
import { ConfirmDialog, useConfirmation } from "../components/confirm-dialog";
import { DashboardLayout } from "../components/dashboard-layout";
import { ErrorNote } from "../components/error-note";
import { formatDate } from "../components/format";
import { TableRegion } from "../components/table-region";
import { useTitle } from "../components/use-title";

interface AppRow {
  client_id: string;
  name: string | null;
}

const appName = (app: AppRow) => app.name ?? "Unnamed app";

/** The MCP apps the person approved through OAuth, and disconnecting them (their tokens stop working at once). */
export function ConnectedAppsPage() {
  useTitle("Connected apps");
  const queryClient = useQueryClient();
  const disconnecting = useConfirmation<AppRow>();
  const apps = useQuery(trpc.connectedApps.list.queryOptions());
  const revoke = useMutation(
    trpc.connectedApps.revoke.mutationOptions({
      onSuccess: () => {
        disconnecting.close();
        void queryClient.invalidateQueries({ queryKey: trpc.connectedApps.list.queryKey() });
      },
    }),
  );
  const askToDisconnect = (app: AppRow) => {
    revoke.reset();
    disconnecting.ask(app);
  };

  return (
    <DashboardLayout>
      <h1>Connected apps</h1>
      <p className="muted">
        MCP clients that signed in with your Retouch account instead of an API key. Each one you approved is listed here until you
        disconnect it.
      </p>
      <ErrorNote error={apps.error} />
      {apps.data && apps.data.apps.length === 0 ? <p className="muted">No connected apps.</p> : null}
      {apps.data && apps.data.apps.length > 0 ? (
        <TableRegion label="Connected apps">
          <table>
            <thead>
              <tr>
                <th scope="col">App</th>
                <th scope="col">Allowed to</th>
                <th scope="col">Approved</th>
                <th scope="col">Last active</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {apps.data.apps.map((app) => (
                <tr key={app.client_id}>
                  <th scope="row">{appName(app)}</th>
                  <td>{app.scopes.map((scope) => SCOPE_DESCRIPTIONS[scope] ?? scope).join(" ")}</td>
                  <td>{formatDate(app.granted_at)}</td>
                  <td>{app.last_used_at ? formatDate(app.last_used_at) : "Never"}</td>
                  <td>
                    <button type="button" className="button-danger button-small" onClick={() => askToDisconnect(app)}>
                      Disconnect
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableRegion>
      ) : null}

      <ConfirmDialog
        confirmation={disconnecting}
        title={`Disconnect “${disconnecting.subject ? appName(disconnecting.subject) : ""}”?`}
        confirmLabel="Disconnect app"
        error={revoke.error}
        pending={revoke.isPending}
        onConfirm={(app) => revoke.mutate({ client_id: app.client_id })}
      >
        <p>Its access ends now: its next request is refused, and it has to ask you again to reconnect.</p>
      </ConfirmDialog>
    </DashboardLayout>
  );
}
