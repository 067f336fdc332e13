import { parentPort } from "node:worker_threads";
import { collectGarbage } from "../runtime/garbage-collection";
import { searchBand } from "./patch-search";
import type { PatchSearchMessage, PatchSearchReply } from "./patch-search-thread";

/** The fill's helper thread (patch-search-thread.ts): searches the second band of a round on the fill's shared memory. */
if (parentPort) {
  const port = parentPort;
  port.on("message", (message: PatchSearchMessage) => {
    if ("release" in message) {
      // The bands' arrays are shared with the fill; they are freed once neither thread holds them, and this one,
      // which allocates next to nothing, would otherwise hold every fill's until some distant collection.
      collectGarbage();
      return;
    }
    const { level, field, radius, band } = message;
    searchBand(level, field, radius, band).then(
      () => port.postMessage({ ok: true } satisfies PatchSearchReply),
      (error: unknown) =>
        port.postMessage({
          ok: false,
          message: error instanceof Error ? error.message : String(error),
        } satisfies PatchSearchReply),
    );
  });
}
