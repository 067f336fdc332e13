import { Route, Switch } from "wouter";
import { BillingPage, BillingReturn } from "./pages/billing.page";
import { CheckEmailPage } from "./pages/check-email.page";
import { ConnectPage } from "./pages/connect.page";
import { ConnectedAppsPage } from "./pages/connected-apps.page";
import { ForgotPasswordPage } from "./pages/forgot-password.page";
import { JobsPage } from "./pages/jobs.page";
import { KeysPage } from "./pages/keys.page";
import { LandingPage } from "./pages/landing.page";
import { NotFoundPage } from "./pages/not-found.page";
import { OAuthConsentPage } from "./pages/oauth-consent.page";
import { OAuthErrorPage } from "./pages/oauth-error.page";
import { OverviewPage } from "./pages/overview.page";
import { PlaygroundPage } from "./pages/playground.page";
import { ResetPasswordPage } from "./pages/reset-password.page";
import { SignInPage } from "./pages/sign-in.page";
import { SignUpPage } from "./pages/sign-up.page";
import { WebhooksPage } from "./pages/webhooks.page";

/** The client routes; the service answers index.html for each of them (docs/architecture.md, packages/web). */
export function App() {
  return (
    <Switch>
      <Route path="/" component={LandingPage} />
      <Route path="/sign-up" component={SignUpPage} />
      <Route path="/sign-in" component={SignInPage} />
      <Route path="/check-email" component={CheckEmailPage} />
      <Route path="/forgot-password" component={ForgotPasswordPage} />
      <Route path="/reset-password" component={ResetPasswordPage} />
      <Route path="/dashboard" component={OverviewPage} />
      <Route path="/dashboard/billing" component={BillingPage} />
      <Route path="/billing" component={BillingReturn} />
      <Route path="/dashboard/keys" component={KeysPage} />
      <Route path="/dashboard/jobs" component={JobsPage} />
      <Route path="/dashboard/playground" component={PlaygroundPage} />
      <Route path="/dashboard/webhooks" component={WebhooksPage} />
      <Route path="/dashboard/connect" component={ConnectPage} />
      <Route path="/dashboard/apps" component={ConnectedAppsPage} />
      <Route path="/oauth/consent" component={OAuthConsentPage} />
      <Route path="/oauth/error" component={OAuthErrorPage} />
      <Route component={NotFoundPage} />
    </Switch>
  );
}
