import { fileURLToPath } from "node:url";
import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

/** Where `pnpm --filter @retouch/web dev` sends API calls: a service started with `pnpm dev` or `pnpm start`. */
const service = process.env.RETOUCH_DEV_API ?? "http://localhost:3000";

export const webBuild = defineConfig({
  plugins: [react()],
  resolve: {
    // The SDK's sources, as the tests use them: no build of the SDK needed first, and one @trpc/client.
    alias: { "@retouch/sdk": fileURLToPath(new URL("../sdk/src/index.ts", import.meta.url)) },
  },
  build: {
    target: "es2022",
    // Nothing inlined as data: URLs, nothing from a CDN: every asset is a file the service serves.
    assetsInlineLimit: 0,
    // The module preload polyfill is for browsers older than the es2022 target.
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
  },
  server: {
    proxy: Object.fromEntries(["/api", "/trpc", "/auth", "/files", "/mcp"].map((prefix) => [prefix, service])),
  },
});

// Vite reads the config's default export.
// biome-ignore lint/style/noDefaultExport: required by Vite
export default webBuild;
