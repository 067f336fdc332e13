import { EngineError } from "../engine-error";
import { findColour, normalizePrompt, type Rgb, splitClauses } from "./prompt-text";

/**
 * The instructions the built-in generative editor understands. No generative
 * model runs here, so a prompt is read as an ordered list of deterministic
 * edits ("make it brighter and add a white border" = two steps, in that
 * order). A clause that is none of these fails the whole edit: the engine
 * never returns the picture untouched as if it had done what was asked.
 */
export type EditStep =
  | { op: "greyscale" }
  | { op: "sepia"; strength: number }
  | { op: "invert" }
  | { op: "brightness"; factor: number }
  | { op: "contrast"; factor: number }
  | { op: "saturation"; factor: number }
  /** Positive = warmer (more red, less blue), negative = cooler. */
  | { op: "temperature"; amount: number }
  | { op: "hue"; degrees: number }
  | { op: "blur"; sigma: number }
  | { op: "sharpen"; sigma: number }
  /** Clockwise. */
  | { op: "rotate"; degrees: number }
  | { op: "flip"; axis: "horizontal" | "vertical" }
  | { op: "crop_aspect"; ratio: number }
  | { op: "crop_pixels"; width: number; height: number }
  /** Fraction of each side cut away. */
  | { op: "crop_inset"; fraction: number }
  | { op: "resize"; width?: number; height?: number; scale?: number; longSide?: number }
  /** `size` in pixels when `unit` is "px", else a fraction of the short side. */
  | { op: "border"; size: number; unit: "px" | "fraction"; colour: Rgb }
  | { op: "flatten"; colour: Rgb }
  | { op: "cutout" }
  | { op: "blur_background"; strength: number }
  | { op: "normalize" }
  | { op: "denoise" }
  | { op: "trim" }
  | { op: "pixelate"; blocks: number }
  | { op: "vignette"; strength: number }
  /**
   * Every face the face detector finds made unrecognisable, the rest of the
   * picture untouched; `one`: the prompt named a single face ("blur her
   * face"), which is refused when the picture has several.
   */
  | { op: "blur_faces"; style: "blur" | "pixelate"; strength: number; one: boolean }
  /** A soft shadow of the picture's opaque shape, down and to the right; the canvas grows to hold it. */
  | { op: "drop_shadow"; distance: number; softness: number; opacity: number; colour: Rgb }
  /** A stroke around the picture's opaque shape (a sticker's outline); `size` as for `border`. */
  | { op: "outline"; size: number; unit: "px" | "fraction"; colour: Rgb };

/** How much: 0.5 for "slightly", 1 by default, 2 for "a lot"; `percent` when a number is given. */
interface Amount {
  level: number;
  percent: number | undefined;
  number: number | undefined;
}

const SMALL =
  /\b(?:slight(?:ly)?|a (?:little|bit|touch|tad)(?: bit)?|somewhat|subtl[ey]|mild(?:ly)?|gentl[ey]|lightly|a little more|marginally)\b/;
const LARGE =
  /\b(?:a lot|lots|much|very|really|significantly|considerably|strong(?:ly)?|heav(?:y|ily)|extreme(?:ly)?|super|dramatic(?:ally)?|way|hugely|intense(?:ly)?|far|massive(?:ly)?|thick)\b/;

function readAmount(clause: string): Amount {
  const percent = /([+-]?\d+(?:\.\d+)?)\s*(?:%|percent|per cent)/.exec(clause);
  const number = /([+-]?\d+(?:\.\d+)?)/.exec(clause);
  return {
    level: SMALL.test(clause) ? 0.5 : LARGE.test(clause) ? 2 : 1,
    percent: percent ? Number(percent[1]) : undefined,
    number: number ? Number(number[1]) : undefined,
  };
}

const LESS = /\b(?:less|lower|reduce|decrease|drop|tone down|turn down|diminish|fewer|minus|weaken|soften|cut)\b|(?:^|\s)-\d/;

/** A multiplier around 1 from an amount: `step` is the default change, doubled or halved by words, replaced by a percentage. */
function factor(amount: Amount, step: number, direction: 1 | -1): number {
  const change = amount.percent !== undefined ? Math.abs(amount.percent) / 100 : step * amount.level;
  return direction === 1 ? 1 + change : Math.max(0.02, 1 - change);
}

