import { parentPort } from "node:worker_threads";
import { searchBand } from "./patch-search";
import type { PatchSearchReply, PatchSearchTask } from "./patch-search-thread";

/** The fill's helper thread (patch-search-thread.ts): searches the second band of a round on the fill's shared memory. */
if (parentPort) {
  const port = parentPort;
  port.on("message", ({ level, field, radius, band }: PatchSearchTask) => {
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
