import { runServiceMaintenance } from "@retouch/core";
import type { TestApp } from "./test-app";

/** The service's once-a-minute sweep, run now on the test app's own services, as of `now` (a time in ms; default: now). */
export function sweep(app: Pick<TestApp, "services" | "config">, now?: number): Promise<void> {
  return runServiceMaintenance(app.services, now);
}
