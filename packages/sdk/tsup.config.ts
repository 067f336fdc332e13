import { defineConfig } from "tsup";

export const sdkBuild = defineConfig({
  entry: ["src/index.ts"],
  format: ["esm"],
  dts: true,
  clean: true,
  sourcemap: true,
  target: "es2022",
  platform: "neutral",
});

// tsup reads the config's default export.
// biome-ignore lint/style/noDefaultExport: required by tsup
export default sdkBuild;
