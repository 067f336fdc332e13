import { useMutation, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { Link, useLocation, useSearch } from "wouter";
import { authorizationRequest, continueAuthorization } from "../api/oauth";
import { trpc } from "../api/trpc";
import { EmailField, FormSubmit, TextField } from "../components/form-fields";
import { PublicLayout } from "../components/public-layout";
import { useTitle } from "../components/use-title";

export function SignUpPage() {
  useTitle("Sign up");
  const [, navigate] = useLocation();
  // Signing up on the way to connecting an app: the new session goes on to the app's consent page.
  const oauthRequest = authorizationRequest(useSearch());
  const queryClient = useQueryClient();
  const [form, setForm] = useState({ name: "", email: "", password: "" });
  const signUp = useMutation(
    trpc.auth.signUp.mutationOptions({
      onSuccess: (_data, input) => {
        // Sign-up opens a session: the cached "nobody signed in" must not send the new account back to sign-in.
        queryClient.clear();
        if (oauthRequest) continueAuthorization(oauthRequest);
        else navigate(`/check-email?email=${encodeURIComponent(input.email)}`);
      },
    }),
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    signUp.mutate(form);
  };
  return (
    <PublicLayout>
      <h1>Create your account</h1>
      <p className="muted">10 free credits to start. We send a link to confirm your email address.</p>
      <form className="form" onSubmit={submit}>
        <TextField
          label="Name"
          name="name"
          autoComplete="name"
          required
          maxLength={100}
          value={form.name}
          onValue={(name) => setForm({ ...form, name })}
        />
        <EmailField value={form.email} onValue={(email) => setForm({ ...form, email })} />
        <TextField
          label="Password"
          name="password"
          type="password"
          autoComplete="new-password"
          required
          minLength={8}
          aria-describedby="password-hint"
          value={form.password}
          onValue={(password) => setForm({ ...form, password })}
        />
        <p id="password-hint" className="hint">
          At least 8 characters.
        </p>
        <FormSubmit call={signUp}>Sign up</FormSubmit>
      </form>
      <p>
        Already have an account? <Link href={oauthRequest ? `/sign-in?${oauthRequest.toString()}` : "/sign-in"}>Sign in</Link>
      </p>
    </PublicLayout>
  );
}
