import type { ReactNode } from "react";
import { Link } from "wouter";

/** The pages before sign-in: the brand, the page, a footer with the API's own documents. */
export function PublicLayout({ children, wide = false }: { children: ReactNode; wide?: boolean }) {
  return (
    <div className="public">
      <header className="public-header">
        <Link href="/" className="brand">
          <img src="/favicon.svg" alt="" width="28" height="28" />
          Retouch
        </Link>
        <nav aria-label="Account">
          <Link href="/sign-in">Sign in</Link>
          <Link href="/sign-up" className="button-link">
            Sign up
          </Link>
        </nav>
      </header>
      <main className={wide ? "public-main public-main-wide" : "public-main"}>{children}</main>
      <footer className="public-footer">
        <a href="/docs">API reference</a>
        <a href="/openapi.json">OpenAPI</a>
        <a href="/llms.txt">llms.txt</a>
        <a href="/terms">Terms</a>
      </footer>
    </div>
  );
}
