import { useMutation } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { Link } from "wouter";
import { trpc } from "../api/trpc";
import { EmailField, FormSubmit } from "../components/form-fields";
import { PublicLayout } from "../components/public-layout";
import { useTitle } from "../components/use-title";

export function ForgotPasswordPage() {
  useTitle("Forgot your password");
  const [email, setEmail] = useState("");
  const request = useMutation(trpc.auth.requestPasswordReset.mutationOptions());
  const submit = (event: FormEvent) => {
    event.preventDefault();
    request.mutate({ email });
  };
  return (
    <PublicLayout>
      <h1>Forgot your password?</h1>
      {request.isSuccess ? (
        <p className="note" role="status">
          If an account uses {email}, a link to choose a new password is on its way. It works once and expires soon.
        </p>
      ) : (
        <form className="form" onSubmit={submit}>
          <p className="muted">We mail you a link to choose a new one.</p>
          <EmailField value={email} onValue={setEmail} />
          <FormSubmit call={request}>Send the link</FormSubmit>
        </form>
      )}
      <p>
        <Link href="/sign-in">Back to sign-in</Link>
      </p>
    </PublicLayout>
  );
}
