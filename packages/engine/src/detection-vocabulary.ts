import type { Box, Detection } from "./engine.ports";
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

export type Position = "left" | "right" | "top" | "bottom" | "center" | "largest" | "smallest";

export interface TargetQuery {
  /** The words as asked, for messages. */
  term: string;
  /** Detector labels that satisfy it. */
  labels: string[];
  /** "all the people", "cars", "both dogs". */
  all: boolean;
  position: Position | undefined;
  colour: Rgb | undefined;
}

export type TermReading =
  | { kind: "target"; query: TargetQuery }
  | { kind: "needs_mask"; term: string }
  | { kind: "unknown"; term: string };

const POSITION_PATTERNS: [RegExp, Position][] = [
  [/\b(?:on|to|at)\s+(?:the\s+)?(?:far\s+)?left\b|\bleft(?:most|-hand|\s+hand)?\b/, "left"],
  [/\b(?:on|to|at)\s+(?:the\s+)?(?:far\s+)?right\b|\bright(?:most|-hand|\s+hand)?\b/, "right"],
  [/\b(?:at|on)\s+(?:the\s+)?top\b|\b(?:top|upper|topmost|uppermost)\b/, "top"],
  [/\b(?:at|on)\s+(?:the\s+)?bottom\b|\b(?:bottom|lower|lowest|bottommost)\b/, "bottom"],
  [/\b(?:in\s+the\s+)?(?:middle|center|centre)\b|\bcentral\b/, "center"],
  [/\b(?:biggest|largest|closest|nearest|(?:in|from)\s+(?:the\s+)?(?:front|foreground))\b/, "largest"],
  [/\b(?:smallest|tiniest|farthest|furthest|distant|(?:in|from)\s+the\s+(?:back|background|distance))\b/, "smallest"],
];

const ALL_WORDS = /\b(?:all|every|each|both|any|everyone|everybody)\b/;

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

/** Reads one removal term ("the red car on the left", "all the people", "text"). */
export function readTerm(term: string): TermReading {
  const text = term.toLowerCase().trim();
  const words = text.split(/[^a-z-]+/).filter(Boolean);
  // Two-word names first ("stop sign", "teddy bears"), then single words from the end: the head noun is last in English.
  for (let i = words.length - 2; i >= 0; i--) {
    const found = lookUp(words[i] ?? "", words[i + 1] ?? "");
    if (found) return { kind: "target", query: query(text, found.labels, found.plural) };
  }
  for (let i = words.length - 1; i >= 0; i--) {
    const word = words[i] ?? "";
    // A colour word before a noun is an adjective ("orange car"), not the fruit.
    if (word === "orange" && i < words.length - 1 && findHead(words.slice(i + 1))) continue;
    const found = lookUp("", word);
    if (found) return { kind: "target", query: query(text, found.labels, found.plural) };
  }
  if (NEEDS_A_MASK.test(text)) return { kind: "needs_mask", term };
  return { kind: "unknown", term };
}

function findHead(words: string[]): boolean {
  return words.some((word) => lookUp("", word) !== undefined);
}

function query(text: string, labels: string[], pluralNoun: boolean): TargetQuery {
  const collective = /\b(?:people|men|women|children|crowd|passersby|passers-by|ladies|gentlemen|cattle)\b/.test(text);
  let position: Position | undefined;
  for (const [pattern, value] of POSITION_PATTERNS) {
    if (pattern.test(text)) {
      position = value;
      break;
    }
  }
  const colourWord = findColour(text.replace(/\borange\b(?=\s*$)/, ""));
  return { term: text, labels, all: pluralNoun || collective || ALL_WORDS.test(text), position, colour: colourWord?.rgb };
}

function centre(box: Box): [number, number] {
  return [box.x + box.width / 2, box.y + box.height / 2];
}

/**
 * The detections a query points at. All matching ones for "all"/plurals (kept
 * to the named side when there is one); otherwise one: the one at the named
 * position, else the one closest to the named colour, else the most confident.
 */
export function selectDetections(
  query: TargetQuery,
  detections: Detection[],
  image: { width: number; height: number; meanColour?: (box: Box) => Rgb },
): Detection[] {
  const candidates = detections.filter((detection) => query.labels.includes(detection.label));
  if (candidates.length === 0) return [];
  if (query.all) {
    if (!query.position || query.position === "largest" || query.position === "smallest") return candidates;
    const onSide = candidates.filter((detection) => isOnSide(detection.box, query.position as Position, image));
    return onSide.length > 0 ? onSide : [pickByPosition(candidates, query.position, image)];
  }
  if (query.position) return [pickByPosition(candidates, query.position, image)];
  const { colour } = query;
  if (colour && image.meanColour && candidates.length > 1) {
    const meanColour = image.meanColour;
    const distance = (detection: Detection) => {
      const mean = meanColour(detection.box);
      return (mean[0] - colour[0]) ** 2 + (mean[1] - colour[1]) ** 2 + (mean[2] - colour[2]) ** 2;
    };
    return [candidates.reduce((best, detection) => (distance(detection) < distance(best) ? detection : best))];
  }
  return [candidates.reduce((best, detection) => (detection.score > best.score ? detection : best))];
}

function isOnSide(box: Box, position: Position, image: { width: number; height: number }): boolean {
  const [x, y] = centre(box);
  switch (position) {
    case "left":
      return x < image.width / 2;
    case "right":
      return x >= image.width / 2;
    case "top":
      return y < image.height / 2;
    case "bottom":
      return y >= image.height / 2;
    default:
      return Math.abs(x - image.width / 2) < image.width / 4 && Math.abs(y - image.height / 2) < image.height / 4;
  }
}

function pickByPosition(candidates: Detection[], position: Position, image: { width: number; height: number }): Detection {
  const score = (detection: Detection): number => {
    const [x, y] = centre(detection.box);
    const area = detection.box.width * detection.box.height;
    switch (position) {
      case "left":
        return -x;
      case "right":
        return x;
      case "top":
        return -y;
      case "bottom":
        return y;
      case "center":
        return -Math.hypot(x - image.width / 2, y - image.height / 2);
      case "largest":
        return area;
      case "smallest":
        return -area;
    }
  };
  return candidates.reduce((best, detection) => (score(detection) > score(best) ? detection : best));
}
