import type {
  Box,
  Detection,
  GreyImage,
  Inpainter,
  ObjectDetector,
  ObjectRemovalTask,
  ObjectRemover,
  RgbaImage,
  SubjectSegmenter,
  WorkContext,
} from "../engine.ports";
import { EngineError } from "../engine-error";
import { BUILT_IN_CATALOG } from "../models/model-catalog";
import { resizeGrey } from "../pixels/image-codec";
import { coverage, dilate } from "../pixels/mask-ops";
import { openVocabularyQuery, readTerm, selectDetections, type TargetQuery } from "../prompts/detection-vocabulary";
import type { Rgb } from "../prompts/prompt-text";
import type { Keypoint, PoseEstimator } from "../vision/pose-keypoints";
import type { ImageEmbedding, PromptableSegmenter, PromptPoint } from "../vision/segmenter.minisam";
import { throwIfCancelled } from "../work-checkpoint";
import {
  type Area,
  colourCandidate,
  grow,
  type LocalMask,
  maskAt,
  type Shape,
  type ShapeCandidate,
  segmentedShape,
  selectShape,
} from "./object-shape";

/**
 * The built-in object remover: a mask (given, or built from the shapes of the
 * detected things named), widened a little, then filled by the inpainter.
 */
export interface DetectAndInpaintOptions {
  /** A given mask covering more than this fraction of the image is refused: too little is left to fill from. Default 0.7. */
  maxMaskCoverage?: number;
  /**
   * Detected objects whose hole would cover more than this fraction are refused. Default 0.3: a
   * detection that large is mostly the scene itself (a frame-filling cat, a "bowl" of gravel),
   * and a fill that large is invented, not restored.
   */
  maxTargetCoverage?: number;
  /** A learned model that finds a detected object's own shape around its box; without one, the box is refined by colour. */
  segmenter?: SubjectSegmenter;
  /**
   * A promptable segmenter (SAM): each detection's box becomes the object's own mask, and a
   * detection it does not confirm is dropped. When it cannot run, the shapes above are the fallback.
   */
  promptable?: PromptableSegmenter;
  /**
   * Body keypoints for the people to remove: the confident ones inside a person's box are points
   * the promptable segmenter must include (an outstretched arm, a leg), and enough of them confirm
   * a person whose spread limbs leave most of the box empty. Loaded only when a person is removed.
   */
  pose?: PoseEstimator;
}

/** The command that installs the default learned model, for messages that need one. */
const PULL_MODEL = `pnpm retouch models pull ${BUILT_IN_CATALOG.defaults.background ?? "NAME"}`;

export class DetectAndInpaintRemover implements ObjectRemover {
  private readonly maxMaskCoverage: number;
  private readonly maxTargetCoverage: number;
  private readonly segmenter: SubjectSegmenter | undefined;
  private readonly promptable: PromptableSegmenter | undefined;
  private readonly pose: PoseEstimator | undefined;

  constructor(
    private readonly detector: ObjectDetector,
    private readonly inpainter: Inpainter,
    options: DetectAndInpaintOptions = {},
  ) {
    this.maxMaskCoverage = options.maxMaskCoverage ?? 0.7;
    this.maxTargetCoverage = options.maxTargetCoverage ?? 0.3;
    this.segmenter = options.segmenter;
    this.promptable = options.promptable;
    this.pose = options.pose;
  }

  async removeObjects(task: ObjectRemovalTask, context: WorkContext): Promise<RgbaImage> {
    return (await this.removeWithHole(task, context)).image;
  }

  /**
   * The removal and the hole it filled: the given mask widened, or the mask built from the
   * detections with how (`removal`). The yardstick (`pnpm quality`) scores both.
   */
  async removeWithHole(
    task: ObjectRemovalTask,
    context: WorkContext,
  ): Promise<{ image: RgbaImage; hole: GreyImage; removal?: RemovalMask }> {
    const { image } = task;
    const removal = task.mask ? undefined : await this.maskFromDetections(task, context);
    const mask = task.mask ? widenUserMask(task.mask) : (removal as RemovalMask).mask;
    const covered = coverage(mask.data);
    if (covered === 0) throw new EngineError("invalid_mask", "The mask marks nothing to remove (white marks the area).");
    if (covered > this.maxMaskCoverage) {
      throw new EngineError(
        "invalid_mask",
        `The area to remove covers ${Math.round(covered * 100)}% of the image; at most ${Math.round(this.maxMaskCoverage * 100)}% can be filled from the rest.`,
      );
    }
    throwIfCancelled(context.signal);
    context.endStage?.("mask");
    const filled = await this.inpainter.inpaint(image, mask, context);
    return { image: filled, hole: mask, ...(removal ? { removal } : {}) };
  }

