import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { forgetBrowserKey, setBrowserKey, useBrowserKey } from "../api/browser-key";
import { trpc } from "../api/trpc";
import { ConfirmDialog, useConfirmation } from "../components/confirm-dialog";
import { CopyButton } from "../components/copy-button";
import { DashboardLayout } from "../components/dashboard-layout";
import { ErrorNote } from "../components/error-note";
import { TextField } from "../components/form-fields";
import { formatDate } from "../components/format";
import { TableRegion } from "../components/table-region";
import { useTitle } from "../components/use-title";

interface KeyRow {
  id: string;
  name: string;
  prefix: string;
}

export function KeysPage() {
  useTitle("API keys");
  const queryClient = useQueryClient();
  const browserKey = useBrowserKey();
  const [name, setName] = useState("");
  const [created, setCreated] = useState<{ key: string; name: string } | undefined>();
  const revoking = useConfirmation<KeyRow>();
  const keys = useQuery(trpc.keys.list.queryOptions());
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.keys.list.queryKey() });

  const create = useMutation(
    trpc.keys.create.mutationOptions({
      onSuccess: (key) => {
        setCreated({ key: key.key, name: key.name });
        setBrowserKey({ id: key.id, name: key.name, prefix: key.prefix });
        setName("");
        void refresh();
      },
    }),
  );
  const revoke = useMutation(
    trpc.keys.revoke.mutationOptions({
      onSuccess: (_result, input) => {
        forgetBrowserKey(input.id);
        revoking.close();
        void refresh();
      },
    }),
  );

  const submit = (event: FormEvent) => {
    event.preventDefault();
    setCreated(undefined);
    create.mutate({ name });
  };
  const askToRevoke = (key: KeyRow) => {
    revoke.reset();
    revoking.ask(key);
  };

  return (
    <DashboardLayout>
      <h1>API keys</h1>
      <p className="muted">
        A key is sent as <code>Authorization: Bearer pk_…</code> by your code, the CLI, the SDK or an MCP client.
      </p>
      <form className="form form-inline" onSubmit={submit}>
        <TextField
          label="Key name"
          name="key-name"
          required
          maxLength={100}
          placeholder="laptop, ci, my-agent"
          value={name}
          onValue={setName}
        />
        <button type="submit" disabled={create.isPending}>
          Create key
        </button>
      </form>
      <ErrorNote error={create.error} prefix="The key was not created:" />
      {created ? (
        <section className="note note-success" aria-labelledby="new-key">
          <h2 id="new-key">Your new key “{created.name}”</h2>
          <p>
            Copy it now: it is shown only once. This browser tab also uses it for the playground and the webhook secret until you
            close the tab.
          </p>
          <p className="secret">
            <code data-testid="new-key">{created.key}</code>
            <CopyButton text={created.key} label="Copy key" />
          </p>
        </section>
      ) : null}

      <h2>Your keys</h2>
      <ErrorNote error={keys.error} />
      {keys.data && keys.data.keys.length === 0 ? <p className="muted">No keys yet.</p> : null}
      {keys.data && keys.data.keys.length > 0 ? (
        <TableRegion label="Your keys">
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Prefix</th>
                <th scope="col">Last used</th>
                <th scope="col">Created</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {keys.data.keys.map((key) => (
                <tr key={key.id}>
                  <th scope="row">
                    {key.name}
                    {browserKey?.id === key.id ? <span className="badge">this tab</span> : null}
                  </th>
                  <td>
                    <code>{key.prefix}</code>
                  </td>
                  <td>{key.lastUsedAt ? formatDate(key.lastUsedAt) : "Never"}</td>
                  <td>{formatDate(key.createdAt)}</td>
                  <td>
                    <button type="button" className="button-danger button-small" onClick={() => askToRevoke(key)}>
                      Revoke
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableRegion>
      ) : null}

      <ConfirmDialog
        confirmation={revoking}
        title={`Revoke “${revoking.subject?.name ?? ""}”?`}
        confirmLabel="Revoke key"
        error={revoke.error}
        pending={revoke.isPending}
        onConfirm={(key) => revoke.mutate({ id: key.id })}
      >
        <p>
          Anything using <code>{revoking.subject?.prefix}</code> is refused from now on. This cannot be undone.
        </p>
      </ConfirmDialog>
    </DashboardLayout>
  );
}
