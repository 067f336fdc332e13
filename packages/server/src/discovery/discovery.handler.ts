import { readFile } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createRequire } from "node:module";
import path from "node:path";
import type { Services } from "@retouch/core";
import sharp from "sharp";
import { sendJson } from "../http/responses";
import { aiPluginManifest, llmsTxt, mcpManifest, skillMd, termsPage } from "./documents";
import { buildOpenApiDocument } from "./openapi";

const swaggerDir = path.dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));
/** The reference page's assets, served from the npm package: nothing comes from a CDN, so it works offline. */
const ASSETS: Record<string, { file: string; type: string }> = {
  "swagger-ui.css": { file: "swagger-ui.css", type: "text/css; charset=utf-8" },
  "swagger-ui-bundle.js": { file: "swagger-ui-bundle.js", type: "text/javascript; charset=utf-8" },
  "swagger-ui-standalone-preset.js": { file: "swagger-ui-standalone-preset.js", type: "text/javascript; charset=utf-8" },
  "favicon-32x32.png": { file: "favicon-32x32.png", type: "image/png" },
};

const REFERENCE_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Retouch API reference</title>
<link rel="icon" href="/docs/assets/favicon-32x32.png">
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
<div id="reference"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/swagger-ui-standalone-preset.js"></script>
<script src="/docs/assets/reference.js"></script>
</body>
</html>`;

const REFERENCE_SCRIPT = `window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#reference",
    deepLinking: true,
    persistAuthorization: true,
    tryItOutEnabled: true,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    layout: "StandaloneLayout"
  });
});
`;

const LOGO_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="512" height="512" viewBox="0 0 512 512">
<rect width="512" height="512" rx="96" fill="#1f2a44"/>
<circle cx="256" cy="256" r="150" fill="#f4f4f2"/>
<path d="M256 106a150 150 0 0 1 0 300z" fill="#e0533d"/>
</svg>`;

function send(res: ServerResponse, status: number, type: string, body: string | Buffer, cache = "public, max-age=300"): void {
  res.writeHead(status, {
    "Content-Type": type,
    "Content-Length": Buffer.byteLength(body),
    "Cache-Control": cache,
    "X-Content-Type-Options": "nosniff",
  });
  res.end(body);
}

/**
 * The documents that describe the service to machines and people. Answers
 * true when it served the request.
 */
export function createDiscoveryHandler(services: Services) {
  const config = services.config;
  let openapi: string | undefined;
  let logo: Buffer | undefined;

  return async (req: IncomingMessage, res: ServerResponse, pathname: string): Promise<boolean> => {
    if (req.method !== "GET" && req.method !== "HEAD") return false;
    switch (pathname) {
      case "/openapi.json":
        openapi ??= JSON.stringify(buildOpenApiDocument(config), null, 2);
        send(res, 200, "application/json; charset=utf-8", openapi);
        return true;
      case "/mcp.json":
        sendJson(res, 200, mcpManifest(config), { "Cache-Control": "public, max-age=300" });
        return true;
      case "/.well-known/ai-plugin.json":
        sendJson(res, 200, aiPluginManifest(config), { "Cache-Control": "public, max-age=300" });
        return true;
      case "/llms.txt":
        send(res, 200, "text/plain; charset=utf-8", llmsTxt(config));
        return true;
      case "/SKILL.md":
        send(res, 200, "text/markdown; charset=utf-8", skillMd(config));
        return true;
      case "/terms":
        send(res, 200, "text/plain; charset=utf-8", termsPage(config));
        return true;
      case "/logo.png":
        logo ??= await sharp(Buffer.from(LOGO_SVG)).png().toBuffer();
        send(res, 200, "image/png", logo, "public, max-age=86400");
        return true;
      case "/docs":
      case "/docs/":
        send(res, 200, "text/html; charset=utf-8", REFERENCE_PAGE);
        return true;
      case "/docs/assets/reference.js":
        send(res, 200, "text/javascript; charset=utf-8", REFERENCE_SCRIPT);
        return true;
    }
    const asset = pathname.startsWith("/docs/assets/") ? ASSETS[pathname.slice("/docs/assets/".length)] : undefined;
    if (asset) {
      send(res, 200, asset.type, await readFile(path.join(swaggerDir, asset.file)), "public, max-age=86400");
      return true;
    }
    return false;
  };
}