  /**
   * The hole for the named things: each chosen detection's own shape (see
   * `object-shape.ts`), less whatever belongs to another detected object
   * beside it, widened by a few pixels. Exposed for tests and tools that want
   * the hole without the fill.
   */
  async maskFromDetections(task: ObjectRemovalTask, context: WorkContext): Promise<RemovalMask> {
    try {
      return await this.buildMask(task, context);
    } finally {
      // A thread kept open for the keypoints (the detector's) never outlives the mask, whatever happened.
      this.pose?.release?.(task.image);
    }
  }

  private async buildMask(task: ObjectRemovalTask, context: WorkContext): Promise<RemovalMask> {
    const { image } = task;
    const queries = this.readTerms(task.terms);
    // An open-vocabulary detector looks for exactly the things named; a fixed one reports all it knows.
    const detections = await this.detector.detect(image, context, [...new Set(queries.flatMap((query) => query.labels))]);
    const segmenter = await this.embed(image, context);
    if (segmenter.embedding) return this.maskFromPrompts(image, queries, detections, segmenter.embedding, context);
    const meanColour = (box: Box) => meanColourOf(image, box);
    const chosen: Detection[] = [];
    for (const query of queries) {
      const selection = selectDetections(query, detections, { width: image.width, height: image.height, meanColour });
      if (selection.kind === "not_found") throw new EngineError("nothing_detected", selection.message);
      if (selection.kind === "ambiguous") throw new EngineError("unsupported_instruction", selection.message);
      for (const detection of selection.detections) if (!chosen.includes(detection)) chosen.push(detection);
    }
    const others = detections.filter((detection) => !chosen.includes(detection));
    const mask = new Uint8Array(image.width * image.height);
    const neighbourShapes = new Map<Detection, Promise<Shape | undefined>>();
    const neighbourShape = (detection: Detection) => {
      let shape = neighbourShapes.get(detection);
      if (!shape) {
        shape = this.findShape(image, detection.box, context).then((found) => found?.shape);
        neighbourShapes.set(detection, shape);
      }
      return shape;
    };
    const outlines: RemovalMask["outlines"] = [];
    for (const target of chosen) {
      throwIfCancelled(context.signal);
      const found = await this.findShape(image, target.box, context);
      if (!found) {
        this.assertBoxIsSafe(target, others, image);
        paintBox(mask, image.width, image.height, grow(target.box, 0.06, image.width, image.height));
        outlines.push({ detection: target, source: "box" });
        continue;
      }
      const radius = Math.max(3, Math.round(0.015 * Math.hypot(target.box.width, target.box.height)));
      const extent = extentOf(found.shape, radius);
      const claims: Claim[] = [];
      const protect = new Uint8Array(found.shape.data.length);
      for (const neighbour of others) {
        if (!mayBeSeparate(neighbour, target, extent)) continue;
        throwIfCancelled(context.signal);
        const claim = claimOf(neighbour, target, await neighbourShape(neighbour));
        const inCrop = rasterise(claim, found.candidate.pixels);
        if (isEnclosed(inCrop, found.shape)) continue;
        claims.push(claim);
        for (let i = 0; i < inCrop.length; i++) if (inCrop[i]) protect[i] = 255;
      }
      const shape = claims.length > 0 ? selectShape(found.candidate, protect) : found.shape;
      if (!shape) {
        const why = `The ${target.label} could not be told apart from the ${claims.map((claim) => claim.detection.label).join(" and ")} next to it;`;
        if (this.segmenter) throw new EngineError("model_failed", `${why} send a mask that marks it (white on black).`);
        throw new EngineError(
          "model_unavailable",
          `${why} a learned model may: install one with \`${PULL_MODEL}\`, or send a mask.`,
        );
      }
      paintShape(mask, image.width, image.height, shape, radius, claims);
      outlines.push({ detection: target, source: found.candidate.source });
    }
    this.assertHoleFits(mask, chosen);
    return {
      mask: { data: mask, width: image.width, height: image.height },
      outlines,
      ...(segmenter.failure ? { segmenterFailure: segmenter.failure } : {}),
    };
  }

  private assertHoleFits(mask: Uint8Array, chosen: Detection[]): void {
    const covered = coverage(mask);
    if (covered > this.maxTargetCoverage) {
      const what = chosen.length === 1 ? `The ${chosen[0]?.label}` : `The ${chosen.length} objects`;
      throw new EngineError(
        "target_too_large",
        `${what} to remove would leave a hole of ${Math.round(covered * 100)}% of the picture; at most ${Math.round(this.maxTargetCoverage * 100)}% can be filled believably. Send a mask if that is really meant.`,
      );
    }
  }

