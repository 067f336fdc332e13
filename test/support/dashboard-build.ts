import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";

export interface DashboardBuild {
  dir: string;
  indexHtml: string;
  /** The hashed script index.html loads, as its URL path. */
  scriptPath: string;
  script: string;
  remove(): Promise<void>;
}

/**
 * A directory laid out as Vite builds the dashboard (index.html, hashed
 * files under assets/, a favicon beside them), for the host to serve.
 */
export async function dashboardBuild(): Promise<DashboardBuild> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "retouch-dashboard-"));
  const scriptPath = "/assets/index-3f9a1c2b.js";
  const script = 'document.getElementById("root").textContent = "dashboard";\n';
  const indexHtml = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Retouch</title><link rel="icon" href="/favicon.svg">
<script type="module" src="${scriptPath}"></script></head>
<body><div id="root"></div></body>
</html>
`;
  await mkdir(path.join(dir, "assets"));
  await writeFile(path.join(dir, "index.html"), indexHtml);
  await writeFile(path.join(dir, scriptPath), script);
  await writeFile(path.join(dir, "favicon.svg"), '<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>');
  return { dir, indexHtml, scriptPath, script, remove: () => rm(dir, { recursive: true, force: true }) };
}
