import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useRef, useState } from "react";
import { SCOPE_DESCRIPTIONS } from "../api/oauth";
import { trpc } from "../api/trpc";
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
  const [disconnecting, setDisconnecting] = useState<AppRow | undefined>();
  const dialog = useRef<HTMLDialogElement>(null);
  const apps = useQuery(trpc.connectedApps.list.queryOptions());
  const revoke = useMutation(
    trpc.connectedApps.revoke.mutationOptions({
      onSuccess: () => {
        dialog.current?.close();
        setDisconnecting(undefined);
        void queryClient.invalidateQueries({ queryKey: trpc.connectedApps.list.queryKey() });
      },
    }),
  );
  const askToDisconnect = (app: AppRow) => {
    revoke.reset();
    setDisconnecting(app);
    dialog.current?.showModal();
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

      <dialog ref={dialog} aria-labelledby="disconnect-title" onClose={() => setDisconnecting(undefined)}>
        <h2 id="disconnect-title">Disconnect “{disconnecting ? appName(disconnecting) : ""}”?</h2>
        <p>Its access ends now: its next request is refused, and it has to ask you again to reconnect.</p>
        <ErrorNote error={revoke.error} />
        <div className="actions">
          <button
            type="button"
            className="button-danger"
            disabled={!disconnecting || revoke.isPending}
            onClick={() => disconnecting && revoke.mutate({ client_id: disconnecting.client_id })}
          >
            Disconnect app
          </button>
          <button type="button" className="button-quiet" onClick={() => dialog.current?.close()}>
            Cancel
          </button>
        </div>
      </dialog>
    </DashboardLayout>
  );
}