  /** The image encoded for the promptable segmenter; undefined (with why) when there is none or it cannot run. */
  private async embed(image: RgbaImage, context: WorkContext): Promise<{ embedding?: ImageEmbedding; failure?: string }> {
    if (!this.promptable) return {};
    try {
      return { embedding: await this.promptable.embed(image, context) };
    } catch (error) {
      if (isCancellation(error, context)) throw error;
      // The older shape finders still work without it; the outcome says the segmenter was not used.
      return { failure: error instanceof Error ? error.message : String(error) };
    }
  }

  /**
   * The hole from the promptable segmenter: the named things chosen among the
   * detections the segmenter confirms (a detection it does not confirm is
   * dropped and the choice made again, so "the person on the left" is never a
   * false person), each one's mask from its box, with the other detections
   * inside the box as points to leave out, widened by a margin scaled to it.
   */
  private async maskFromPrompts(
    image: RgbaImage,
    queries: TargetQuery[],
    detections: Detection[],
    embedding: ImageEmbedding,
    context: WorkContext,
  ): Promise<RemovalMask> {
    const meanColour = (box: Box) => meanColourOf(image, box);
    const verdicts = new Map<Detection, Confirmation>();
    const poses = new Map<Detection, Keypoint[]>();
    let candidates = detections;
    let chosen: Detection[] = [];
    for (;;) {
      chosen = [];
      for (const query of queries) {
        const selection = selectDetections(query, candidates, { width: image.width, height: image.height, meanColour });
        if (selection.kind === "not_found")
          throw new EngineError("nothing_detected", `${selection.message}${droppedSaid(verdicts)}`);
        if (selection.kind === "ambiguous") throw new EngineError("unsupported_instruction", selection.message);
        for (const detection of selection.detections) if (!chosen.includes(detection)) chosen.push(detection);
      }
      const unconfirmed: Detection[] = [];
      // The keypoints (the vision thread) are asked now and wanted only for each target's last prompt: the box
      // prompts before it run on the inference thread meanwhile.
      const posing = this.poseOf(image, chosen, poses, context);
      posing.catch(() => {});
      const bodyOf = (target: Detection) => posing.then(() => poses.get(target) ?? []);
      for (const target of chosen) {
        throwIfCancelled(context.signal);
        let verdict = verdicts.get(target);
        if (!verdict) {
          const segmenter = this.promptable as PromptableSegmenter;
          verdict = await confirmDetection(target, detections, () => bodyOf(target), embedding, segmenter, context);
          verdicts.set(target, verdict);
        }
        if (!verdict.confirmed) unconfirmed.push(target);
      }
      await posing;
      if (unconfirmed.length === 0) break;
      candidates = candidates.filter((detection) => !unconfirmed.includes(detection));
    }
    // The choice is made: no more keypoints, so a thread kept open for them ends before the masks are drawn.
    this.pose?.release?.(image);
    const mask = new Uint8Array(image.width * image.height);
    const objects = new Uint8Array(image.width * image.height);
    const outlines: RemovalMask["outlines"] = [];
    for (const target of chosen) {
      const verdict = verdicts.get(target);
      if (!verdict?.confirmed) continue;
      throwIfCancelled(context.signal);
      const on = await atImageSize(verdict.mask, image);
      // The margin grows with the object: its soft edge, its anti-aliasing, a shadow's rim; never into a neighbour.
      const radius = Math.max(3, Math.round(MARGIN_PER_DIAGONAL * Math.hypot(target.box.width, target.box.height)));
      const widened = dilate(on, image.width, image.height, radius);
      const kept = new Uint8Array(on.length);
      for (const neighbour of verdict.keep) {
        const own = await atImageSize(neighbour, image);
        for (let i = 0; i < kept.length; i++) if (own[i]) kept[i] = 255;
      }
      for (let i = 0; i < mask.length; i++) {
        if (widened[i] && !kept[i]) mask[i] = 255;
        if (on[i]) objects[i] = 255;
      }
      outlines.push({ detection: target, source: "segmenter" });
    }
    this.assertHoleFits(mask, chosen);
    const dropped: { detection: Detection; why: string }[] = [];
    for (const [detection, verdict] of verdicts) if (!verdict.confirmed) dropped.push({ detection, why: verdict.why });
    // The removal goes ahead without them: the job's log says what was left out and why.
    for (const line of droppedLines(verdicts)) context.recordNote?.(`Object removal: ${line}.`);
    return {
      mask: { data: mask, width: image.width, height: image.height },
      objects: { data: objects, width: image.width, height: image.height },
      outlines,
      dropped,
    };
  }

