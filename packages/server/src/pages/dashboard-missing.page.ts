import { escapeHtml, page } from "./layout";

/** What `/` (and any dashboard route) shows when the service runs without a built dashboard. */
export function dashboardMissingPage(publicBaseUrl: string): string {
  const base = escapeHtml(publicBaseUrl);
  return page(
    "Dashboard not built",
    `<h1>Retouch is running; its dashboard is not built</h1>
<p>The API answers at <code>${base}/api</code> (reference: <a href="/docs">/docs</a>, for agents: <a href="/llms.txt">/llms.txt</a>).</p>
<p>The dashboard is a separate build that this server serves once it exists. Build it from the repository, then restart the service:</p>
<pre>pnpm --filter @retouch/web build</pre>
<p>(<code>pnpm install</code> builds it too.)</p>`,
  );
}
