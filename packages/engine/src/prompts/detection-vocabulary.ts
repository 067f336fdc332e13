import type { Box, Detection } from "../engine.ports";
import { findColour, type Rgb } from "./prompt-text";

/**
 * From the words of a removal request to the detector's labels, and from the
 * detections to the ones the words point at ("the car on the left", "all the
 * people", "the red car").
 */

/** The 80 COCO classes, as the detector reports them. */
export const COCO_LABELS = [
  "person",
  "bicycle",
  "car",
  "motorcycle",
  "airplane",
  "bus",
  "train",
  "truck",
  "boat",
  "traffic light",
  "fire hydrant",
  "stop sign",
  "parking meter",
  "bench",
  "bird",
  "cat",
  "dog",
  "horse",
  "sheep",
  "cow",
  "elephant",
  "bear",
  "zebra",
  "giraffe",
  "backpack",
  "umbrella",
  "handbag",
  "tie",
  "suitcase",
  "frisbee",
  "skis",
  "snowboard",
  "sports ball",
  "kite",
  "baseball bat",
  "baseball glove",
  "skateboard",
  "surfboard",
  "tennis racket",
  "bottle",
  "wine glass",
  "cup",
  "fork",
  "knife",
  "spoon",
  "bowl",
  "banana",
  "apple",
  "sandwich",
  "orange",
  "broccoli",
  "carrot",
  "hot dog",
  "pizza",
  "donut",
  "cake",
  "chair",
  "couch",
  "potted plant",
  "bed",
  "dining table",
  "toilet",
  "tv",
  "laptop",
  "mouse",
  "remote",
  "keyboard",
  "cell phone",
  "microwave",
  "oven",
  "toaster",
  "sink",
  "refrigerator",
  "book",
  "clock",
  "vase",
  "scissors",
  "teddy bear",
  "hair drier",
  "toothbrush",
] as const;

const ANIMALS = ["bird", "cat", "dog", "horse", "sheep", "cow", "elephant", "bear", "zebra", "giraffe"];