/** What a clause is read against besides its words. */
export interface ReadingContext {
  /** A mask came with the request: it says which part of the picture an edit is for. */
  hasMask?: boolean;
}

type Builder = (clause: string, amount: Amount, context: ReadingContext) => EditStep;

interface CatalogEntry {
  /** For the docs and the error message. */
  name: string;
  examples: string[];
  pattern: RegExp;
  build: Builder;
}

const BACKGROUND = "(?:background|backdrop|bg)";

function parseRatio(clause: string): number | undefined {
  const ratio = /(\d+(?:\.\d+)?)\s*(?::|x|×|by|\/|to)\s*(\d+(?:\.\d+)?)/.exec(clause);
  if (!ratio) return undefined;
  const a = Number(ratio[1]);
  const b = Number(ratio[2]);
  return a > 0 && b > 0 ? a / b : undefined;
}

function parseDimensions(clause: string): { width: number; height: number } | undefined {
  const match = /(\d{2,5})\s*(?:x|×|by|\*)\s*(\d{2,5})/.exec(clause);
  return match ? { width: Number(match[1]), height: Number(match[2]) } : undefined;
}

function rotationDegrees(clause: string, amount: Amount): number {
  const degrees = /(-?\d+(?:\.\d+)?)\s*(?:°|degrees?|deg)?/.exec(clause);
  const counter = /\b(?:counter-?clockwise|anti-?clockwise|ccw|to the left|left)\b/.test(clause);
  if (/\b(?:upside down|180)\b/.test(clause) && !degrees) return 180;
  const value = degrees ? Number(degrees[1]) : amount.level < 1 ? 5 : 90;
  return counter ? -value : value;
}

const FACE_VERB =
  "(?:blur\\w*|pixel\\w*|anonymi[sz]\\w*|hid(?:e|ing)|obscur\\w*|censor\\w*|mask|cover|redact\\w*|mosaic|fuzz|smudge|scrambl\\w*|disguis\\w*)";
const PEOPLE = "(?:people|persons|everyone|everybody|crowd|bystanders|passers-?by|pedestrians|faces?)";
// Words that would pick some faces and not others: the built-in face blur takes every face it finds.
const FACE_SELECTION =
  /\b(?:left|right|top|bottom|middle|cent(?:er|re)|background|foreground|front|back|except|but|not|only|small(?:est)?|large(?:st)?|big(?:gest)?|first|second|third|last|man|woman|men|women|boys?|girls?|child(?:ren)?|kids?|bab(?:y|ies)|adults?|old(?:er)?|young(?:er)?|other)\b/;

