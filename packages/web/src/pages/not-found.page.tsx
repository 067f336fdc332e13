import { Link } from "wouter";
import { PublicLayout } from "../components/public-layout";
import { useTitle } from "../components/use-title";

export function NotFoundPage() {
  useTitle("Page not found");
  return (
    <PublicLayout>
      <h1>Page not found</h1>
      <p>
        There is nothing at this address. Go to the <Link href="/">home page</Link> or your{" "}
        <Link href="/dashboard">dashboard</Link>.
      </p>
    </PublicLayout>
  );
}
