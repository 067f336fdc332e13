/**
 * Text helpers shared by the router and the generative catalog: one
 * normalisation and one way of cutting a prompt into clauses, so both read a
 * prompt the same way.
 */

/** Lower case, straight quotes, British/American spellings unified, single spaces. */
export function normalizePrompt(prompt: string): string {
  return prompt
    .toLowerCase()
    .normalize("NFKC")
    .replace(/[\u2018\u2019\u201b]/g, "'")
    .replace(/[\u201c\u201d]/g, '"')
    .replace(/\bgr[ae]yscale\b/g, "greyscale")
    .replace(/\bcolou?r(s|ed|ful)?\b/g, "colour$1")
    .replace(/\bcentre\b/g, "center")
    .replace(/(\d),(\d{3})\b/g, "$1$2")
    .replace(/\s+/g, " ")
    .trim();
}

// Phrases whose "and" does not join two instructions.
const COMPOUNDS: [RegExp, string][] = [
  [/\bblack\s*(?:and|&|n)\s*white\b/g, "black-and-white"],
  [/\bb\s*&\s*w\b/g, "black-and-white"],
  [/\bsalt and pepper\b/g, "salt-and-pepper"],
  [/\bcut and paste\b/g, "cut-and-paste"],
];

/**
 * Cuts a normalised prompt into clauses at sentence punctuation, commas and
 * joining words ("and", "then", "also"). "Black and white" stays one phrase.
 */
export function splitClauses(normalized: string): string[] {
  let text = normalized;
  for (const [pattern, replacement] of COMPOUNDS) text = text.replace(pattern, replacement);
  return text
    .split(/[.;!?]+(?:\s|$)|,|\s+(?:and then|and also|then|and|also|plus|after that|afterwards|&)\s+/)
    .map((clause) => clause.replace(/^(?:and|then|also|plus)\s+/, "").trim())
    .filter((clause) => clause.length > 0);
}

export type Rgb = readonly [number, number, number];

export const COLOUR_NAMES: Readonly<Record<string, Rgb>> = {
  white: [255, 255, 255],
  black: [0, 0, 0],
  grey: [128, 128, 128],
  gray: [128, 128, 128],
  "light grey": [211, 211, 211],
  "light gray": [211, 211, 211],
  "dark grey": [64, 64, 64],
  "dark gray": [64, 64, 64],
  silver: [192, 192, 192],
  red: [220, 20, 20],
  "dark red": [139, 0, 0],
  green: [30, 160, 60],
  "dark green": [0, 100, 0],
  "light green": [144, 238, 144],
  lime: [0, 255, 0],
  blue: [30, 80, 220],
  "dark blue": [0, 0, 139],
  "light blue": [173, 216, 230],
  "sky blue": [135, 206, 235],
  navy: [0, 0, 128],
  teal: [0, 128, 128],
  cyan: [0, 255, 255],
  turquoise: [64, 224, 208],
  yellow: [255, 220, 0],
  gold: [255, 215, 0],
  orange: [255, 140, 0],
  purple: [128, 0, 128],
  violet: [238, 130, 238],
  magenta: [255, 0, 255],
  pink: [255, 160, 190],
  brown: [139, 90, 43],
  beige: [245, 245, 220],
  cream: [255, 253, 208],
  ivory: [255, 255, 240],
  tan: [210, 180, 140],
};

const COLOUR_PATTERN = new RegExp(
  `#(?:[0-9a-f]{6}|[0-9a-f]{3})\\b|\\b(?:${Object.keys(COLOUR_NAMES)
    .sort((a, b) => b.length - a.length)
    .join("|")})\\b`,
);

/** The first colour named in the text ("light blue", "#ffcc00"), if any. */
export function findColour(text: string): { rgb: Rgb; name: string } | undefined {
  const match = COLOUR_PATTERN.exec(text);
  if (!match) return undefined;
  const name = match[0];
  if (name.startsWith("#")) {
    const hex = name.length === 4 ? [...name.slice(1)].map((digit) => digit + digit).join("") : name.slice(1);
    return {
      name,
      rgb: [Number.parseInt(hex.slice(0, 2), 16), Number.parseInt(hex.slice(2, 4), 16), Number.parseInt(hex.slice(4, 6), 16)],
    };
  }
  const rgb = COLOUR_NAMES[name];
  return rgb ? { name, rgb } : undefined;
}
