import { useSearch } from "wouter";
import { PublicLayout } from "../components/public-layout";
import { useTitle } from "../components/use-title";

/**
 * What each error code the authorization endpoint sends here means, in our
 * words (RFC 6749 §4.1.2.1, RFC 8707, and better-auth's own codes). The page
 * shows only these: anyone can link to it with any query string, so text from
 * the URL (`error_description` above all) would let them write on our page
 * ("call this number", "your account is locked") — content spoofing.
 */
const MESSAGES: Record<string, string> = {
  invalid_request: "The app's request was incomplete or malformed.",
  invalid_client: "The app is not known to this service, or its description could not be read.",
  invalid_redirect: "The app asked to send you back to an address it never registered.",
  invalid_redirect_uri: "The app asked to send you back to an address it never registered.",
  unauthorized_client: "The app is not allowed to ask for access this way.",
  client_disabled: "This app has been disabled on this service.",
  access_denied: "Access was denied.",
  unsupported_response_type: "The app asked for a kind of answer this service does not give.",
  unsupported_prompt_select_account: "The app asked to choose among accounts, which this service does not offer.",
  invalid_scope: "The app asked for permissions this service does not have.",
  invalid_target: "The app asked for access to something this service does not offer.",
  temporarily_unavailable: "The service could not check the app just now. Try again in a minute.",
  server_error: "Something went wrong on our side.",
};
const UNKNOWN = "The app's request could not be completed.";

/**
 * Where the authorization endpoint sends a person when an app's request
 * cannot be answered at the app itself: an unknown app, or a return address
 * the app never registered (sending the person there could hand a code to
 * someone else). Says what went wrong for a known code; never the URL's text.
 */
export function OAuthErrorPage() {
  useTitle("The app's request was refused");
  const params = new URLSearchParams(useSearch());
  const code = params.get("error");
  const known = code !== null && Object.hasOwn(MESSAGES, code);
  return (
    <PublicLayout>
      <h1>The app's request was refused</h1>
      <p className="note note-error" role="alert">
        {known ? MESSAGES[code] : UNKNOWN}
        {known ? (
          <>
            {" "}
            Error code: <code>{code}</code>.
          </>
        ) : null}
      </p>
      <p>
        Nothing was shared with the app. Start again from the app; if this happens again, tell its developer what this page says.
      </p>
    </PublicLayout>
  );
}
