/**
 * Strict base64 for inputs of tens of megabytes: decoded once by Node (no
 * regular expression over the text, which overflows the stack on large
 * inputs, and no character loop, which costs more than the decode itself).
 *
 * Node's decoder accepts both alphabets (`+/` and `-_`) but silently skips
 * any other character and stops at an inner `=`. Every such character makes
 * the output shorter than the text's length implies, so comparing the two
 * lengths rejects them without looking at the characters again.
 */

/** The decoded size the text implies, or undefined when no valid base64 has this shape. */
export function base64DecodedLength(text: string): number | undefined {
  let end = text.length;
  let padding = 0;
  while (padding < 2 && end > 0 && text.charCodeAt(end - 1) === 0x3d) {
    end--;
    padding++;
  }
  // Padding only ever completes a 4-character group; a lone character in the last group carries no whole byte.
  if ((padding > 0 && text.length % 4 !== 0) || end % 4 === 1) return undefined;
  return Math.floor((end * 3) / 4);
}

/** The bytes, or undefined when the text is not base64 (either alphabet, padding optional). */
export function decodeBase64Strict(text: string): Buffer | undefined {
  const expected = base64DecodedLength(text);
  if (expected === undefined) return undefined;
  const bytes = Buffer.from(text, "base64");
  return bytes.length === expected ? bytes : undefined;
}
