import type { Route } from "../engine.ports";
import { isFiller } from "./generative-catalog";
import { findColour, normalizePrompt, splitClauses } from "./prompt-text";

/**
 * Chooses the workflow from the prompt, as the spec's routing table says:
 *
 * | prompt                                             | workflow           |
 * |----------------------------------------------------|--------------------|
 * | "remove the background", "transparent background"  | background removal |
 * | "remove X", "erase X", "delete X", "clean up X"    | object removal     |
 * | anything else ("replace X with Y" too)             | generative editing |
 *
 * `detect` forces object removal and replaces the derived vocabulary. A pure
 * function: the same input always gives the same route.
 */
export interface RouteInput {
  prompt: string;
  detect?: string;
  hasMask?: boolean;
}

export interface PromptRoute extends Route {
  /**
   * Object and background removal: the prompt's clauses that are not the
   * removal ("remove the car and make it black and white", "remove the
   * background and add a drop shadow"), for the built-in catalog to apply to
   * the removal's result. Remarks ("thanks!") are left out.
   */
  followUpInstructions: string[];
}

const REMOVAL_VERB =
  "(?:remove|erase|delete|clean(?:\\s+up)?|get rid of|take (?:out|away|off)|eliminate|wipe (?:out|away|off)|clear (?:out|away)|rub out|scrub out|edit out|paint out|photoshop out|cut out)";
const BACKGROUND_NOUN = "(?:background|backdrop|bg)";
// Words that make "background" a place rather than the thing removed: "the person in the background".
const LOCATION_WORD = "(?:in|on|at|from|of|behind|near|with|against|off|to|into|out)";

// "background" ends the object, so "remove the background person" is about a person.
const BACKGROUND_OBJECT_END =
  "(?=\\s*$|\\s*[,.;!?]|\\s+(?:and|then|from|of|in|on|please|for|so|with|to|but|leaving|keeping|except|entirely|completely|behind|around|only)\\b)";

const BACKGROUND_REMOVAL_PATTERNS = [
  new RegExp(
    `\\b${REMOVAL_VERB}\\s+(?:(?:the|its|this|that|my|our|a|an|all|any|whole|entire)\\s+)*(?:(?!${LOCATION_WORD}\\b)[\\w'-]+\\s+){0,3}?${BACKGROUND_NOUN}${BACKGROUND_OBJECT_END}`,
  ),
  new RegExp(`\\btransparent\\s+(?:png\\s+)?${BACKGROUND_NOUN}\\b`),
  new RegExp(`\\b${BACKGROUND_NOUN}\\s+(?:[\\w'-]+\\s+){0,3}?(?:transparent|see-through)\\b`),
  /\bbackground\s+remov(?:al|er)\b/,
  /\bremove\s*bg\b/,
  /\b(?:cut\s*out|isolate|extract)\s+(?:the\s+)?(?:subject|product|object|item|foreground)\b/,
];

// A removal phrase whose object is an adjustment, not a thing in the picture.
const ADJUSTMENT_OBJECT =
  /^(?:(?:all|any|the|some|of|this|that|its)\s+)*(?:[\w-]+\s+){0,2}?(?:colou?rs?|saturation|noise|grain|graininess|blur|blurriness|tint|(?:colou?r\s+)?cast|borders?|margins?|white\s*space|black bars|letterbox(?:ing)?|vignett(?:e|ing))\b\s*(?:(?:from|around|on|in|of)\b.*)?$/;

const REPLACEMENT_INTENT = /\b(?:replace|replacing|swap|substitute|exchange)\b|\bturn\b.+\binto\b|\bchange\b.+\binto\b/;

const REMOVAL_CLAUSE = new RegExp(
  `^(?:(?:please|now|also|and|then|can you|could you|would you)\\s+)*${REMOVAL_VERB}\\b\\s*(.*)$`,
);
// "take the car out", "edit the logo out of the picture"
const SPLIT_REMOVAL_CLAUSE =
  /^(?:(?:please|now|also|and|then)\s+)*(?:take|edit|paint|photoshop|wipe|rub|cut|get)\s+(.+?)\s+(?:out|away|off)\b(?:\s+of\s+.*)?$/;

// With a mask these prompts name no object: the mask says what to fill.
const MASK_ONLY_PROMPT =
  /^(?:(?:please|now)\s+)*(?:inpaint|fill(?:\s+in)?|heal|fix|repair|retouch|patch|restore)\b(?:\s+(?:the|this|that|it|masked|marked|selected|highlighted|painted|area|region|part|spot|hole|here))*\s*$/;

