import { useMutation } from "@tanstack/react-query";
import { Link, useSearch } from "wouter";
import { trpc } from "../api/trpc";
import { ErrorNote } from "../components/error-note";
import { PublicLayout } from "../components/public-layout";
import { useTitle } from "../components/use-title";

export function CheckEmailPage() {
  useTitle("Check your email");
  const email = new URLSearchParams(useSearch()).get("email") ?? "";
  const resend = useMutation(trpc.auth.resendVerification.mutationOptions());
  return (
    <PublicLayout>
      <h1>Check your email</h1>
      <p>
        We sent a link to {email ? <strong>{email}</strong> : "your address"}. Open it in this browser to confirm the address: it
        takes you back to your dashboard, where you can create API keys and run edits. Opened elsewhere, it confirms the address
        and asks you to sign in.
      </p>
      <p className="muted">
        Running the service yourself without SMTP? The mail is written to <code>.data/outbox/</code> and its link is printed in
        the server log.
      </p>
      {email ? (
        <p>
          No mail after a few minutes?{" "}
          <button type="button" className="button-quiet" onClick={() => resend.mutate({ email })} disabled={resend.isPending}>
            Send the link again
          </button>
        </p>
      ) : null}
      {resend.isSuccess ? (
        <p className="note" role="status">
          A fresh link is on its way.
        </p>
      ) : null}
      <ErrorNote error={resend.error} />
      <p>
        <Link href="/dashboard">Continue to the dashboard</Link>
      </p>
    </PublicLayout>
  );
}
