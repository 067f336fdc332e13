export const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] as string);

/**
 * The pages' only style, inline so a page is one self-contained response. The
 * Content-Security-Policy allows exactly this text by its hash (security.ts):
 * any change here changes the hash with it.
 */
export const PAGE_STYLE = `
  body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; background: #f6f7f9; color: #1c1e21; margin: 0; }
  main { max-width: 34rem; margin: 12vh auto; background: #fff; border-radius: 12px; padding: 2rem 2.25rem; box-shadow: 0 1px 4px rgba(0,0,0,.08); }
  h1 { font-size: 1.4rem; margin-top: 0; }
  code, pre { background: #f0f1f3; border-radius: 6px; padding: .15rem .35rem; font-size: .9em; }
  pre { padding: .75rem; overflow-x: auto; }
  .ok { color: #137333; } .bad { color: #b3261e; }
`;

/** A minimal self-contained page: no script, no external assets (it works offline and under the strict CSP). */
export function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · Retouch</title>
<style>${PAGE_STYLE}</style>
</head>
<body><main>${body}</main></body>
</html>`;
}