/** Words people use, singular, to the labels they mean. Plurals are handled by `singular`. */
const SYNONYMS: Record<string, string[]> = {
  person: ["person"],
  people: ["person"],
  man: ["person"],
  men: ["person"],
  woman: ["person"],
  women: ["person"],
  guy: ["person"],
  girl: ["person"],
  boy: ["person"],
  kid: ["person"],
  child: ["person"],
  children: ["person"],
  baby: ["person"],
  toddler: ["person"],
  lady: ["person"],
  ladies: ["person"],
  gentleman: ["person"],
  gentlemen: ["person"],
  someone: ["person"],
  somebody: ["person"],
  human: ["person"],
  pedestrian: ["person"],
  tourist: ["person"],
  bystander: ["person"],
  passerby: ["person"],
  "passer-by": ["person"],
  passersby: ["person"],
  "passers-by": ["person"],
  stranger: ["person"],
  photobomber: ["person"],
  individual: ["person"],
  crowd: ["person"],
  runner: ["person"],
  cyclist: ["person"],
  player: ["person"],
  worker: ["person"],
  car: ["car"],
  auto: ["car"],
  automobile: ["car"],
  sedan: ["car"],
  suv: ["car", "truck"],
  taxi: ["car"],
  cab: ["car"],
  jeep: ["car", "truck"],
  van: ["car", "truck"],
  vehicle: ["car", "truck", "bus", "motorcycle"],
  bicycle: ["bicycle"],
  bike: ["bicycle", "motorcycle"],
  cycle: ["bicycle"],
  motorcycle: ["motorcycle"],
  motorbike: ["motorcycle"],
  scooter: ["motorcycle"],
  moped: ["motorcycle"],
  airplane: ["airplane"],
  aeroplane: ["airplane"],
  plane: ["airplane"],
  jet: ["airplane"],
  aircraft: ["airplane"],
  bus: ["bus"],
  coach: ["bus"],
  train: ["train"],
  tram: ["train"],
  locomotive: ["train"],
  truck: ["truck"],
  lorry: ["truck"],
  pickup: ["truck"],
  boat: ["boat"],
  ship: ["boat"],
  yacht: ["boat"],
  sailboat: ["boat"],
  canoe: ["boat"],
  kayak: ["boat"],
  "traffic light": ["traffic light"],
  stoplight: ["traffic light"],
  "traffic signal": ["traffic light"],
  hydrant: ["fire hydrant"],
  "fire hydrant": ["fire hydrant"],
  "stop sign": ["stop sign"],
  "parking meter": ["parking meter"],
  bench: ["bench"],
  bird: ["bird"],
  seagull: ["bird"],
  gull: ["bird"],
  pigeon: ["bird"],
  duck: ["bird"],
  parrot: ["bird"],
  crow: ["bird"],
  sparrow: ["bird"],
  cat: ["cat"],
  kitten: ["cat"],
  kitty: ["cat"],
  dog: ["dog"],
  puppy: ["dog"],
  pup: ["dog"],
  doggy: ["dog"],
  hound: ["dog"],
  horse: ["horse"],
  pony: ["horse"],
  foal: ["horse"],
  sheep: ["sheep"],
  lamb: ["sheep"],
  cow: ["cow"],
  cattle: ["cow"],
  bull: ["cow"],
  calf: ["cow"],
  ox: ["cow"],
  elephant: ["elephant"],
  bear: ["bear"],
  zebra: ["zebra"],
  giraffe: ["giraffe"],
  animal: ANIMALS,
  pet: ["cat", "dog"],
  backpack: ["backpack"],
  rucksack: ["backpack"],
  bag: ["backpack", "handbag", "suitcase"],
  umbrella: ["umbrella"],
  handbag: ["handbag"],
  purse: ["handbag"],
  tie: ["tie"],
  necktie: ["tie"],
  suitcase: ["suitcase"],
  luggage: ["suitcase"],
  frisbee: ["frisbee"],
  ski: ["skis"],
  skis: ["skis"],
  snowboard: ["snowboard"],
  ball: ["sports ball"],
  football: ["sports ball"],
  "soccer ball": ["sports ball"],
  basketball: ["sports ball"],
  "tennis ball": ["sports ball"],
  kite: ["kite"],
  "baseball bat": ["baseball bat"],
  bat: ["baseball bat"],
  "baseball glove": ["baseball glove"],
  mitt: ["baseball glove"],
  skateboard: ["skateboard"],
  surfboard: ["surfboard"],
  racket: ["tennis racket"],
  racquet: ["tennis racket"],
  "tennis racket": ["tennis racket"],
  bottle: ["bottle"],
  "wine glass": ["wine glass"],
  glass: ["wine glass", "cup"],
  cup: ["cup"],
  mug: ["cup"],
  "coffee cup": ["cup"],
  teacup: ["cup"],
  fork: ["fork"],
  knife: ["knife"],
  spoon: ["spoon"],
  teaspoon: ["spoon"],
  bowl: ["bowl"],
  banana: ["banana"],
  apple: ["apple"],
  sandwich: ["sandwich"],
  orange: ["orange"],
  broccoli: ["broccoli"],
  carrot: ["carrot"],
  "hot dog": ["hot dog"],
  hotdog: ["hot dog"],
  pizza: ["pizza"],
  donut: ["donut"],
  doughnut: ["donut"],
  cake: ["cake"],
  chair: ["chair"],
  seat: ["chair"],
  stool: ["chair"],
  couch: ["couch"],
  sofa: ["couch"],
  plant: ["potted plant"],
  "potted plant": ["potted plant"],
  houseplant: ["potted plant"],
  "flower pot": ["potted plant"],
  bed: ["bed"],
  table: ["dining table"],
  "dining table": ["dining table"],
  desk: ["dining table"],
  toilet: ["toilet"],
  tv: ["tv"],
  television: ["tv"],
  monitor: ["tv"],
  screen: ["tv", "laptop"],
  laptop: ["laptop"],
  notebook: ["laptop"],
  computer: ["laptop", "tv"],
  mouse: ["mouse"],
  remote: ["remote"],
  "remote control": ["remote"],
  keyboard: ["keyboard"],
  phone: ["cell phone"],
  "cell phone": ["cell phone"],
  cellphone: ["cell phone"],
  "mobile phone": ["cell phone"],
  smartphone: ["cell phone"],
  iphone: ["cell phone"],
  microwave: ["microwave"],
  oven: ["oven"],
  toaster: ["toaster"],
  sink: ["sink"],
  fridge: ["refrigerator"],
  refrigerator: ["refrigerator"],
  book: ["book"],
  clock: ["clock"],
  vase: ["vase"],
  scissors: ["scissors"],
  "teddy bear": ["teddy bear"],
  teddy: ["teddy bear"],
  "stuffed animal": ["teddy bear"],
  "hair drier": ["hair drier"],
  "hair dryer": ["hair drier"],
  hairdryer: ["hair drier"],
  toothbrush: ["toothbrush"],
};

