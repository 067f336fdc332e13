import { parentPort, workerData } from "node:worker_threads";
import { type FaceThreadInput, runBlazeFace } from "./face-detector.blazeface";
import { serveModelThread } from "./human-model";

/** One face detection in a thread of its own (see BlazeFaceDetector); the detector ends the thread after the answer. */
if (parentPort) serveModelThread(parentPort, workerData as FaceThreadInput, runBlazeFace);
