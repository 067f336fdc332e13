import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import type { ReactNode } from "react";
import { Link, Redirect, useLocation } from "wouter";
import { setBrowserKey } from "../api/browser-key";
import { trpc } from "../api/trpc";
import { ErrorNote } from "./error-note";

const SECTIONS = [
  { href: "/dashboard", label: "Overview" },
  { href: "/dashboard/billing", label: "Billing" },
  { href: "/dashboard/keys", label: "API keys" },
  { href: "/dashboard/jobs", label: "Jobs" },
  { href: "/dashboard/playground", label: "Playground" },
  { href: "/dashboard/webhooks", label: "Webhooks" },
  { href: "/dashboard/connect", label: "Connect" },
  { href: "/dashboard/apps", label: "Connected apps" },
];

/**
 * Every signed-in page: who is signed in, the sections, sign-out. Nobody
 * signed in goes to sign-in and comes back here after. A session check that
 * fails for another reason lets the page try its own calls, which say why.
 */
export function DashboardLayout({ children }: { children: ReactNode }) {
  const [location, navigate] = useLocation();
  const queryClient = useQueryClient();
  const session = useQuery(trpc.auth.session.queryOptions());
  const signOut = useMutation(
    trpc.auth.signOut.mutationOptions({
      onSuccess: () => {
        setBrowserKey(undefined);
        queryClient.clear();
        navigate("/sign-in?signed_out=1");
      },
    }),
  );

  // A cached "nobody" is checked again before it sends anyone away.
  if (session.isPending || (session.data === null && session.isFetching)) {
    return (
      <p className="loading" aria-live="polite">
        Loading…
      </p>
    );
  }
  if (session.data === null) return <Redirect to={`/sign-in?next=${encodeURIComponent(location)}`} replace />;

  return (
    <div className="dashboard">
      <a className="skip-link" href="#content">
        Skip to content
      </a>
      <header className="dashboard-header">
        <Link href="/dashboard" className="brand">
          <img src="/favicon.svg" alt="" width="28" height="28" />
          Retouch
        </Link>
        <div className="who">
          {session.data ? <span>{session.data.user.email}</span> : null}
          <button type="button" className="button-quiet" onClick={() => signOut.mutate()} disabled={signOut.isPending}>
            Sign out
          </button>
        </div>
      </header>
      <nav className="dashboard-nav" aria-label="Dashboard">
        <ul>
          {SECTIONS.map((section) => (
            <li key={section.href}>
              <Link href={section.href} aria-current={location === section.href ? "page" : undefined}>
                {section.label}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      <main id="content" className="dashboard-main">
        <ErrorNote error={signOut.error} prefix="Signing out failed:" />
        {children}
      </main>
    </div>
  );
}