  /**
   * The body keypoints of each person among `targets` not looked at yet. A pose model that fails
   * costs the keypoints only: the box prompts still work.
   */
  private async poseOf(
    image: RgbaImage,
    targets: Detection[],
    poses: Map<Detection, Keypoint[]>,
    context: WorkContext,
  ): Promise<void> {
    if (!this.pose) return;
    const people = targets.filter((target) => target.label === "person" && !poses.has(target));
    if (people.length === 0) return;
    try {
      const found = await this.pose.keypoints(
        image,
        people.map((person) => person.box),
        context,
      );
      for (const [n, person] of people.entries()) poses.set(person, found[n] ?? []);
    } catch (error) {
      if (isCancellation(error, context)) throw error;
      for (const person of people) poses.set(person, []);
      const why = error instanceof Error ? error.message : String(error);
      context.recordNote?.(
        `Object removal: no body keypoints (${why}); ${people.length === 1 ? "the person was" : "the people were"} outlined from the box alone.`,
      );
    }
  }

  private readTerms(terms: string[]): TargetQuery[] {
    return readRemovalTerms(terms, this.detector.labels, { openVocabulary: this.detector.openVocabulary === true });
  }

  /** The learned model's shape when there is one and it finds one, else the colour shape, else undefined. */
  private async findShape(image: RgbaImage, box: Box, context: WorkContext): Promise<ShapeWithCandidate | undefined> {
    if (this.segmenter) {
      const segmented = await segmentedShape(image, box, this.segmenter, context);
      if (segmented) return segmented;
    }
    const candidate = await colourCandidate(image, box);
    const shape = candidate && selectShape(candidate);
    return candidate && shape ? { candidate, shape } : undefined;
  }

  /**
   * With no shape, the whole (slightly widened) box is the hole: acceptable
   * only when nothing else the detector saw stands in it, at any score, since
   * the box would erase it.
   */
  private assertBoxIsSafe(target: Detection, others: Detection[], image: RgbaImage): void {
    const widened = grow(target.box, 0.06, image.width, image.height);
    const inTheWay = others.find((other) => !isDuplicate(other.box, target.box) && overlapsArea(other.box, widened));
    if (!inTheWay) return;
    const why = `The ${target.label}'s outline could not be told from its surroundings, and its box also covers a ${inTheWay.label}: removing the box would erase that too.`;
    if (this.segmenter)
      throw new EngineError("model_failed", `${why} Send a mask that marks the ${target.label} (white on black).`);
    throw new EngineError(
      "model_unavailable",
      `${why} Finding its outline needs a learned model: install one with \`${PULL_MODEL}\`, or send a mask.`,
    );
  }
}

/** The hole built from detections, and how each target's outline was found. */
export interface RemovalMask {
  mask: GreyImage;
  outlines: { detection: Detection; source: "segmenter" | "model" | "colour" | "box" }[];
  /** The segmenter's masks of the targets before the margin (the promptable segmenter's path only). */
  objects?: GreyImage;
  /** Detections the promptable segmenter did not confirm, and why: they were not removed. */
  dropped?: { detection: Detection; why: string }[];
  /** Why the promptable segmenter was not used though configured (the older shape finders were). */
  segmenterFailure?: string;
}

/**
 * What the promptable segmenter's answer must look like for a detection to
 * count as a real object, calibrated on the photographs in test/fixtures
 * (docs/engine.md#promptable-segmenter has the figures).
 */
export const CONFIRMATION = {
  /** The decoder's own predicted IoU. */
  minPredictedIou: 0.8,
  /** The mask's area over its box's: a box around nothing gets a sliver (a tongue in a "person" box). */
  minBoxFill: 0.35,
  /** The mask's share inside its box: a mask that spills far out is another, larger thing. */
  minInsideBox: 0.7,
  /**
   * A person with at least this many body keypoints of KEYPOINT_SCORE or more inside the box is
   * confirmed by the pose model, whatever the mask's fill of the box: a footballer's outstretched
   * arms and legs leave three quarters of his box empty.
   */
  minBodyParts: 10,
} as const;

/** A body keypoint this confident becomes a point the person's mask must include. */
export const KEYPOINT_SCORE = 0.3;

/** The hole's margin around the segmenter's mask, as a fraction of the object's box diagonal. */
const MARGIN_PER_DIAGONAL = 0.015;

/** A confirmed target's mask, and the masks of the neighbours it must leave (all at the encoder's scale). */
type Confirmation =
  | { confirmed: true; mask: GreyImage; keep: GreyImage[] }
  /** `byDetector`: the detector's own vote dropped it, not the segmenter's answer. */
  | { confirmed: false; why: string; byDetector?: boolean };

