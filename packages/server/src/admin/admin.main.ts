import { enableCompileCache } from "../compile-cache";

// The entry of `pnpm retouch`: only this file is loaded before the compile cache is on.
enableCompileCache();
await import("./admin.cli");