function facesStep(clause: string, amount: Amount): EditStep {
  // "blur the faces in the background", "blur the man's face": a choice the detector cannot make.
  // "... but keep the rest sharp" is a constraint the face blur keeps anyway.
  const asked = clause.replace(/\s+(?:but|while|and)\s+(?:keep|leave|leaving|keeping|don'?t|do not|make sure)\b.*$/, "");
  if (FACE_SELECTION.test(asked)) {
    throw unsupported(
      clause,
      'the built-in face blur blurs every face it finds and cannot choose some of them; say "blur the faces" for all of them, or send a mask over the faces to blur with the prompt "blur"',
    );
  }
  const one =
    !/\bfaces\b|\b(?:all|every|each|everyone|everybody)\b/.test(clause) &&
    /\b(?:his|her|my|your|its|their|the|this|that|a|one)\s+face\b/.test(clause);
  return {
    op: "blur_faces",
    style: /\b(?:pixel\w*|mosaic)\b/.test(clause) ? "pixelate" : "blur",
    strength: Math.max(1, amount.level),
    one,
  };
}

// "blur it", "blur the image": the whole picture. Any other object of "blur" is a part of it, which takes a mask.
const WHOLE_PICTURE =
  /^(?:(?:the|this|that|my|our|whole|entire|full|complete)\s+)*(?:it|image|photo|photograph|picture|pic|shot|everything|thing|whole thing|frame|all(?: of it)?)?$/;
const BLUR_AMOUNT =
  /\s*\b(?:(?:by|with|to|at|using)\s+)?(?:a\s+)?(?:radius\s+(?:of\s+)?)?\d+(?:\.\d+)?\s*(?:px|pixels?|sigma|radius)?\b|\s*\b(?:slight(?:ly)?|a (?:little|bit|touch|tad)(?: bit)?|somewhat|subtly|gently|lightly|a lot|heavily|strongly|very|much|more|less|really|significantly|out|please|too|as well)\b/g;

function blurredPart(clause: string): string | undefined {
  const match = /\bblur\w*\s+(.*)$/.exec(clause);
  if (!match) return undefined;
  const object = (match[1] ?? "").replace(BLUR_AMOUNT, "").replace(/\s+/g, " ").trim();
  return WHOLE_PICTURE.test(object) ? undefined : object;
}

/** Order matters: the first entry whose pattern matches a clause builds its step. */
export const CATALOG: readonly CatalogEntry[] = [
  {
    name: "blur the faces",
    examples: ["blur the faces", "pixelate all faces", "anonymise the people", "hide their faces", "blur her face"],
    pattern: new RegExp(
      `\\b${FACE_VERB}\\b.*\\bfaces?\\b|\\bfaces?\\b.*\\b(?:blurr?(?:ed|y)|pixelated|anonymi[sz]ed|hidden|censored|obscured)\\b|\\bface[- ]?blur\\w*|\\banonymi[sz]\\w*\\s+(?:(?:the|all|all the|any|these|those)\\s+)?${PEOPLE}\\b`,
    ),
    build: (clause, amount) => facesStep(clause, amount),
  },
  {
    name: "drop shadow",
    examples: ["add a drop shadow", "add a soft shadow", "add a long hard shadow"],
    pattern: /\bdrop[- ]?shadow\b|\b(?:add|give|with|put|cast|apply|create|place)\b.*\bshadows?\b|\bshadow\s+effect\b/,
    build: (clause, amount) => {
      const soft = /\b(?:soft\w*|diffuse\w*|blurr?(?:ed|y)|subtle|gentle)\b/.test(clause);
      const hard = /\b(?:hard|sharp|crisp|solid)\b/.test(clause);
      const long = /\b(?:long|far|distant|deep)\b/.test(clause);
      const short = /\b(?:short|close|tight|small)\b/.test(clause);
      const light = /\b(?:light|faint|subtle|gentle|slight)\b/.test(clause);
      const dark = /\b(?:dark|strong|heavy|deep|intense|bold)\b/.test(clause);
      return {
        op: "drop_shadow",
        // Fractions of the shape's longer side.
        distance: (long ? 0.08 : short ? 0.012 : 0.025) * (amount.level > 1 ? 1.5 : 1),
        softness: hard ? 0.004 : soft ? 0.035 : 0.018,
        opacity: light ? 0.3 : dark ? 0.7 : hard ? 0.6 : 0.45,
        colour: findColour(clause.replace(/\b(?:light|dark)\b/, ""))?.rgb ?? [0, 0, 0],
      };
    },
  },
  {
    name: "outline / stroke",
    examples: ["add a white outline", "add a 10px black stroke", "make it a sticker"],
    pattern: /\b(?:outline[ds]?|stroke|sticker)\b/,
    build: (clause, amount) => {
      const colour = findColour(clause)?.rgb ?? [255, 255, 255];
      const pixels = /(\d+)\s*(?:px|pixels?)\b/.exec(clause);
      if (pixels) return { op: "outline", size: Number(pixels[1]), unit: "px", colour };
      if (amount.percent !== undefined) return { op: "outline", size: amount.percent / 100, unit: "fraction", colour };
      const size = /\bthin\b/.test(clause) ? 0.01 : 0.02 * amount.level;
      return { op: "outline", size, unit: "fraction", colour };
    },
  },
  {
    name: "blur the background",
    examples: ["blur the background", "add a bokeh effect", "portrait mode"],
    pattern: new RegExp(
      `\\bblur\\w*\\b.*\\b${BACKGROUND}\\b|\\b${BACKGROUND}\\s+blur|\\bbokeh\\b|\\bportrait mode\\b|\\bdepth of field\\b`,
    ),
    build: (_clause, amount) => ({ op: "blur_background", strength: amount.level }),
  },
  {
    name: "remove the background (keep transparency)",
    examples: ["remove the background and add a border"],
    pattern: new RegExp(`\\b(?:remove|erase|delete|cut out|get rid of)\\b.*\\b${BACKGROUND}\\b|\\btransparent\\b`),
    build: () => ({ op: "cutout" }),
  },
  {
    name: "put it on a colour",
    examples: ["put it on a white background", "change the background to light blue", "replace the background with #ffcc00"],
    pattern: new RegExp(
      `\\b(?:on|onto|against)\\s+(?:an?\\s+|the\\s+|plain\\s+|solid\\s+)*[#\\w -]*${BACKGROUND}\\b|\\b${BACKGROUND}\\b.*\\b(?:to|into|with|as)\\b|\\b(?:make|set|turn|change|replace|paint|colou?r)\\b.*\\b${BACKGROUND}\\b|\\b[a-z]+ ${BACKGROUND}\\b`,
    ),
    build: (clause) => {
      const colour = findColour(clause.replace(/\btransparent\b/, ""));
      if (!colour) throw unsupported(clause, 'name a colour for the new background (for example "white" or "#336699")');
      return { op: "flatten", colour: colour.rgb };
    },
  },
  {
    name: "black and white",
    examples: ["make it black and white", "greyscale", "monochrome", "remove the colour"],
    pattern:
      /\b(?:black-and-white|gr[ae]yscale|monochrome?|mono|desaturate (?:it )?(?:completely|fully|entirely)|noir|(?:remove|drop|strip)\s+(?:all\s+)?(?:the\s+)?colou?rs?|no colou?rs?|gr[ae]y\s*tones?|make it gr[ae]y)\b/,
    build: () => ({ op: "greyscale" }),
  },
  {
    name: "sepia",
    examples: ["sepia", "make it look vintage", "old photo look"],
    pattern: /\b(?:sepia|vintage|antique|old(?:-| )(?:photo|photograph|fashioned|timey|school)|retro)\b/,
    build: (_clause, amount) => ({ op: "sepia", strength: Math.min(1, 0.5 + 0.5 * amount.level) }),
  },
  {
    name: "invert",
    examples: ["invert the colours", "make a negative"],
    pattern: /\b(?:invert|inverse|negative|inverted)\b/,
    build: () => ({ op: "invert" }),
  },
  {
    name: "hue shift",
    examples: ["shift the hue by 90 degrees", "rotate the hue 30°"],
    pattern: /\bhue\b/,
    build: (clause, amount) => {
      const degrees = amount.number ?? 30 * amount.level;
      return { op: "hue", degrees: LESS.test(clause) ? -Math.abs(degrees) : degrees };
    },
  },
  {
    name: "flip / mirror",
    examples: ["flip horizontally", "mirror it", "flip vertically", "flip it upside down"],
    pattern: /\b(?:flip|flop|mirror)\w*\b/,
    build: (clause) => ({
      op: "flip",
      axis: /\b(?:vertical(?:ly)?|upside down|top to bottom|bottom to top|up(?:side)?[- ]down)\b/.test(clause)
        ? "vertical"
        : "horizontal",
    }),
  },
  {
    name: "rotate",
    examples: ["rotate 90 degrees", "rotate 45° counterclockwise", "rotate left", "turn it upside down"],
    pattern:
      /\b(?:rotat\w*|turn\b.*\b(?:clockwise|counter-?clockwise|anti-?clockwise|upside down|sideways|degrees?|left|right)|upside down|tilt\w*)\b/,
    build: (clause, amount) => ({ op: "rotate", degrees: /\bsideways\b/.test(clause) ? 90 : rotationDegrees(clause, amount) }),
  },
  {
    name: "crop",
    examples: ["crop to a square", "crop to 16:9", "crop to 800x600", "crop 10% off each side", "make it square"],
    pattern: /\b(?:crop\w*|make it (?:a )?square|square (?:crop|format)|aspect ratio)\b/,
    build: (clause, amount) => {
      if (/\bsquare\b/.test(clause)) return { op: "crop_aspect", ratio: 1 };
      const pixels = /\b(?:px|pixels?)\b/.test(clause) ? parseDimensions(clause) : undefined;
      if (pixels) return { op: "crop_pixels", ...pixels };
      if (amount.percent !== undefined) return { op: "crop_inset", fraction: Math.min(0.45, Math.abs(amount.percent) / 100) };
      const ratio = parseRatio(clause);
      if (ratio) return { op: "crop_aspect", ratio };
      const dimensions = parseDimensions(clause);
      if (dimensions) return { op: "crop_pixels", ...dimensions };
      if (/\b(?:landscape|wide(?:screen)?|cinematic)\b/.test(clause)) return { op: "crop_aspect", ratio: 16 / 9 };
      if (/\bportrait\b/.test(clause)) return { op: "crop_aspect", ratio: 4 / 5 };
      if (/\b(?:tight(?:er)?|closer|edges?|sides?|in)\b/.test(clause)) return { op: "crop_inset", fraction: 0.1 * amount.level };
      throw unsupported(clause, 'say how to crop: "to a square", "to 16:9", "to 800x600 pixels" or "10% off each side"');
    },
  },
  {
    name: "resize",
    examples: ["resize to 800 wide", "resize to 1024x768", "make it half the size", "scale to 50%", "upscale 2x"],
    pattern:
      /\b(?:resiz\w*|rescal\w*|scale\w*|upscal\w*|downscal\w*|upsampl\w*|downsampl\w*|shrink\w*|enlarg\w*|thumbnail|(?:make it|make the image|make the photo)\s+(?:\w+\s+)?(?:smaller|bigger|larger|half|twice|double|\d+))\b/,
    build: (clause, amount) => {
      const dimensions = parseDimensions(clause);
      if (dimensions) return { op: "resize", ...dimensions };
      const multiplier = /(\d+(?:\.\d+)?)\s*(?:x|×|times)\b/.exec(clause);
      const down = /\b(?:down\w*|shrink\w*|smaller|reduce)\b/.test(clause);
      if (multiplier) {
        const times = Number(multiplier[1]);
        return { op: "resize", scale: down ? 1 / times : times };
      }
      if (amount.percent !== undefined) return { op: "resize", scale: amount.percent / 100 };
      if (/\bhalf\b/.test(clause)) return { op: "resize", scale: 0.5 };
      if (/\b(?:double|twice)\b/.test(clause)) return { op: "resize", scale: 2 };
      if (/\bthumbnail\b/.test(clause)) return { op: "resize", longSide: 256 };
      const pixels = /(\d{2,5})\s*(?:px|pixels?)?\s*(wide|width|tall|high|height|long)?/.exec(clause);
      if (pixels) {
        const value = Number(pixels[1]);
        const side =
          pixels[2] ?? (/\b(?:width|wide)\b/.test(clause) ? "wide" : /\b(?:height|tall|high)\b/.test(clause) ? "tall" : "");
        if (side === "wide" || side === "width") return { op: "resize", width: value };
        if (side === "tall" || side === "high" || side === "height") return { op: "resize", height: value };
        return { op: "resize", longSide: value };
      }
      if (/\b(?:smaller|shrink\w*|downscal\w*|downsampl\w*)\b/.test(clause))
        return { op: "resize", scale: 1 / (1 + amount.level) };
      if (/\b(?:bigger|larger|enlarg\w*|upscal\w*|upsampl\w*)\b/.test(clause)) return { op: "resize", scale: 1 + amount.level };
      throw unsupported(clause, 'say the size: "to 800 wide", "to 1024x768", "50%" or "2x"');
    },
  },
  {
    name: "border / frame",
    examples: ["add a white border", "add a 20px black frame", "add a thick red border"],
    pattern: /\b(?:border|frame|matte|passe-?partout|padding|pad)\b/,
    build: (clause, amount) => {
      const colour = findColour(clause)?.rgb ?? [255, 255, 255];
      const pixels = /(\d+)\s*(?:px|pixels?)\b/.exec(clause);
      if (pixels) return { op: "border", size: Number(pixels[1]), unit: "px", colour };
      if (amount.percent !== undefined) return { op: "border", size: amount.percent / 100, unit: "fraction", colour };
      const size = /\bthin\b/.test(clause) ? 0.015 : 0.03 * amount.level;
      return { op: "border", size, unit: "fraction", colour };
    },
  },
  {
    name: "warmer / cooler",
    examples: ["make it warmer", "a bit cooler", "warm up the tones"],
    pattern: /\b(?:warm\w*|cool\w*|cold\w*|golden|blue tint|orange tint)\b/,
    build: (clause, amount) => {
      const change = amount.percent !== undefined ? amount.percent / 100 : 0.1 * amount.level;
      const cooler = /\b(?:cool\w*|cold\w*|blue tint)\b/.test(clause) !== LESS.test(clause);
      return { op: "temperature", amount: cooler ? -Math.abs(change) : Math.abs(change) };
    },
  },
  {
    name: "saturation",
    examples: ["more vivid", "increase the saturation", "less saturated", "mute the colours"],
    pattern:
      /\b(?:saturat\w*|desaturat\w*|vivid|vibran\w*|colou?rful|punchy|pop|muted?|washed out|dull|pastel|richer colou?rs?)\b/,
    build: (clause, amount) => {
      const less = /\b(?:desaturat\w*|muted?|washed out|dull|pastel)\b/.test(clause) || LESS.test(clause);
      return { op: "saturation", factor: factor(amount, 0.3, less ? -1 : 1) };
    },
  },
  {
    name: "contrast",
    examples: ["more contrast", "reduce the contrast by 20%", "flatter look"],
    pattern: /\b(?:contrast\w*|flatter|punch)\b/,
    build: (clause, amount) => ({
      op: "contrast",
      factor: factor(amount, 0.25, LESS.test(clause) || /\bflatter\b/.test(clause) ? -1 : 1),
    }),
  },
  {
    name: "brightness",
    examples: ["brighter", "a lot darker", "increase the brightness by 30%", "lighten it", "darken it slightly"],
    pattern: /\b(?:bright\w*|dark\w*|light(?:er|en\w*)|dim\w*|exposure|expose|underexpos\w*|overexpos\w*)\b/,
    build: (clause, amount) => {
      const darker = /\b(?:dark\w*|dim\w*|underexpos\w*)\b/.test(clause) !== LESS.test(clause);
      return { op: "brightness", factor: factor(amount, 0.2, darker ? -1 : 1) };
    },
  },
  {
    name: "sharpen",
    examples: ["sharpen", "make it crisper", "remove the blur"],
    pattern: /\b(?:sharp\w*|crisp\w*|unblur|deblur|(?:remove|reduce|fix)\s+(?:the\s+)?blur\w*|more detail(?:ed)?|clearer)\b/,
    // The radius of the unsharp mask: 1, 1.5 or 2.5 pixels.
    build: (_clause, amount) => ({ op: "sharpen", sigma: 0.5 + amount.level }),
  },
  {
    name: "blur",
    examples: ["blur it", "a slight blur", "blur by 5 pixels", "soften"],
    pattern: /\b(?:blur\w*|soft focus|soften|gaussian|out of focus|defocus\w*)\b/,
    build: (clause, amount, context) => {
      const part = blurredPart(clause);
      if (part !== undefined && !context.hasMask) {
        throw unsupported(
          clause,
          `the built-in engine finds faces ("blur the faces") but not "${part}"; to blur a part of the picture, send a mask over it with the prompt "blur"`,
        );
      }
      const pixels = /(\d+(?:\.\d+)?)\s*(?:px|pixels?|sigma|radius)?/.exec(clause);
      return { op: "blur", sigma: pixels ? Math.max(0.3, Number(pixels[1])) : 3 * amount.level };
    },
  },
  {
    name: "denoise",
    examples: ["remove the noise", "denoise", "reduce the grain"],
    pattern: /\b(?:denois\w*|de-nois\w*|noise|grain\w*|speckle)\b/,
    build: () => ({ op: "denoise" }),
  },
  {
    name: "auto enhance",
    examples: ["auto enhance", "auto levels", "normalise", "fix the exposure"],
    pattern:
      /\b(?:enhance|auto[- ]?(?:enhance|level\w*|contrast|correct\w*|fix)|normali[sz]\w*|stretch the (?:histogram|levels)|levels|fix the (?:exposure|lighting|colou?rs?))\b/,
    build: () => ({ op: "normalize" }),
  },
  {
    name: "trim borders",
    examples: ["trim the white space", "remove the border", "trim"],
    pattern:
      /\b(?:trim\w*|(?:remove|cut|delete)\s+(?:the\s+)?(?:[\w-]+\s+)?(?:borders?|margins?|white\s*space|black bars|letterbox\w*))\b/,
    build: () => ({ op: "trim" }),
  },
  {
    name: "pixelate",
    examples: ["pixelate", "make it pixel art", "8-bit look"],
    pattern: /\b(?:pixel\w*|8-?bit|mosaic)\b/,
    build: (_clause, amount) => ({ op: "pixelate", blocks: Math.round(64 / amount.level) }),
  },
  {
    name: "vignette",
    examples: ["add a vignette", "darken the corners"],
    pattern: /\b(?:vignett\w*|darken the (?:corners|edges))\b/,
    build: (_clause, amount) => ({ op: "vignette", strength: Math.min(0.9, 0.4 * amount.level) }),
  },
];

// Order counts for a few entries: "blur the faces but keep the rest sharp" blurs faces;
// "darken the corners" is a vignette, not brightness;
// "remove the border" is a trim, not a border; "remove the noise" is a denoise.
const PRIORITY = ["blur the faces", "vignette", "trim borders", "denoise", "sharpen"];

function orderedCatalog(): CatalogEntry[] {
  const first = PRIORITY.map((name) => CATALOG.find((entry) => entry.name === name)).filter(
    (entry): entry is CatalogEntry => entry !== undefined,
  );
  return [...first, ...CATALOG.filter((entry) => !PRIORITY.includes(entry.name))];
}

const ENTRIES = orderedCatalog();

// Words that carry no instruction: what is left of a clause after them is what was asked.
const FILLER =
  /\b(?:please|pls|thanks|thank you|can you|could you|would you|kindly|i want|i need|i'd like|i would like|just|now|for me|the|a|an|it|this|that|image|photo|photograph|picture|pic|shot|make|do|apply|give|me|some|bit|and|then|also|too|as well|ok|okay)\b/g;

/** A clause with no instruction in it ("please", "thanks", "for me"). */
export function isFiller(clause: string): boolean {
  return clause.replace(FILLER, "").replace(/[\s,.!?'"-]+/g, "").length === 0;
}

function unsupported(clause: string, hint?: string): EngineError {
  return new EngineError(
    "unsupported_instruction",
    hint ? `Cannot carry out "${clause}": ${hint}.` : `The built-in engine cannot carry out "${clause}".`,
  );
}

/** The catalog's edits in one sentence, said once at the end of a refusal (never once per clause). */
export function knownEdits(): string {
  return `It edits deterministically and understands: ${CATALOG.map((entry) => entry.name).join(", ")}.`;
}

/** A clause the catalog cannot carry out, and why, in words a person can act on. */
export interface UnderstoodProblem {
  clause: string;
  message: string;
  /**
   * No catalog entry matches the clause at all: the message names the clause only, and whoever
   * refuses adds what does work, once (planEdit at submission, parseInstructions in a job).
   */
  unrecognised?: true;
}

export interface InstructionReading {
  /** The steps of the clauses understood, in the prompt's order. */
  steps: EditStep[];
  /** Every clause that is not understood (or cannot be done as asked); empty when the whole prompt can be carried out. */
  problems: UnderstoodProblem[];
}

/**
 * Reads a prompt into ordered edit steps, clause by clause, without throwing:
 * what is understood, and each clause that is not. A pure function, for the
 * editor and for refusing a prompt before any work is done.
 */
export function readInstructions(prompt: string, context: ReadingContext = {}): InstructionReading {
  const steps: EditStep[] = [];
  const problems: UnderstoodProblem[] = [];
  for (const clause of splitClauses(normalizePrompt(prompt))) {
    const entry = ENTRIES.find((candidate) => candidate.pattern.test(clause));
    if (entry) {
      try {
        steps.push(entry.build(clause, readAmount(clause), context));
      } catch (error) {
        if (!(error instanceof EngineError)) throw error;
        problems.push({ clause, message: error.message });
      }
      continue;
    }
    if (!isFiller(clause)) problems.push({ clause, message: unsupported(clause).message, unrecognised: true });
  }
  if (steps.length === 0 && problems.length === 0) {
    problems.push({
      clause: prompt.trim(),
      message: `The prompt "${prompt.trim()}" names no edit the built-in engine can make.`,
    });
  }
  return { steps, problems };
}

/** Reads a prompt into ordered edit steps; throws `unsupported_instruction` when any clause is not understood or nothing is. */
export function parseInstructions(prompt: string, context: ReadingContext = {}): EditStep[] {
  const { steps, problems } = readInstructions(prompt, context);
  const [problem] = problems;
  if (problem) {
    throw new EngineError(
      "unsupported_instruction",
      problem.unrecognised ? `${problem.message} ${knownEdits()}` : problem.message,
    );
  }
  return steps;
}
