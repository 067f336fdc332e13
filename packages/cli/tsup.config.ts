import { defineConfig } from "tsup";

export const cliBuild = defineConfig({
  entry: ["src/cli.ts"],
  format: ["esm"],
  clean: true,
  target: "node22",
  platform: "node",
  banner: { js: "#!/usr/bin/env node" },
});

// tsup reads the config's default export.
// biome-ignore lint/style/noDefaultExport: required by tsup
export default cliBuild;
