import { parentPort, workerData } from "node:worker_threads";
import { LocalOnnxRunner } from "../models/onnx-runner";
import { serveOnnxRunner } from "../models/onnx-runner.remote";
import type { InferenceMessage, InferenceReply } from "./engine-worker.protocol";

/**
 * The engine pool's inference thread: holds the process's one session per
 * model and runs them one at a time for every engine thread, each of which
 * is connected here by a port of its own.
 */
export interface InferenceWorkerOptions {
  threads?: number;
}

if (parentPort) {
  const port = parentPort;
  const runner = new LocalOnnxRunner({
    ...(workerData as InferenceWorkerOptions),
    onLoaded: (file, seconds) => port.postMessage({ kind: "loaded", file, seconds } satisfies InferenceReply),
  });
  parentPort.on("message", (message: InferenceMessage) => {
    if (message.kind === "connect") serveOnnxRunner(message.port, runner);
    else runner.retain(message.keep);
  });
}
