import { useMutation, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { Link } from "wouter";
import { type BrowserKey, setBrowserKey } from "../api/browser-key";
import { trpc } from "../api/trpc";
import { ErrorNote } from "./error-note";
import { TextField } from "./form-fields";

/**
 * Which key this tab uses for the calls that take only a key. Without one it
 * offers to create a key for the tab (the session may create keys) or to
 * paste one.
 */
export function KeyPicker({ browserKey, purpose }: { browserKey: BrowserKey | undefined; purpose: string }) {
  const queryClient = useQueryClient();
  const [pasted, setPasted] = useState("");
  const create = useMutation(
    trpc.keys.create.mutationOptions({
      onSuccess: (key) => {
        setBrowserKey({ id: key.id, name: key.name, prefix: key.prefix, key: key.key });
        void queryClient.invalidateQueries({ queryKey: trpc.keys.list.queryKey() });
      },
    }),
  );
  const applyPasted = (event: FormEvent) => {
    event.preventDefault();
    const key = pasted.trim();
    setBrowserKey({ id: undefined, name: "pasted key", prefix: `${key.slice(0, 15)}...`, key });
    setPasted("");
  };

  if (browserKey) {
    return (
      <p className="key-in-use">
        {purpose} with the key <code>{browserKey.prefix}</code> ({browserKey.name}), kept for this tab only.{" "}
        <button type="button" className="button-quiet button-small" onClick={() => setBrowserKey(undefined)}>
          Use another key
        </button>
      </p>
    );
  }
  return (
    <div className="note">
      <p>
        {purpose} with an API key, as your code would. Create one for this tab, paste one you have, or create one on the{" "}
        <Link href="/dashboard/keys">API keys</Link> page.
      </p>
      <div className="actions">
        <button
          type="button"
          className="button-small"
          disabled={create.isPending}
          onClick={() => create.mutate({ name: "Dashboard (browser tab)" })}
        >
          Create a key for this tab
        </button>
      </div>
      <ErrorNote error={create.error} />
      <form className="form form-inline" onSubmit={applyPasted}>
        <TextField
          label="API key"
          name="api-key"
          type="password"
          autoComplete="off"
          required
          pattern="pk_.+"
          placeholder="pk_…"
          value={pasted}
          onValue={setPasted}
        />
        <button type="submit" className="button-small">
          Use this key
        </button>
      </form>
    </div>
  );
}