/**
 * Whether the segmenter confirms a detection, and its mask. A detection is
 * not confirmed when the same box was given another label with a higher
 * score (the detector's own vote: a cat's face taken for a "person" at 0.24
 * beside "dog" at 0.47), or when the mask prompted by its box is unlike an
 * object framed by that box (see CONFIRMATION). Each confident detection
 * reaching into the box is segmented from its own box too: one the target's
 * mask surrounds (a tie on a shirt) goes with it; any other is a neighbour
 * the hole must leave (a ball against a player's legs), and its centre, when
 * inside the target's box, is a point the target's prompt leaves out.
 */
async function confirmDetection(
  target: Detection,
  detections: Detection[],
  bodyOf: () => Promise<Keypoint[]>,
  embedding: ImageEmbedding,
  segmenter: PromptableSegmenter,
  context: WorkContext,
): Promise<Confirmation> {
  const rival = detections.find(
    (other) => other.label !== target.label && other.score > target.score && isDuplicate(other.box, target.box),
  );
  if (rival) return { confirmed: false, why: `the same box is more likely a ${rival.label}`, byDetector: true };
  const { box } = target;
  const targetArea = box.width * box.height;
  const first = await segmenter.segment(embedding, box, [], context);
  const leaveOut: PromptPoint[] = [];
  const keep: GreyImage[] = [];
  for (const other of detections) {
    if (other === target || other.score < CONFIDENT_NEIGHBOUR || isDuplicate(other.box, target.box)) continue;
    // What holds the target (the bench under a person) is not a neighbour to leave out.
    if (intersectionArea(other.box, box) >= 0.9 * targetArea || intersectionArea(other.box, box) === 0) continue;
    throwIfCancelled(context.signal);
    let own = await segmenter.segment(embedding, other.box, [], context);
    // A neighbour whose box holds much of the target (a boat in front overlapping the one behind) may take the
    // target into its own mask, and keeping that out would keep the target: its mask is asked again, leaving
    // out the target's centre. Not when that centre is in the middle of the neighbour's box (it is likely on it).
    const centre = { x: box.x + box.width / 2, y: box.y + box.height / 2 };
    if (
      isOn(own.mask, centre, embedding.scale) &&
      isOn(first.mask, centre, embedding.scale) &&
      !inMiddleHalf(other.box, centre)
    ) {
      const apart = await segmenter.segment(embedding, other.box, [{ ...centre, include: false }], context);
      if (apart.predictedIou >= CONFIRMATION.minPredictedIou) own = apart;
    }
    // Not clearly an object of its own, or one the target surrounds (a tie on a shirt): it goes with the target.
    if (own.predictedIou < CONFIRMATION.minPredictedIou || isEnclosed(own.mask.data, { ...first.mask })) continue;
    keep.push(own.mask);
    const x = other.box.x + other.box.width / 2;
    const y = other.box.y + other.box.height / 2;
    if (x > box.x && x < box.x + box.width && y > box.y && y < box.y + box.height) leaveOut.push({ x, y, include: false });
  }
  // The person's confident keypoints inside the box, unless a neighbour kept out owns the spot (a foot on the ball).
  const body = await bodyOf();
  const inBoxParts = body.filter(
    (part) =>
      part.score >= KEYPOINT_SCORE &&
      part.x > box.x &&
      part.x < box.x + box.width &&
      part.y > box.y &&
      part.y < box.y + box.height,
  );
  const include: PromptPoint[] = inBoxParts
    .filter((part) => INCLUDED_PARTS.has(part.part) && !keep.some((own) => isOn(own, part, embedding.scale)))
    .map((part) => ({ x: part.x, y: part.y, include: true }));
  const points = [...include, ...leaveOut];
  const answer = points.length > 0 ? await segmenter.segment(embedding, box, points, context) : first;
  const { mask, scale } = answer;
  const inBox = { x0: box.x * scale, y0: box.y * scale, x1: (box.x + box.width) * scale, y1: (box.y + box.height) * scale };
  let area = 0;
  let inside = 0;
  for (let y = 0; y < mask.height; y++) {
    for (let x = 0; x < mask.width; x++) {
      if (!mask.data[y * mask.width + x]) continue;
      area++;
      if (x + 0.5 >= inBox.x0 && x + 0.5 < inBox.x1 && y + 0.5 >= inBox.y0 && y + 0.5 < inBox.y1) inside++;
    }
  }
  const fill = area / Math.max(1, targetArea * scale * scale);
  const share = area === 0 ? 0 : inside / area;
  if (answer.predictedIou < CONFIRMATION.minPredictedIou)
    return { confirmed: false, why: `the segmenter's predicted IoU is ${answer.predictedIou.toFixed(2)}` };
  const posed = inBoxParts.length >= CONFIRMATION.minBodyParts;
  if (fill < CONFIRMATION.minBoxFill && !posed)
    return { confirmed: false, why: `its mask fills ${Math.round(fill * 100)}% of the box` };
  if (share < CONFIRMATION.minInsideBox)
    return { confirmed: false, why: `${Math.round(share * 100)}% of its mask lies inside the box` };
  return { confirmed: true, mask, keep };
}

