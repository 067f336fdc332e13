// The router the dashboard talks to: the service's own, as the SDK's generated types describe it.
export type { AppRouter } from "@retouch/sdk";
