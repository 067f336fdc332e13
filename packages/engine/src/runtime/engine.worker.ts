import { setImmediate as nextTurn } from "node:timers/promises";
import { parentPort, workerData } from "node:worker_threads";
import { isEngineError } from "../engine-error";
import { RemoteOnnxRunner } from "../models/onnx-runner.remote";
import { VisionThreadClient } from "../vision/vision-thread";
import { createImageEngine } from "../workflows/engine";
import type { EngineWorkerOptions, WorkerMessage, WorkerReply } from "./engine-worker.protocol";
import { collectGarbage } from "./garbage-collection";

/** One engine thread: edits one image at a time for the pool. */
if (parentPort) {
  const port = parentPort;
  // Models run in the pool's inference thread, shared by every engine thread.
  const onnxRunner = new RemoteOnnxRunner();
  // The detector and the pose model run in the pool's vision thread, shared too.
  const visionThread = new VisionThreadClient();
  let engine = createImageEngine({ ...(workerData as EngineWorkerOptions), onnxRunner, visionThread, collectGarbage });
  // Load any ONNX model while the thread waits for its first edit (the detector runs in the vision thread).
  let warm = Promise.resolve(engine.warmUp?.()).catch(() => {
    // A model that fails to load fails the edits that need it, with their refund.
  });
  const running = new Map<number, AbortController>();

  port.on("message", async (message: WorkerMessage) => {
    if (message.kind === "cancel") {
      running.get(message.id)?.abort();
      return;
    }
    if (message.kind === "inference") {
      onnxRunner.connect(message.port);
      return;
    }
    if (message.kind === "vision") {
      visionThread.connect(message.port);
      return;
    }
    if (message.kind === "configure") {
      // The new engine loads beside the current one, which keeps editing until the swap.
      try {
        const next = createImageEngine({ ...message.options, onnxRunner, visionThread, collectGarbage });
        await next.warmUp?.();
        engine = next;
        warm = Promise.resolve();
        port.postMessage({ kind: "configured", ok: true } satisfies WorkerReply);
      } catch (error) {
        port.postMessage({
          kind: "configured",
          ok: false,
          error: error instanceof Error ? error.message : String(error),
        } satisfies WorkerReply);
      }
      return;
    }
    const controller = new AbortController();
    running.set(message.id, controller);
    const { image, mask, ...rest } = message.request;
    try {
      await warm;
      const result = await engine.edit({
        ...rest,
        image: Buffer.from(image.buffer, image.byteOffset, image.byteLength),
        ...(mask ? { mask: Buffer.from(mask.buffer, mask.byteOffset, mask.byteLength) } : {}),
        signal: controller.signal,
      });
      // The edited frame (48 MB at 12 MP) is garbage now: collected, and its finalizers run, before the copy.
      collectGarbage();
      await nextTurn();
      const bytes = new Uint8Array(result.image.byteLength);
      bytes.set(result.image);
      port.postMessage({ kind: "edited", id: message.id, ok: true, result: { ...result, image: bytes } } satisfies WorkerReply, [
        bytes.buffer,
      ]);
    } catch (error) {
      const reply: WorkerReply = {
        kind: "edited",
        id: message.id,
        ok: false,
        error: isEngineError(error)
          ? { message: error.message, reason: error.reason }
          : { message: error instanceof Error ? error.message : String(error) },
      };
      port.postMessage(reply);
    } finally {
      running.delete(message.id);
      // After the reply is on its way: the edit's buffers are garbage now.
      collectGarbage();
    }
  });
}