/**
 * Things people ask to remove that an object detector trained on COCO cannot
 * find. A mask is needed for them.
 */
const NEEDS_A_MASK =
  /\b(?:text|texts|word|words|letters?|writing|caption|subtitles?|watermarks?|logos?|signatures?|stamps?|date stamp|timestamps?|labels?|scratch(?:es)?|dust|specks?|spots?|blemish(?:es)?|pimples?|acne|wrinkles?|freckles?|moles?|tattoos?|wires?|cables?|power lines?|lines|shadows?|reflections?|glare|stains?|dirt|smudges?|marks?|graffiti|trash|litter|rubbish|garbage|noise|object|thing|stuff)\b/;

/** Where in the frame: "on the left", "at the top", "in the middle". */
export type Side = "left" | "right" | "top" | "bottom" | "center";

export interface TargetQuery {
  /** The words as asked, for messages. */
  term: string;
  /** Detector labels that satisfy it. */
  labels: string[];
  /** "all the people", "cars": every match (within the other qualifiers). */
  all: boolean;
  /** "both dogs", "the two people on the left": exactly this many. */
  count: number | undefined;
  /** "top left" names two. */
  sides: Side[];
  /** "the biggest", "the small one". */
  size: "largest" | "smallest" | undefined;
  /** "in the background" / "in front": judged by size against the other matches. */
  depth: "foreground" | "background" | undefined;
  /** "the second from the left", "the third largest": counted along `sides`, else along `size`. */
  ordinal: number | undefined;
  colour: Rgb | undefined;
  /**
   * Words no rule here reads ("with the hat", "coffee" in "coffee mug", "sleeping"). They cannot
   * choose among several matches, so with more than one match the selection refuses rather than
   * guess; with one, there is nothing to choose.
   */
  unread: string[];
}

export type TermReading =
  | { kind: "target"; query: TargetQuery }
  | { kind: "needs_mask"; term: string }
  | { kind: "unknown"; term: string }
  /** The thing is known, but the wording asks for a choice no rule here can make ("behind the tree", "the second person"). */
  | { kind: "unsupported"; term: string; words: string[]; reason: string };

