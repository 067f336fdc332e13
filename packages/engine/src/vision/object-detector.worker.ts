import { parentPort, workerData } from "node:worker_threads";
import { serveModelThread } from "./human-model";
import { runHumanThread } from "./object-detector.human";
import type { HumanThreadInput } from "./vision-thread.protocol";

/** One detection in a thread of its own (see HumanObjectDetector), then the removal's body keypoints if it asks for them; ended after. */
if (parentPort) serveModelThread(parentPort, workerData as HumanThreadInput, runHumanThread);
