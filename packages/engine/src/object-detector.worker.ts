import { parentPort, workerData } from "node:worker_threads";
import { serveModelThread } from "./human-model";
import { type DetectorThreadInput, runCenterNet } from "./object-detector.human";

/** One detection in a thread of its own (see HumanObjectDetector); the detector ends the thread after the answer. */
if (parentPort) serveModelThread(parentPort, workerData as DetectorThreadInput, runCenterNet);
