import { boxBlur, labelComponents } from "../pixels/mask-ops";

/**
 * What the segmenter measured on its way to the mask, for judging the result.
 * background-removal.classical.ts makes it; the type lives here, with its one
 * reader, so that the segmenter imports the check and the check nothing of it.
 */
export interface ForegroundAnalysis {
  /** 255 = foreground, 0 = background. */
  mask: Uint8Array;
  /** The image in CIELAB, 3 floats per pixel. */
  lab: Float32Array;
  /** The background model fitted to the border. */
  background: BackgroundModel;
  /** Width in pixels of the border band the model was fitted to. */
  borderBand: number;
  /** Delta E from the model below which a pixel may be background, and beyond which it is surely not. */
  near: number;
  far: number;
}

/** The background fitted to the picture's border (background-removal.classical.ts fits it). */
export interface BackgroundModel {
  /** Per pixel, delta E between a Lab image of the fitted size and the prediction. */
  distances(lab: Float32Array): Float32Array;
  /** Robust spread (delta E) of the border around the model. */
  noise: number;
  /** Width of the border band it was fitted to. */
  borderBand: number;
}

/**
 * Whether a classical cut-out can be trusted, judged from the segmenter's own
 * measurements. The segmenter models the background from the image border:
 * right for a product-style picture (an object on a plain or smoothly lit
 * backdrop), quietly wrong on most other photographs; on a cat's face filling
 * the frame it keeps the eyes and the nose, which still looks like an answer.
 * These measures tell the two apart. Every bound was set on the real
 * photographs in test/engine/fixtures (docs/engine.md has the table): each
 * photo whose classical cut-out is poor breaks at least one, most of them two
 * or more, and the product-style ones keep a margin.
 */
export interface PlausibilityMeasures {
  /**
   * Share of the picture where the colour model agrees with the cut-out:
   * background within `near` of the background model, subject beyond `far`.
   * The rest was left to the watershed's edges, which is where guesses live.
   */
  agreement: number;
  /** Share of the kept subject that is clearly unlike the background (beyond `far`). */
  subjectContrast: number;
  /** Share of the border band called background that the background model explains (within `near`). */
  borderCoherence: number;
  /** Share of the kept subject in its largest connected piece. */
  dominance: number;
  /** Share of the picture kept. */
  coverage: number;
  /** Share of the picture's outermost pixels that the subject covers. */
  borderContact: number;
}

export interface PlausibilityBound {
  measure: keyof PlausibilityMeasures;
  min?: number;
  max?: number;
  /** What breaking it says about the picture, for the refusal's message. */
  meaning: string;
}

export const PLAUSIBILITY_BOUNDS: readonly PlausibilityBound[] = [
  // Product shots 0.85 to 1 (the apple 0.854), the poor cut-outs at most 0.78 (Grace Hopper).
  { measure: "agreement", min: 0.8, meaning: "the colours do not separate a subject from the background" },
  // Product shots 0.84 to 1; the landscapes' "subjects" 0.39 and 0.51.
  { measure: "subjectContrast", min: 0.7, meaning: "much of what would be kept looks like the background" },
  // Product shots 0.92 to 1; the poor cut-outs 0.49 to 0.84, but for the boats (0.94).
  { measure: "borderCoherence", min: 0.85, meaning: "the border is not one plain or smoothly lit background" },
  // One object, or a few with one larger (two products side by side: 0.55); the cat's eyes and nose: 0.46.
  { measure: "dominance", min: 0.5, meaning: "what would be kept is scattered pieces, not one subject" },
  { measure: "coverage", min: 0.005, max: 0.85, meaning: "what would be kept is almost nothing or almost everything" },
  { measure: "borderContact", max: 0.5, meaning: "the subject runs along most of the picture's edge" },
];

export interface PlausibilityVerdict {
  plausible: boolean;
  measures: PlausibilityMeasures;
  /** The bounds the measures break; empty when plausible. */
  broken: PlausibilityBound[];
}

const SUBJECT = 255;
/**
 * The colour model is consulted on a lightly smoothed image (5x5 mean at the
 * working resolution): sensor noise, JPEG grain or a finely textured backdrop
 * average out, structure larger than a few pixels (leaves, fur, a flag) stays.
 */
const SMOOTHING_RADIUS = 2;

export function measurePlausibility(analysis: ForegroundAnalysis, width: number, height: number): PlausibilityMeasures {
  const { mask, near, far, borderBand } = analysis;
  const pixels = width * height;
  const distance = analysis.background.distances(boxBlur(analysis.lab, width, height, SMOOTHING_RADIUS, 3));
  let subject = 0;
  let subjectFar = 0;
  let agreeing = 0;
  let bandBackground = 0;
  let bandExplained = 0;
  let edge = 0;
  let edgeSubject = 0;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = y * width + x;
      const kept = mask[i] === SUBJECT;
      const d = distance[i] ?? 0;
      if (kept) {
        subject++;
        if (d > far) {
          subjectFar++;
          agreeing++;
        }
      } else if (d < near) {
        agreeing++;
      }
      if (x === 0 || y === 0 || x === width - 1 || y === height - 1) {
        edge++;
        if (kept) edgeSubject++;
      }
      if (!kept && (x < borderBand || y < borderBand || x >= width - borderBand || y >= height - borderBand)) {
        bandBackground++;
        if (d < near) bandExplained++;
      }
    }
  }
  const pieces = labelComponents(width, height, (i) => mask[i] === SUBJECT);
  let largest = 0;
  for (let label = 1; label < pieces.sizes.length; label++) largest = Math.max(largest, pieces.sizes[label] ?? 0);
  return {
    agreement: agreeing / pixels,
    subjectContrast: subject ? subjectFar / subject : 0,
    borderCoherence: bandBackground ? bandExplained / bandBackground : 0,
    dominance: subject ? largest / subject : 0,
    coverage: subject / pixels,
    borderContact: edge ? edgeSubject / edge : 0,
  };
}

export function judgePlausibility(analysis: ForegroundAnalysis, width: number, height: number): PlausibilityVerdict {
  const measures = measurePlausibility(analysis, width, height);
  const broken = PLAUSIBILITY_BOUNDS.filter(({ measure, min, max }) => {
    const value = measures[measure];
    return (min !== undefined && value < min) || (max !== undefined && value > max);
  });
  return { plausible: broken.length === 0, measures, broken };
}
