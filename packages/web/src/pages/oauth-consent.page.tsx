import { useMutation, useQuery } from "@tanstack/react-query";
import { useSearch } from "wouter";
import { answerConsent, authorizationRequest, publicClient, SCOPE_DESCRIPTIONS } from "../api/oauth";
import { trpc } from "../api/trpc";
import { ErrorNote } from "../components/error-note";
import { PublicLayout } from "../components/public-layout";
import { useTitle } from "../components/use-title";

/**
 * Where the authorization endpoint sends a signed-in person when an app (an
 * MCP client) asks for access: who is asking, what it may do, where the answer
 * goes; Approve or Deny. Either way the browser goes back to the app.
 */
export function OAuthConsentPage() {
  useTitle("Connect an app");
  const request = authorizationRequest(useSearch());
  const clientId = request?.get("client_id") ?? "";
  const session = useQuery(trpc.auth.session.queryOptions());
  const client = useQuery({
    queryKey: ["oauth-public-client", clientId],
    queryFn: () => publicClient(clientId),
    enabled: request !== undefined,
  });
  const answer = useMutation({
    mutationFn: (accept: boolean) => answerConsent(request as URLSearchParams, accept),
    onSuccess: (url) => window.location.assign(url),
  });

  if (!request) {
    return (
      <PublicLayout>
        <h1>Connect an app</h1>
        <p className="note note-error" role="alert">
          This page is opened by an app asking for access to your account. Start again from the app.
        </p>
      </PublicLayout>
    );
  }
  const name = client.data?.client_name ?? "An app";
  const scopes = (request.get("scope") ?? "").split(" ").filter(Boolean);
  const redirect = URL.parse(request.get("redirect_uri") ?? "");
  return (
    <PublicLayout>
      <h1>Connect {name} to Retouch?</h1>
      {session.data ? <p className="muted">Signed in as {session.data.user.email}.</p> : null}
      <ErrorNote error={client.error} prefix="The app could not be found:" />
      {client.data?.client_uri ? (
        <p>
          The app says it is from <a href={client.data.client_uri}>{client.data.client_uri}</a>. Only approve an app you chose to
          connect.
        </p>
      ) : null}
      {clientId.startsWith("https://") ? (
        <p className="muted">
          The app is known by the address <code>{clientId}</code>: its name and return addresses were read there.
        </p>
      ) : null}
      <h2>It asks to</h2>
      <ul aria-label="What the app asks for">
        {scopes.map((scope) => (
          <li key={scope}>{SCOPE_DESCRIPTIONS[scope] ?? scope}</li>
        ))}
      </ul>
      {redirect ? (
        <p className="muted">
          Your answer goes back to the app at <code>{redirect.host}</code>. You can disconnect it at any time under Connected
          apps.
        </p>
      ) : null}
      <ErrorNote error={answer.error} />
      <div className="actions">
        <button type="button" disabled={answer.isPending || client.isPending} onClick={() => answer.mutate(true)}>
          Approve
        </button>
        <button type="button" className="button-quiet" disabled={answer.isPending} onClick={() => answer.mutate(false)}>
          Deny
        </button>
      </div>
    </PublicLayout>
  );
}