const SIDE_PATTERNS: [RegExp, Side][] = [
  [
    /\b(?:(?:on|to|at|in|from)\s+)?(?:the\s+)?(?:very\s+|far\s+)?(?:left|leftmost)(?:\s+hand)?(?:\s+(?:side|edge|corner|end|half))?\b/g,
    "left",
  ],
  [
    /\b(?:(?:on|to|at|in|from)\s+)?(?:the\s+)?(?:very\s+|far\s+)?(?:right|rightmost)(?:\s+hand)?(?:\s+(?:side|edge|corner|end|half))?\b/g,
    "right",
  ],
  [
    /\b(?:(?:on|at|in|from|near)\s+)?(?:the\s+)?(?:very\s+)?(?:top|upper|topmost|uppermost)(?:\s+(?:side|edge|corner|end|half|part))?\b/g,
    "top",
  ],
  [
    /\b(?:(?:on|at|in|from|near)\s+)?(?:the\s+)?(?:very\s+)?(?:bottom|lower|lowest|bottommost)(?:\s+(?:side|edge|corner|end|half|part))?\b/g,
    "bottom",
  ],
  [/\b(?:(?:in|at|near)\s+)?(?:the\s+)?(?:middle|center|centre|central)(?:\s+(?:one|part))?\b/g, "center"],
];

const SIZE_PATTERNS: [RegExp, "largest" | "smallest"][] = [
  [/\b(?:biggest|largest|bigger|larger|big|large|huge|tall(?:est|er)?)\b/g, "largest"],
  [/\b(?:smallest|tiniest|smaller|small|little|tiny|short(?:est|er)?)\b/g, "smallest"],
];

const DEPTH_PATTERNS: [RegExp, "foreground" | "background"][] = [
  [
    /\b(?:(?:in|at|from)\s+(?:the\s+)?)?(?:front|foreground)\b|\b(?:closest|nearest|closer|nearer)(?:\s+to\s+(?:the\s+)?(?:camera|viewer|us))?\b/g,
    "foreground",
  ],
  [
    /\b(?:(?:in|at|from|to)\s+(?:the\s+)?)?(?:back|background|distance)\b|\b(?:farthest|furthest|farther|further|distant|far(?:\s+(?:away|off))?)\b(?!\s+(?:left|right))/g,
    "background",
  ],
];

const ORDINALS: Record<string, number> = {
  first: 1,
  "1st": 1,
  second: 2,
  "2nd": 2,
  third: 3,
  "3rd": 3,
  fourth: 4,
  "4th": 4,
  fifth: 5,
  "5th": 5,
};
const ORDINAL_PATTERN = /\b(?:first|second|third|fourth|fifth|1st|2nd|3rd|4th|5th|last)\b/g;

const COUNTS: Record<string, number> = { both: 2, two: 2, three: 3, four: 4, five: 5, "2": 2, "3": 3, "4": 4, "5": 5 };
const COUNT_PATTERN = /\b(?:both|two|three|four|five|[2-5])\b/g;
const ALL_PATTERN = /\b(?:all|every|each|any|everyone|everybody)\b/g;

/** With a colour, the words that tie it to the thing: "the man in red", "the woman wearing a blue coat". */
const COLOUR_CONTEXT =
  /\b(?:in|wearing|dressed|with|coloured|painted|shirt|t-shirt|top|jacket|coat|dress|jumper|sweater|hoodie|clothes|outfit|uniform|paint|paintwork)\b/g;

/** Words that say nothing about which one: articles, "one", opinions of the thing removed. */
const FILLER =
  /\b(?:the|a|an|this|that|these|those|one|ones|of|just|only|please|here|there|who|which|is|are|unwanted|annoying|random|distracting|ugly|extra|stray|whole|entire)\b/g;

/** The word and its possible singulars: "puppies" -> "puppy", "buses" -> "bus", "knives" -> "knife". */
function singularForms(word: string): string[] {
  const forms = [
    word,
    word.replace(/ies$/, "y"),
    word.replace(/ves$/, "fe"),
    word.replace(/ves$/, "f"),
    word.replace(/(ss|sh|ch|x|s)es$/, "$1"),
    word.replace(/s$/, ""),
  ];
  return [...new Set(forms)];
}
/** Labels for a phrase whose last word may be plural, and whether it was. */
function lookUp(leading: string, last: string): { labels: string[]; plural: boolean } | undefined {
  for (const form of singularForms(last)) {
    const labels = SYNONYMS[leading ? `${leading} ${form}` : form];
    if (labels) return { labels, plural: form !== last };
  }
  return undefined;
}