/** Which body keypoints become include points (see KEYPOINT_SCORE); docs/engine.md has the figures they were chosen on. */
const INCLUDED_PARTS: ReadonlySet<Keypoint["part"]> = new Set([
  "left_elbow",
  "right_elbow",
  "left_wrist",
  "right_wrist",
  "left_knee",
  "right_knee",
  "left_ankle",
  "right_ankle",
]);

/** Whether a point lies in the middle half of a box (each way). */
function inMiddleHalf(box: Box, point: { x: number; y: number }): boolean {
  return (
    Math.abs(point.x - (box.x + box.width / 2)) < box.width / 4 && Math.abs(point.y - (box.y + box.height / 2)) < box.height / 4
  );
}

/** Whether an image point lies on a mask at the encoder's scale. */
function isOn(mask: GreyImage, point: { x: number; y: number }, scale: number): boolean {
  const x = Math.floor(point.x * scale);
  const y = Math.floor(point.y * scale);
  return x >= 0 && y >= 0 && x < mask.width && y < mask.height && mask.data[y * mask.width + x] === 255;
}

/**
 * What the segmenter dropped, for a `nothing_detected` message: " A person-shaped detection was not
 * confirmed by the segmenter (its mask fills 30% of the box)." Empty when nothing was dropped.
 */
function droppedSaid(verdicts: Map<Detection, Confirmation>): string {
  const said = droppedLines(verdicts);
  if (said.length === 0) return "";
  const text = said.join("; ");
  return ` ${text.charAt(0).toUpperCase()}${text.slice(1)}.`;
}

/** Each dropped detection and why, once: "a person-shaped detection was not confirmed by the segmenter (…)". */
function droppedLines(verdicts: Map<Detection, Confirmation>): string[] {
  const said: string[] = [];
  for (const [detection, verdict] of verdicts) {
    if (verdict.confirmed) continue;
    const line = `a ${detection.label}-shaped detection was not ${verdict.byDetector ? "taken" : "confirmed by the segmenter"} (${verdict.why})`;
    if (!said.includes(line)) said.push(line);
  }
  return said;
}

/** A mask at the encoder's scale brought to the image's size, 255 where it is on. */
async function atImageSize(mask: GreyImage, image: RgbaImage): Promise<Uint8Array> {
  const full = await resizeGrey(mask, image.width, image.height);
  const on = new Uint8Array(full.data.length);
  for (let i = 0; i < on.length; i++) if ((full.data[i] ?? 0) >= 128) on[i] = 255;
  return on;
}

/** A cancelled edit's error, which no fallback may swallow. */
function isCancellation(error: unknown, context: WorkContext): boolean {
  return context.signal?.aborted === true || (error instanceof EngineError && error.reason === "cancelled");
}

interface ShapeWithCandidate {
  candidate: ShapeCandidate;
  shape: Shape;
}

/** "Dilate a little": a few pixels, scaled with the image, to take in the edge and its anti-aliasing. */
export function widenUserMask(mask: GreyImage): GreyImage {
  const radius = Math.max(2, Math.round(0.0025 * Math.hypot(mask.width, mask.height)));
  return { data: dilate(mask.data, mask.width, mask.height, radius), width: mask.width, height: mask.height };
}

/** The detector reporting one object twice under two labels (a cat as "cat" and "dog"). */
function isDuplicate(a: Box, b: Box): boolean {
  const intersection = intersectionArea(a, b);
  return intersection / (a.width * a.height + b.width * b.height - intersection) >= 0.6;
}

function intersectionArea(a: Box, b: Box): number {
  const width = Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x);
  const height = Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y);
  return width > 0 && height > 0 ? width * height : 0;
}

/** Whether a box overlaps an area by more than a sliver (5% of the smaller of the two). */
function overlapsArea(box: Box, area: Area): boolean {
  const other = { x: area.x0, y: area.y0, width: area.x1 - area.x0, height: area.y1 - area.y0 };
  return intersectionArea(box, other) > 0.05 * Math.min(box.width * box.height, other.width * other.height);
}

