import { parentPort, workerData } from "node:worker_threads";
import { type DetectorThreadInput, type DetectorThreadReply, runCenterNet } from "./object-detector.human";

/** One detection in a thread of its own (see HumanObjectDetector); the detector ends the thread after the answer. */
if (parentPort) {
  const port = parentPort;
  const { pixels } = workerData as DetectorThreadInput;
  runCenterNet(pixels).then(
    (rows) => port.postMessage({ ok: true, rows } satisfies DetectorThreadReply),
    (error: unknown) =>
      port.postMessage({
        ok: false,
        message:
          error instanceof Error
            ? `${error.message}${error.cause instanceof Error ? ` (${error.cause.message})` : ""}`
            : String(error),
      } satisfies DetectorThreadReply),
  );
}
