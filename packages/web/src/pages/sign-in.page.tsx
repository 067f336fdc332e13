import { useMutation, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { Link, useLocation, useSearch } from "wouter";
import { authorizationRequest, continueAuthorization } from "../api/oauth";
import { trpc } from "../api/trpc";
import { EmailField, FormSubmit, TextField } from "../components/form-fields";
import { PublicLayout } from "../components/public-layout";
import { useTitle } from "../components/use-title";

/** Only a path of this site: a `next` pointing elsewhere would make sign-in an open redirect. */
function safeNext(next: string | null): string {
  return next?.startsWith("/") && !next.startsWith("//") && !next.startsWith("/\\") ? next : "/dashboard";
}

const NOTICES: Record<string, string> = {
  signed_out: "You are signed out.",
  reset: "Your password is changed. Sign in with the new one.",
  // The verification link only verifies (it signs no one in: see the server's verify-email page).
  verified: "Your email address is verified. Sign in to continue.",
};

export function SignInPage() {
  useTitle("Sign in");
  const [, navigate] = useLocation();
  const search = useSearch();
  const params = new URLSearchParams(search);
  // An app (an MCP client) sent the person here to sign in before it asks for access.
  const oauthRequest = authorizationRequest(search);
  const queryClient = useQueryClient();
  const [form, setForm] = useState({ email: "", password: "" });
  const signIn = useMutation(
    trpc.auth.signIn.mutationOptions({
      onSuccess: () => {
        // Another person may have used this tab: nothing cached (a "signed out" session above all) outlives sign-in.
        queryClient.clear();
        if (oauthRequest) continueAuthorization(oauthRequest);
        else navigate(safeNext(params.get("next")));
      },
    }),
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    signIn.mutate(form);
  };
  const notice = Object.keys(NOTICES).find((key) => params.has(key));
  const verifyError = params.get("verify_error");
  return (
    <PublicLayout>
      <h1>Sign in</h1>
      {oauthRequest ? (
        <p className="note" role="status">
          An app asks to connect to your Retouch account. Sign in first; you will see what it asks for before anything is shared.
        </p>
      ) : null}
      {notice ? (
        <p className="note" role="status">
          {NOTICES[notice]}
        </p>
      ) : null}
      {verifyError ? (
        <p className="note note-error" role="alert">
          {verifyError === "expired"
            ? "That verification link has expired. Sign in and ask for a fresh one."
            : "That verification link is not valid. Open the link exactly as it appears in the email, or sign in and ask for a fresh one."}
        </p>
      ) : null}
      <form className="form" onSubmit={submit}>
        <EmailField value={form.email} onValue={(email) => setForm({ ...form, email })} />
        <TextField
          label="Password"
          name="password"
          type="password"
          autoComplete="current-password"
          required
          value={form.password}
          onValue={(password) => setForm({ ...form, password })}
        />
        <FormSubmit call={signIn}>Sign in</FormSubmit>
      </form>
      <p>
        <Link href="/forgot-password">Forgot your password?</Link>
      </p>
      <p>
        New here? <Link href={oauthRequest ? `/sign-up?${oauthRequest.toString()}` : "/sign-up"}>Create an account</Link>
      </p>
    </PublicLayout>
  );
}
