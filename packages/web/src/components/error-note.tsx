import { errorMessage } from "../api/errors";

/** A failed call, said in the service's own words, announced to screen readers. */
export function ErrorNote({ error, prefix }: { error: unknown; prefix?: string }) {
  if (!error) return null;
  return (
    <p className="note note-error" role="alert">
      {prefix ? `${prefix} ` : ""}
      {errorMessage(error)}
    </p>
  );
}
