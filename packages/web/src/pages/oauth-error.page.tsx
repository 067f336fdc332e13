import { useSearch } from "wouter";
import { PublicLayout } from "../components/public-layout";
import { useTitle } from "../components/use-title";

/**
 * Where the authorization endpoint sends a person when an app's request
 * cannot be answered at the app itself: an unknown app, or a return address
 * the app never registered (sending the person there could hand a code to
 * someone else). Says what went wrong in the server's words.
 */
export function OAuthErrorPage() {
  useTitle("The app's request was refused");
  const params = new URLSearchParams(useSearch());
  const error = params.get("error") ?? "invalid_request";
  const description = params.get("error_description");
  return (
    <PublicLayout>
      <h1>The app's request was refused</h1>
      <p className="note note-error" role="alert">
        {sentence(description ?? "the request was not valid")}. Error code: <code>{error}</code>.
      </p>
      <p>
        Nothing was shared with the app. Start again from the app; if this happens again, tell its developer what this page says.
      </p>
    </PublicLayout>
  );
}

function sentence(text: string): string {
  return `${text.charAt(0).toUpperCase()}${text.slice(1)}`;
}
