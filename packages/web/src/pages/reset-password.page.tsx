import { useMutation } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { Link, useLocation, useSearch } from "wouter";
import { trpc } from "../api/trpc";
import { FormSubmit, TextField } from "../components/form-fields";
import { PublicLayout } from "../components/public-layout";
import { useTitle } from "../components/use-title";

export function ResetPasswordPage() {
  useTitle("Choose a new password");
  const [, navigate] = useLocation();
  const token = new URLSearchParams(useSearch()).get("token") ?? "";
  const [password, setPassword] = useState("");
  const reset = useMutation(trpc.auth.resetPassword.mutationOptions({ onSuccess: () => navigate("/sign-in?reset=1") }));
  const submit = (event: FormEvent) => {
    event.preventDefault();
    reset.mutate({ token, new_password: password });
  };
  return (
    <PublicLayout>
      <h1>Choose a new password</h1>
      {token ? (
        <form className="form" onSubmit={submit}>
          <TextField
            label="New password"
            name="password"
            type="password"
            autoComplete="new-password"
            required
            minLength={8}
            aria-describedby="new-password-hint"
            value={password}
            onValue={setPassword}
          />
          <p id="new-password-hint" className="hint">
            At least 8 characters. Every other session of your account is signed out.
          </p>
          <FormSubmit call={reset}>Set the new password</FormSubmit>
        </form>
      ) : (
        <p className="note note-error" role="alert">
          This link is missing its token. Open the link exactly as it appears in the email, or{" "}
          <Link href="/forgot-password">ask for a new one</Link>.
        </p>
      )}
    </PublicLayout>
  );
}