/** Below this score the detector's guesses on real photos are mostly wrong (a held helmet as a "traffic light"). */
const CONFIDENT_NEIGHBOUR = 0.3;

/**
 * Whether another detection may be a separate object whose pixels the
 * target's shape must give up: a confident detection, not the target itself
 * under another label, not something the target stands on or is held by
 * (its box holds the target's box), reaching into the target's shape.
 */
function mayBeSeparate(neighbour: Detection, target: Detection, extent: Box): boolean {
  if (neighbour.score < CONFIDENT_NEIGHBOUR || isDuplicate(neighbour.box, target.box)) return false;
  const targetArea = target.box.width * target.box.height;
  if (intersectionArea(neighbour.box, target.box) >= 0.9 * targetArea) return false;
  return intersectionArea(neighbour.box, extent) > 0;
}

/** The bounding box, in image pixels, of a shape widened by `radius`: only neighbours reaching into it cost a look. */
function extentOf(shape: Shape, radius: number): Box {
  let x0 = shape.width;
  let y0 = shape.height;
  let x1 = -1;
  let y1 = -1;
  for (let y = 0; y < shape.height; y++) {
    for (let x = 0; x < shape.width; x++) {
      if (!shape.data[y * shape.width + x]) continue;
      x0 = Math.min(x0, x);
      y0 = Math.min(y0, y);
      x1 = Math.max(x1, x);
      y1 = Math.max(y1, y);
    }
  }
  if (x1 < 0) return { x: 0, y: 0, width: 0, height: 0 };
  const left = shape.area.x0 + x0 / shape.scale - radius;
  const top = shape.area.y0 + y0 / shape.scale - radius;
  return {
    x: left,
    y: top,
    width: shape.area.x0 + (x1 + 1) / shape.scale + radius - left,
    height: shape.area.y0 + (y1 + 1) / shape.scale + radius - top,
  };
}

/** The pixels a neighbouring object keeps. */
interface Claim {
  detection: Detection;
  /** Image pixel (x, y) belongs to the neighbour. */
  has: (x: number, y: number) => boolean;
  area: Area;
}

/**
 * What a neighbour keeps: its own shape (or, when none was found, the ellipse
 * its box frames) within its box. Where both shapes take a pixel, a small
 * neighbour's own shape wins (a ball at a person's side: its crop is about
 * the ball, while the person's crop sees the ball as part of the figure); of
 * two objects of about the same size (two people), the one whose box centre is
 * nearer, measured in box sizes, wins.
 */
function claimOf(neighbour: Detection, target: Detection, shape: Shape | undefined): Claim {
  const { box } = neighbour;
  const slack = 0.05;
  const area: Area = {
    x0: Math.floor(box.x - box.width * slack),
    y0: Math.floor(box.y - box.height * slack),
    x1: Math.ceil(box.x + box.width * (1 + slack)),
    y1: Math.ceil(box.y + box.height * (1 + slack)),
  };
  const small = neighbour.box.width * neighbour.box.height < 0.5 * target.box.width * target.box.height;
  const has = (x: number, y: number) => {
    if (x < area.x0 || y < area.y0 || x >= area.x1 || y >= area.y1) return false;
    const own = shape ? maskAt(shape, x, y) : boxDistance(box, x, y) <= 1;
    return own && (small || boxDistance(box, x, y) <= boxDistance(target.box, x, y));
  };
  return { detection: neighbour, has, area };
}

/** Distance from a box's centre in half-sizes of the box: 1 on the ellipse the box frames. */
function boxDistance(box: Box, x: number, y: number): number {
  return Math.hypot((x + 0.5 - box.x - box.width / 2) / (box.width / 2), (y + 0.5 - box.y - box.height / 2) / (box.height / 2));
}

/** A claim in the pixels of a local mask (255 where the neighbour keeps the pixel). */
function rasterise(claim: Claim, grid: LocalMask): Uint8Array {
  const out = new Uint8Array(grid.width * grid.height);
  for (let my = 0; my < grid.height; my++) {
    const y = Math.floor(grid.area.y0 + (my + 0.5) / grid.scale);
    if (y < claim.area.y0 || y >= claim.area.y1) continue;
    for (let mx = 0; mx < grid.width; mx++) {
      const x = Math.floor(grid.area.x0 + (mx + 0.5) / grid.scale);
      if (claim.has(x, y)) out[my * grid.width + mx] = 255;
    }
  }
  return out;
}

/**
 * A neighbour surrounded by the target's shape (a tie on a shirt, a badge, a
 * bag held against the body) is part of what is removed: most of the ring
 * just outside it lies in the target's shape. A ball beside a person touches
 * the figure along a small part of its edge only.
 */
