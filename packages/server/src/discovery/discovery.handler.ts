import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import type { Services } from "@retouch/core";
import { Hono } from "hono";
import sharp from "sharp";
import type { HttpEnv } from "../http/request-context";
import { aiPluginManifest, llmsTxt, mcpManifest, skillMd, termsPage } from "./documents";
import { buildOpenApiDocument } from "./openapi";

const swaggerDir = path.dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));
/** The reference page's assets, served from the npm package: nothing comes from a CDN, so it works offline. */
const ASSETS: Record<string, { file: string; type: string }> = {
  "swagger-ui.css": { file: "swagger-ui.css", type: "text/css; charset=utf-8" },
  "swagger-ui-bundle.js": { file: "swagger-ui-bundle.js", type: "text/javascript; charset=utf-8" },
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
<script src="/docs/assets/reference.js"></script>
</body>
</html>`;

// No validator badge: it would fetch an image from validator.swagger.io (offline, and outside the page's CSP). The
// base layout, without the standalone preset's top bar: its logo is an SVG with an inline <style> the CSP refuses.
const REFERENCE_SCRIPT = `window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: "/openapi.json",
    validatorUrl: null,
    dom_id: "#reference",
    deepLinking: true,
    persistAuthorization: true,
    tryItOutEnabled: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout"
  });
});
`;

const LOGO_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="512" height="512" viewBox="0 0 512 512">
<rect width="512" height="512" rx="96" fill="#1f2a44"/>
<circle cx="256" cy="256" r="150" fill="#f4f4f2"/>
<path d="M256 106a150 150 0 0 1 0 300z" fill="#e0533d"/>
</svg>`;

const SHORT_CACHE = "public, max-age=300";
const DAY_CACHE = "public, max-age=86400";

function document(type: string, body: string | Uint8Array, cache = SHORT_CACHE): Response {
  return new Response(body, { headers: { "Content-Type": type, "Cache-Control": cache } });
}

const JSON_TYPE = "application/json; charset=utf-8";

/** The documents that describe the service to machines and people (GET, and HEAD through Hono). */
export function createDiscoveryRoutes(services: Services): Hono<HttpEnv> {
  const config = services.config;
  let openapi: string | undefined;
  let logo: Uint8Array | undefined;

  return new Hono<HttpEnv>()
    .get("/openapi.json", () => {
      openapi ??= JSON.stringify(buildOpenApiDocument(config), null, 2);
      return document(JSON_TYPE, openapi);
    })
    .get("/mcp.json", () => document(JSON_TYPE, JSON.stringify(mcpManifest(config))))
    .get("/.well-known/ai-plugin.json", () => document(JSON_TYPE, JSON.stringify(aiPluginManifest(config))))
    .get("/llms.txt", () => document("text/plain; charset=utf-8", llmsTxt(config)))
    .get("/SKILL.md", () => document("text/markdown; charset=utf-8", skillMd(config)))
    .get("/terms", () => document("text/plain; charset=utf-8", termsPage(config)))
    .get("/logo.png", async () => {
      logo ??= new Uint8Array(await sharp(Buffer.from(LOGO_SVG)).png().toBuffer());
      // Plugin hosts show it on their own pages.
      return new Response(logo, {
        headers: { "Content-Type": "image/png", "Cache-Control": DAY_CACHE, "Cross-Origin-Resource-Policy": "cross-origin" },
      });
    })
    .get("/docs", () => document("text/html; charset=utf-8", REFERENCE_PAGE))
    .get("/docs/assets/reference.js", () => document("text/javascript; charset=utf-8", REFERENCE_SCRIPT))
    .get("/docs/assets/:name", async (c, next) => {
      const asset = ASSETS[c.req.param("name")];
      if (!asset) return next();
      return document(asset.type, new Uint8Array(await readFile(path.join(swaggerDir, asset.file))), DAY_CACHE);
    });
}
