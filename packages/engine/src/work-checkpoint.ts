import { setImmediate as nextTurn } from "node:timers/promises";
import { EngineError } from "./engine-error";

export function throwIfCancelled(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new EngineError("cancelled", "The edit was cancelled.", { cause: signal.reason });
}

/**
 * Pixel loops are synchronous JavaScript. Calling the returned function between
 * chunks of work gives the event loop a turn every `sliceMs` (so the process
 * keeps answering HTTP and heartbeats while an edit runs) and stops the work as
 * soon as the request is cancelled.
 */
export function createCheckpoint(signal: AbortSignal | undefined, sliceMs = 30): () => Promise<void> {
  let sliceStart = performance.now();
  return async () => {
    throwIfCancelled(signal);
    if (performance.now() - sliceStart < sliceMs) return;
    await nextTurn();
    sliceStart = performance.now();
    throwIfCancelled(signal);
  };
}
