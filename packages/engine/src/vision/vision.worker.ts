import { parentPort } from "node:worker_threads";
import { describeFailure } from "./human-model";
import { runHumanThread } from "./object-detector.human";
import type { VisionReply, VisionTask } from "./vision-thread";

/** The engine pool's vision thread (vision-thread.ts): detections and body keypoints for every engine thread, one at a time. */
if (parentPort) {
  const port = parentPort;
  let queue = Promise.resolve();
  port.on("message", ({ id, input }: VisionTask) => {
    queue = queue.then(() =>
      runHumanThread(input).then(
        (output) => port.postMessage({ id, ok: true, output } satisfies VisionReply),
        (error: unknown) => port.postMessage({ id, ok: false, message: describeFailure(error) } satisfies VisionReply),
      ),
    );
  });
}
