import { parentPort, workerData } from "node:worker_threads";
import { serveModelThread } from "./human-model";
import { runMoveNet } from "./pose-keypoints";
import type { PoseThreadInput } from "./vision-thread.protocol";

/** One pose estimate (every person of one removal) in a thread of its own (see MoveNetPoseEstimator); ended after the answer. */
if (parentPort) serveModelThread(parentPort, workerData as PoseThreadInput, runMoveNet);
