// The router the dashboard talks to: the service's own, as the SDK's generated types describe it.
// At the issue 14 merge: `export type { AppRouter } from "@retouch/sdk";` (see router.temporary.ts).
export type { DashboardRouter as AppRouter } from "./router.temporary";