/** Words that place one thing by another ("the lamp next to the sofa"). */
const RELATION =
  /^(?:behind|next|beside|besides|near|nearby|between|under|underneath|below|beneath|above|over|on|in|at|with|by|holding|carrying|riding|against|inside|into|onto|from|to|around|across|along|past|toward|towards|without|wearing)$/;

/** The words of `text` (split on spaces) that a pattern's matches cover. */
function markMatches(text: string, pattern: RegExp, used: boolean[], starts: number[]): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(pattern)) {
    const from = match.index;
    const to = from + match[0].length;
    starts.forEach((start, index) => {
      if (start >= from && start < to) used[index] = true;
    });
    found.push(match[0]);
  }
  return found;
}

/** Reads one removal term ("the red car on the left", "all the people", "text"). */
export function readTerm(term: string): TermReading {
  const text = term
    .toLowerCase()
    .trim()
    .replace(/\b(top|bottom|upper|lower)-(left|right)\b/g, "$1 $2")
    .replace(/\b(left|right)-(hand|most)\b/g, "$1$2")
    .replace(/\blefthand\b/g, "left hand")
    .replace(/\brighthand\b/g, "right hand");
  const words = text.split(/[^a-z0-9'-]+/).filter(Boolean);
  const head = findHeadNoun(words);
  if (!head) return NEEDS_A_MASK.test(text) ? { kind: "needs_mask", term } : { kind: "unknown", term };
  const phrase = words.join(" ");
  const starts: number[] = [];
  let position = 0;
  for (const word of words) {
    starts.push(position);
    position += word.length + 1;
  }
  const used = words.map((_, index) => index >= head.from && index < head.to);
  const mark = (pattern: RegExp) => markMatches(phrase, pattern, used, starts);

  const sides = SIDE_PATTERNS.filter(([pattern]) => mark(pattern).length > 0).map(([, side]) => side);
  const sizes = SIZE_PATTERNS.filter(([pattern]) => mark(pattern).length > 0).map(([, size]) => size);
  const depths = DEPTH_PATTERNS.filter(([pattern]) => mark(pattern).length > 0).map(([, depth]) => depth);
  const ordinalWords = mark(ORDINAL_PATTERN);
  const countWords = mark(COUNT_PATTERN);
  const everything = mark(ALL_PATTERN).length > 0;
  // A colour word before a noun is an adjective ("orange car"), not the fruit: the head search already skipped it.
  const colourWord = findColour(words.filter((_, index) => !used[index]).join(" "));
  if (colourWord) {
    mark(new RegExp(`\\b${colourWord.name}\\b`, "g"));
    mark(COLOUR_CONTEXT);
  }
  mark(FILLER);
  const unsupported = (reason: string): TermReading => ({
    kind: "unsupported",
    term,
    words: words.filter((_, index) => !used[index]),
    reason,
  });

  const unread = words.filter((_, index) => !used[index]);
  const otherThing = unread.find((word) => lookUp("", word));
  if (otherThing) {
    // "the person behind the car", "the dog next to the cat": how two things stand to each other is beyond boxes.
    return unsupported(
      `it names two things ("${otherThing}" and "${words.slice(head.from, head.to).join(" ")}"), and how one stands to the other cannot be read from the detector's boxes`,
    );
  }
  const before = words.slice(0, head.from);
  if (before.some((_, index) => !used[index]) && before.some((word) => RELATION.test(word))) {
    // "the lamp next to the sofa": the noun found is where the thing is, not the thing; removing the sofa would be wrong.
    const thing = before.filter((_, index) => !used[index]).join(" ");
    return unsupported(
      `the thing meant ("${thing}") is placed by the ${words.slice(head.from, head.to).join(" ")}, and the detector cannot find it by itself`,
    );
  }
  if ((sides.includes("left") && sides.includes("right")) || (sides.includes("top") && sides.includes("bottom"))) {
    return unsupported("the places named contradict each other");
  }
  if (sizes.length > 1 || depths.length > 1) return unsupported("the sizes or distances named contradict each other");
  if (ordinalWords.length > 1 || countWords.length > 1) return unsupported("it names more than one number");
  const plural =
    head.plural || /\b(?:people|men|women|children|crowd|passersby|passers-by|ladies|gentlemen|cattle)\b/.test(phrase);
  const count = countWords[0] === undefined ? undefined : COUNTS[countWords[0]];
  const ordinalWord = ordinalWords[0];
  let ordinal: number | undefined;
  if (ordinalWord !== undefined) {
    // "the last car on the right" is the rightmost; "the second from the left" counts along the side.
    if (ordinalWord === "last") {
      if (sides.length !== 1) return unsupported('"last" needs a side to count from, as in "the last car on the right"');
      ordinal = 1;
    } else {
      if (sides.length !== 1 && !sizes[0]) {
        return unsupported(
          `"${ordinalWord}" needs a side or a size to count by ("${ordinalWord} from the left", "${ordinalWord} largest")`,
        );
      }
      ordinal = ORDINALS[ordinalWord];
    }
    if (plural || everything || count !== undefined)
      return unsupported(`"${ordinalWord}" picks one, but the term asks for several`);
  }
  if ((everything || plural) && count === undefined && sizes[0] && ordinal === undefined) {
    return unsupported(`"${sizes[0] === "largest" ? "biggest" : "smallest"}" picks one, but the term asks for all of them`);
  }
  const all = count === undefined && (everything || (plural && !/^one of\b/.test(phrase)));
  return {
    kind: "target",
    query: {
      term: text,
      labels: head.labels,
      all,
      count,
      sides,
      size: sizes[0],
      depth: depths[0],
      ordinal,
      colour: colourWord?.rgb,
      unread,
    },
  };
}

/** Leading words that say how many, not what: "all the", "every", "the", "a". */
const OPEN_LEAD = /^(?:(?:all|every|each|any)\s+(?:of\s+)?)?(?:(?:the|a|an|these|those|this|that)\s+)?/;

/**
 * The query for a thing only an open-vocabulary detector can look for
 * ("the trash can", "all power lines"): the words themselves are the label
 * it is asked for. "all"/"every" (or a plural the COCO words would have read)
 * takes every match; otherwise the most confident. No place or size is read:
 * those words stay in the phrase the detector is given. Undefined when
 * nothing is left to look for ("the").
 */
export function openVocabularyQuery(term: string): TargetQuery | undefined {
  const text = term.toLowerCase().replace(/\s+/g, " ").trim();
  const lead = OPEN_LEAD.exec(text)?.[0] ?? "";
  const phrase = text.slice(lead.length).replace(/\./g, " ").replace(/\s+/g, " ").trim();
  if (phrase.length === 0) return undefined;
  return {
    term: text,
    labels: [phrase],
    all: /^(?:all|every|each|any)\b/.test(lead),
    count: undefined,
    sides: [],
    size: undefined,
    depth: undefined,
    ordinal: undefined,
    colour: undefined,
    unread: [],
  };
}

/** The head noun: two-word names first ("stop sign", "teddy bears"), then single words from the end (English puts it last). */
function findHeadNoun(words: string[]): { from: number; to: number; labels: string[]; plural: boolean } | undefined {
  for (let i = words.length - 2; i >= 0; i--) {
    const found = lookUp(words[i] ?? "", words[i + 1] ?? "");
    if (found) return { from: i, to: i + 2, ...found };
  }
  for (let i = words.length - 1; i >= 0; i--) {
    const word = words[i] ?? "";
    if (word === "orange" && i < words.length - 1 && words.slice(i + 1).some((next) => lookUp("", next))) continue;
    const found = lookUp("", word);
    if (found) return { from: i, to: i + 1, ...found };
  }
  return undefined;
}

function centre(box: Box): [number, number] {
  return [box.x + box.width / 2, box.y + box.height / 2];
}

function area(detection: Detection): number {
  return detection.box.width * detection.box.height;
}

export type Selection =
  | { kind: "found"; detections: Detection[] }
  /** None of the matches fits the qualifiers (or there is none at all). */
  | { kind: "not_found"; message: string }
  /** Several fit and the term does not say which. */
  | { kind: "ambiguous"; message: string };

interface Frame {
  width: number;
  height: number;
  meanColour?: (box: Box) => Rgb;
}

/**
 * The detections a query points at. Plurals and "all" take every match that
 * fits the place and distance named; "both"/"two" exactly that many; a
 * singular takes the one at the named place (the extreme one: "the car on the
 * left" is the leftmost car), of the named size, rank or colour, else the most
 * confident. A qualifier nothing fits is an answer too: "not found", or
 * "ambiguous" when several fit equally, never a silent pick of another one.
 */
export function selectDetections(query: TargetQuery, detections: Detection[], frame: Frame): Selection {
  const candidates = detections.filter((detection) => query.labels.includes(detection.label));
  const name = query.term;
  if (candidates.length === 0) {
    return { kind: "not_found", message: `No ${name} ${query.all || query.count ? "were" : "was"} found in the image.` };
  }
  let pool = candidates;
  if (query.unread.length > 0 && candidates.length > 1) {
    return {
      kind: "ambiguous",
      message: `${candidates.length} matches were found for "${name}", and "${query.unread.join(" ")}" cannot tell them apart; say which by place ("on the left"), size ("the largest"), colour, or send a mask.`,
    };
  }
  const noun = candidates.length === 1 ? "the only match" : `the ${candidates.length} matches`;

  if (query.depth) {
    pool = byDepth(pool, query.depth, frame);
    if (pool.length === 0) {
      return {
        kind: "not_found",
        message:
          candidates.length === 1
            ? `No ${name} was found: the only ${query.labels[0]} found is large in the frame, not in the background.`
            : `No ${name} was found: ${noun} are about the same size, so none stands out as ${query.depth === "background" ? "farther" : "nearer"}.`,
      };
    }
  }

  const otherQualifier = query.size || query.colour || query.depth || query.all || query.count !== undefined;
  if (query.sides.length > 0 && query.ordinal === undefined && otherQualifier) {
    pool = pool.filter((detection) => query.sides.every((side) => isOnSide(detection.box, side, frame, 0)));
    if (pool.length === 0) return { kind: "not_found", message: `No ${name} was found (none of ${noun} is there).` };
  }

  if (query.ordinal !== undefined) {
    const ranked = [...pool].sort((a, b) => rank(b, query, frame) - rank(a, query, frame));
    const chosen = ranked[query.ordinal - 1];
    if (!chosen) return { kind: "not_found", message: `No ${name} was found: only ${ranked.length} fit.` };
    return { kind: "found", detections: [chosen] };
  }
  if (query.count !== undefined) {
    if (pool.length < query.count) {
      // Say both numbers: "No the three people were found" read as if none had been.
      return {
        kind: "not_found",
        message: `"${name}" asks for ${query.count}, but only ${pool.length} ${pool.length === 1 ? "was" : "were"} found in the image; ask for fewer, or send a mask.`,
      };
    }
    if (pool.length === query.count) return { kind: "found", detections: pool };
    if (query.sides.length === 0 && !query.size) {
      return {
        kind: "ambiguous",
        message: `${pool.length} fit "${name}"; say which ${query.count} (on the left, the largest…) or send a mask.`,
      };
    }
    const ranked = [...pool].sort((a, b) => rank(b, query, frame) - rank(a, query, frame));
    return { kind: "found", detections: ranked.slice(0, query.count) };
  }
  if (query.all) return { kind: "found", detections: pool };

  if (query.size) return { kind: "found", detections: [best(pool, (detection) => rank(detection, query, frame))] };
  if (query.sides.length > 0 && !query.colour && !query.depth) {
    if (pool.length === 1) {
      // One match and a side: the words still have to be true of it.
      const only = pool[0] as Detection;
      const fits = query.sides.every((side) => isOnSide(only.box, side, frame, 0.1));
      return fits
        ? { kind: "found", detections: [only] }
        : { kind: "not_found", message: `No ${name} was found: ${noun} is elsewhere.` };
    }
    return { kind: "found", detections: [best(pool, (detection) => rank(detection, query, frame))] };
  }
  const { colour } = query;
  if (colour && frame.meanColour && pool.length > 1) {
    const meanColour = frame.meanColour;
    const distance = (detection: Detection) => {
      const mean = meanColour(detection.box);
      return (mean[0] - colour[0]) ** 2 + (mean[1] - colour[1]) ** 2 + (mean[2] - colour[2]) ** 2;
    };
    return { kind: "found", detections: [best(pool, (detection) => -distance(detection))] };
  }
  if (query.depth && pool.length > 1) {
    return {
      kind: "ambiguous",
      message: `${pool.length} fit "${name}"; say which one (on the left, the smallest…), say "all", or send a mask.`,
    };
  }
  return { kind: "found", detections: [best(pool, (detection) => detection.score)] };
}

function best(pool: Detection[], score: (detection: Detection) => number): Detection {
  return pool.reduce((top, detection) => (score(detection) > score(top) ? detection : top));
}

/**
 * Distance read from size, as people read a photo: among matches of one kind,
 * the ones under half the area of the largest are farther back. A single match
 * is in the background only when it is small in the frame.
 */
function byDepth(pool: Detection[], depth: "foreground" | "background", frame: Frame): Detection[] {
  if (pool.length === 1) {
    const only = pool[0] as Detection;
    const small = only.box.height < 0.5 * frame.height && only.box.width < 0.5 * frame.width;
    return depth === "foreground" || small ? pool : [];
  }
  const largest = Math.max(...pool.map(area));
  return pool.filter((detection) => area(detection) < 0.5 * largest === (depth === "background"));
}

/** Higher is a better fit: the extreme along the named sides (counted first), else by size. */
function rank(detection: Detection, query: TargetQuery, frame: Frame): number {
  const [x, y] = centre(detection.box);
  if (query.sides.length > 0) {
    let score = 0;
    for (const side of query.sides) {
      if (side === "left") score -= x / frame.width;
      else if (side === "right") score += x / frame.width;
      else if (side === "top") score -= y / frame.height;
      else if (side === "bottom") score += y / frame.height;
      else score -= Math.hypot(x / frame.width - 0.5, y / frame.height - 0.5);
    }
    return score;
  }
  return query.size === "smallest" ? -area(detection) : area(detection);
}

/** Whether a box's centre is on the named side of the frame; `slack` (a fraction of the frame) widens the half. */
function isOnSide(box: Box, side: Side, frame: { width: number; height: number }, slack: number): boolean {
  const [x, y] = centre(box);
  const u = x / frame.width;
  const v = y / frame.height;
  switch (side) {
    case "left":
      return u < 0.5 + slack;
    case "right":
      return u >= 0.5 - slack;
    case "top":
      return v < 0.5 + slack;
    case "bottom":
      return v >= 0.5 - slack;
    case "center":
      return Math.abs(u - 0.5) < 0.25 + slack && Math.abs(v - 0.5) < 0.25 + slack;
  }
}