const MASK_REFERENCE =
  /^(?:it|this|that|them|these|those|everything|something|all of it|(?:the\s+|this\s+|that\s+)?(?:masked|marked|selected|highlighted|painted|white)?\s*(?:area|region|part|bit|selection|object|thing|stuff)s?)$/;

// A clause that starts with one of these is an instruction of its own, not one more object to remove.
const INSTRUCTION_START =
  /^(?:make|turn|convert|change|set|add|put|place|rotate|flip|mirror|crop|resize|scale|blur|sharpen|brighten|darken|increase|decrease|reduce|boost|adjust|apply|give|invert|shift|desaturate|saturate|warm|cool|lighten|enhance|fix|replace|swap|straighten|trim|frame|border|upscale|downscale|shrink|enlarge|tilt|sepia|greyscale|black-and-white|grayscale|more|less|lower|raise)\b/;

// Constraints, not targets or edits: "remove the person, keep the dog".
const CONSTRAINT = /^(?:keep|leave|preserve|but|except|don'?t|do not|without|only|make sure|while|so)\b/;

const POLITE_OPENING = /^(?:(?:please|now|can you|could you|would you|kindly)\s+)+/;

const POLITENESS = /^(?:please|thanks|thank you|thx|ty|cheers|for me|asap|now|ok|okay)$/;

// Praise and thanks around an instruction: "thanks!", "nice photo", "great shot btw".
const REMARK =
  /^(?:(?:please|thanks|thank you|thx|ty|cheers|for me|asap|now|ok|okay|btw|lol|hi|hello|hey)\b[\s!.]*)+$|^(?:(?:what|such)\s+an?\s+|an?\s+|(?:very|really|so)\s+)?(?:nice|great|good|lovely|beautiful|awesome|cool|amazing|pretty|cute|fun)\b(?:\s+(?:photo|picture|pic|image|shot|one|dog|cat|scene|view))?(?:\s+(?:btw|by the way|thanks|thank you))?[\s!.]*$|^$/;

/**
 * Splits a `detect` query ("person . red car . dog") into its terms. The spec
 * puts spaces around the period; "person.dog" is read the same way, since no
 * detectable thing has a period in its name.
 */
export function parseDetectQuery(detect: string): string[] {
  return detect
    .split(/\s*\.\s*/)
    .map((term) => normalizePrompt(term).replace(/^[\s.]+|[\s.]+$/g, ""))
    .filter((term) => term.length > 0);
}

/** Turns "the red car on the left from the photo please" into "red car on the left". */
export function cleanRemovalTerm(phrase: string): string | undefined {
  let term = phrase
    // Reasons and side remarks end the object: "the car so the street looks empty".
    .replace(/\s+(?:so|so that|because|to make|to have|which|while|but|keeping|leaving|without|since|as well as|as)\b.*$/, "")
    .replace(
      // "in the background" stays: the detector reads it as "the smaller, farther one".
      /\s+(?:from|out of|off|in|on|of)\s+(?:the\s+|this\s+|my\s+|our\s+|that\s+)?(?:photo|photograph|picture|image|pic|shot|scene|frame|view)\b.*$/,
      "",
    )
    .replace(/\s+(?:please|completely|entirely|fully|for me|too|as well|if possible|now)$/g, "")
    .replace(/^(?:(?:the|a|an|this|that|these|those|my|our|his|her|their|its|some|any|of)\s+)+/, "")
    .replace(/[\s"']+$/g, "")
    .replace(/^["'\s]+/, "")
    .trim();
  term = term.replace(/\s+/g, " ");
  if (term.length === 0 || MASK_REFERENCE.test(term) || POLITENESS.test(term)) return undefined;
  return term;
}

// Things drawn around a cut-out: their colour is not a new background ("add a white outline").
const CUTOUT_EFFECT = /\b(?:border|frame|outline[ds]?|stroke|shadows?|sticker|matte|padding)\b/;

/** "remove": a transparent cut-out; "replace": the prompt also asks for a new background colour. */
function readBackgroundRequest(normalized: string): "remove" | "replace" | undefined {
  for (const pattern of BACKGROUND_REMOVAL_PATTERNS) {
    const match = pattern.exec(normalized);
    if (!match) continue;
    // "remove the background and put it on white" asks for a new background: a generative edit.
    const remainder = normalized.slice(0, match.index) + normalized.slice(match.index + match[0].length);
    const asksForNewBackground = splitClauses(remainder).some(
      (clause) =>
        findColour(clause) !== undefined &&
        !CUTOUT_EFFECT.test(clause) &&
        /\b(?:background|backdrop|bg|put|place|set|make|turn|fill|use|with|on|onto|against|to)\b/.test(clause),
    );
    return asksForNewBackground ? "replace" : "remove";
  }
  return undefined;
}

/**
 * A background removal's other clauses, in order: "remove the background and
 * add a drop shadow" → "add a drop shadow"; what follows the removal inside
 * its own clause too ("background removal with a white outline" → "with a
 * white outline"). Clauses that only restate the removal ("make it
 * transparent") and remarks are left out.
 */
function backgroundFollowUps(normalized: string): string[] {
  const followUps: string[] = [];
  for (const clause of splitClauses(normalized)) {
    let rest = clause;
    for (const pattern of BACKGROUND_REMOVAL_PATTERNS) rest = rest.replace(pattern, " ");
    rest = rest
      .replace(/\b(?:make|turn|set|leave|keep)\s+(?:it|the\s+\w+)\s+transparent\b|\btransparen\w*\b/g, " ")
      .replace(/^[\s,]*(?:(?:and|then|also|plus|with|please|now|for me|entirely|completely|fully)\b[\s,]*)*/, "")
      .replace(/^(?:from|of|in|on)\s+(?:the\s+|this\s+|my\s+|our\s+|that\s+)?(?:photo|photograph|picture|image|pic|shot)\b/, "")
      .replace(/\s+/g, " ")
      .trim();
    if (rest.length > 0 && !isFiller(rest)) followUps.push(rest);
  }
  return followUps;
}

interface ClauseReading {
  terms: string[];
  /** A removal clause named something (or nothing, meaning the mask). */
  removes: boolean;
  followUps: string[];
}

function readClauses(normalized: string): ClauseReading {
  const reading: ClauseReading = { terms: [], removes: false, followUps: [] };
  let previousWasRemoval = false;
  for (const clause of splitClauses(normalized)) {
    const match = REMOVAL_CLAUSE.exec(clause) ?? SPLIT_REMOVAL_CLAUSE.exec(clause);
    if (match) {
      const object = match[1] ?? "";
      if (ADJUSTMENT_OBJECT.test(object)) {
        reading.followUps.push(clause);
        previousWasRemoval = false;
        continue;
      }
      reading.removes = true;
      previousWasRemoval = true;
      const term = cleanRemovalTerm(object);
      if (term) reading.terms.push(term);
      continue;
    }
    if (CONSTRAINT.test(clause)) continue;
    if (REMARK.test(clause.replace(POLITE_OPENING, ""))) {
      previousWasRemoval = false;
      continue;
    }
    if (previousWasRemoval && !INSTRUCTION_START.test(clause)) {
      // "remove the car, the dog and the bike": the verb carries over, until a remark
      // ("remove the dog, thanks! nice photo") ends the list.
      const term = cleanRemovalTerm(clause);
      if (term) reading.terms.push(term);
      else previousWasRemoval = false;
      continue;
    }
    previousWasRemoval = false;
    // Remarks ("nice photo", "thanks") were skipped above; anything else is an instruction, carried
    // out or refused by whoever reads the follow-ups, never dropped ("… and snowy vibes").
    reading.followUps.push(clause);
  }
  return reading;
}

export function routePrompt(input: RouteInput): PromptRoute {
  const normalized = normalizePrompt(input.prompt);
  if (input.detect !== undefined) {
    const reading = readClauses(normalized);
    return {
      workflow: "object_removal",
      removalTerms: parseDetectQuery(input.detect),
      followUpInstructions: reading.followUps,
    };
  }
  const backgroundRequest = readBackgroundRequest(normalized);
  if (backgroundRequest === "remove") {
    return { workflow: "background_removal", removalTerms: [], followUpInstructions: backgroundFollowUps(normalized) };
  }
  if (backgroundRequest === "replace") return { workflow: "generative_edit", removalTerms: [], followUpInstructions: [] };
  if (input.hasMask && MASK_ONLY_PROMPT.test(normalized)) {
    return { workflow: "object_removal", removalTerms: [], followUpInstructions: [] };
  }
  const reading = readClauses(normalized);
  if (reading.removes && !REPLACEMENT_INTENT.test(normalized)) {
    return { workflow: "object_removal", removalTerms: dedupe(reading.terms), followUpInstructions: reading.followUps };
  }
  return { workflow: "generative_edit", removalTerms: [], followUpInstructions: [] };
}

function dedupe(terms: string[]): string[] {
  return [...new Set(terms)];
}
