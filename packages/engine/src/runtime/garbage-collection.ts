import v8 from "node:v8";
import { runInNewContext } from "node:vm";

let gc: (() => void) | undefined;

/**
 * V8's full garbage collection, now. The engine's buffers are large (48 MB for
 * a decoded 12 MP photo, a few hundred MB for a model's bytes) and V8 collects
 * only when JavaScript allocates: a thread waiting for its next edit, or one
 * running a forward pass in native code, keeps them as garbage (measured: about
 * 120 MB per engine thread 5 s after the jobs). Node gives no API for it
 * without the --expose-gc flag, which a library cannot ask of its host; the
 * flag can be set at run time and gives `gc` to new contexts, and one is made to
 * take it from (Jest's --logHeapUsage does the same).
 */
export function collectGarbage(): void {
  if (!gc) {
    v8.setFlagsFromString("--expose-gc");
    gc = runInNewContext("gc") as () => void;
  }
  gc();
}