function isEnclosed(claim: Uint8Array, shape: Pick<Shape, "width" | "height" | "data">): boolean {
  const { width, height } = shape;
  const ring = dilate(claim, width, height, 2);
  let around = 0;
  let inShape = 0;
  for (let i = 0; i < ring.length; i++) {
    if (!ring[i] || claim[i]) continue;
    around++;
    if (shape.data[i]) inShape++;
  }
  return around > 0 && inShape >= 0.6 * around;
}

function paintBox(mask: Uint8Array, width: number, _height: number, area: Area): void {
  for (let y = area.y0; y < area.y1; y++) mask.fill(255, y * width + area.x0, y * width + area.x1);
}

/** Adds a shape, at full resolution and widened by `radius`, to the hole, leaving out what the neighbours keep. */
function paintShape(mask: Uint8Array, width: number, height: number, shape: Shape, radius: number, claims: Claim[]): void {
  const x0 = Math.max(0, shape.area.x0 - radius);
  const y0 = Math.max(0, shape.area.y0 - radius);
  const x1 = Math.min(width, shape.area.x1 + radius);
  const y1 = Math.min(height, shape.area.y1 + radius);
  const localWidth = x1 - x0;
  const localHeight = y1 - y0;
  const local = new Uint8Array(localWidth * localHeight);
  for (let y = y0; y < y1; y++)
    for (let x = x0; x < x1; x++) if (maskAt(shape, x, y)) local[(y - y0) * localWidth + (x - x0)] = 255;
  const widened = dilate(local, localWidth, localHeight, radius);
  for (let y = y0; y < y1; y++) {
    for (let x = x0; x < x1; x++) {
      if (!widened[(y - y0) * localWidth + (x - x0)]) continue;
      if (claims.some((claim) => claim.has(x, y))) continue;
      mask[y * width + x] = 255;
    }
  }
}

function meanColourOf(image: RgbaImage, box: Box): Rgb {
  // The middle half of the box: mostly the object, little background.
  const x0 = Math.floor(box.x + box.width / 4);
  const y0 = Math.floor(box.y + box.height / 4);
  const x1 = Math.ceil(box.x + (3 * box.width) / 4);
  const y1 = Math.ceil(box.y + (3 * box.height) / 4);
  const sum = [0, 0, 0];
  let count = 0;
  for (let y = Math.max(0, y0); y < Math.min(image.height, y1); y++) {
    for (let x = Math.max(0, x0); x < Math.min(image.width, x1); x++) {
      for (let c = 0; c < 3; c++) sum[c] = (sum[c] ?? 0) + (image.data[(y * image.width + x) * 4 + c] ?? 0);
      count++;
    }
  }
  return count === 0 ? [0, 0, 0] : [(sum[0] ?? 0) / count, (sum[1] ?? 0) / count, (sum[2] ?? 0) / count];
}

/**
 * Reads the removal terms into detector queries, or throws the EngineError
 * that says why one cannot be found automatically. Pure: the submission
 * check (edit-plan.ts) runs it too, before anything is charged.
 */
export function readRemovalTerms(
  terms: string[],
  labels: readonly string[],
  options: { openVocabulary?: boolean } = {},
): TargetQuery[] {
  if (terms.length === 0) {
    throw new EngineError("target_not_detectable", 'Say what to remove (for example "remove the person") or send a mask.');
  }
  const queries: TargetQuery[] = [];
  for (const term of terms) {
    const reading = readTerm(term);
    if (reading.kind === "target") {
      queries.push(reading.query);
      continue;
    }
    if (options.openVocabulary && (reading.kind === "needs_mask" || reading.kind === "unknown")) {
      // An open-vocabulary detector is asked for the words themselves ("trash can", "power line").
      const query = openVocabularyQuery(term);
      if (query) {
        queries.push(query);
        continue;
      }
    }
    if (reading.kind === "needs_mask") {
      throw new EngineError(
        "target_not_detectable",
        `"${term}" cannot be found automatically; send a mask that marks it (white on black).`,
      );
    }
    if (reading.kind === "unknown") {
      throw new EngineError(
        "target_not_detectable",
        `"${term}" is not something the detector knows; send a mask, or name one of: ${labels.join(", ")}.`,
      );
    }
    // Removing another instance than the one meant is worse than removing nothing: say what was not understood.
    throw new EngineError(
      "unsupported_instruction",
      `In "${term}", ${reading.reason}. Say which one by place ("on the left", "top right", "second from the left"), size ("the largest", "in the background"), colour ("the red car"), or send a mask.`,
    );
  }
  return queries;
}
