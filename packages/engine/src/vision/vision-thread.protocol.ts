/**
 * What the model threads of vision/ are asked and answer: the object detector's
 * own thread (object-detector.worker.ts), the pose model's
 * (pose-keypoints.worker.ts), and the engine pool's vision thread
 * (vision-thread.ts, vision.worker.ts), which runs both models. Types only, in
 * a file of their own so that the thread's host and the models it runs import
 * them without importing each other.
 */

/** What the detection thread gets: the picture at 512x512, RGB. */
export interface DetectorThreadInput {
  pixels: Uint8Array;
}

/** What the thread answers besides detections: MoveNet's keypoints (pose-keypoints.ts), or loads MoveNet beforehand. */
export type HumanThreadInput = DetectorThreadInput | PoseThreadInput | { preparePose: true };
export type HumanThreadOutput = Float32Array | Float32Array[] | null;

/** What the pose thread gets: one 192x192 RGB crop per person. */
export interface PoseThreadInput {
  crops: Uint8Array[];
}
