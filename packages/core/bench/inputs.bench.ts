/**
 * `pnpm bench` (in packages/core), second part: what a submission spends on
 * its image before any money moves.
 *
 * - Base64 at the largest accepted image (25 MiB, 35 million characters):
 *   the strict decode against Node's bare decode (the floor) and the two
 *   ways that look at each character (a loop, the former regular expression).
 * - The structural check of `inspectImage` (no pixels decoded) against a full
 *   decode, for camera-like photos at 12 and 40 MP.
 *
 * Times are medians of 7 runs after a warming run, in this process.
 */
import { randomBytes } from "node:crypto";
import os from "node:os";
import { checkImageStructure, sniffImageFormat } from "@retouch/engine";
import { grainyPhoto } from "../../../test/support/large-images";
import { timed } from "../../engine/bench/bench-timing";
import { decodeBase64Strict } from "../src/lib/base64";

const RUNS = 7;

const ms = (value: number) => (value >= 100 ? `${Math.round(value)} ms` : `${value.toFixed(1)} ms`);

/** The alternative to comparing lengths: look at every character. */
function everyCharacterIsBase64(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const ok =
      (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 43 || c === 47 || c === 45 || c === 95;
    if (!ok && !(c === 61 && i >= text.length - 2)) return false;
  }
  return true;
}

/** What `decodeBase64` in the submissions service ran before (it overflows the stack above ~4.47 M characters). */
const FORMER_PATTERN = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

async function base64Figures(): Promise<void> {
  const bytes = randomBytes(25 * 1024 * 1024);
  // Through JSON, as a request body delivers it.
  const text = (JSON.parse(JSON.stringify({ image: bytes.toString("base64") })) as { image: string }).image;
  const floor = await timed(() => Buffer.from(text, "base64"), RUNS);
  const strict = await timed(() => decodeBase64Strict(text), RUNS);
  const loop = await timed(() => everyCharacterIsBase64(text), RUNS);
  let former: string;
  try {
    former = ms(await timed(() => FORMER_PATTERN.test(text), RUNS));
  } catch (error) {
    former = `fails: ${(error as Error).name} (${(error as Error).message})`;
  }
  console.log(
    `## Base64: 25 MiB image, ${(text.length / 1e6).toFixed(1)} M characters (${(text.length / 2 ** 20).toFixed(1)} MiB)\n`,
  );
  console.log("| step | median | vs the floor |");
  console.log("|---|---|---|");
  console.log(`| Node's decode alone (the floor) | ${ms(floor)} | 1.00 |`);
  console.log(`| strict decode: the decode + a length comparison | ${ms(strict)} | ${(strict / floor).toFixed(2)} |`);
  console.log(`| a check of every character (not used) | ${ms(loop)} | ${(loop / floor).toFixed(1)} |`);
  console.log(`| the former regular expression | ${former} | |`);
}

async function structureFigures(): Promise<void> {
  const inputs: Array<[string, () => Promise<Buffer>]> = [
    ["JPEG 12 MP (4000x3000), q95", async () => (await grainyPhoto(4000, 3000, 6)).jpeg({ quality: 95 }).toBuffer()],
    ["JPEG 40 MP (7300x5470), q92", async () => (await grainyPhoto(7300, 5470, 6)).jpeg({ quality: 92 }).toBuffer()],
    [
      "JPEG 40 MP, progressive",
      async () => (await grainyPhoto(7300, 5470, 6)).jpeg({ quality: 92, progressive: true }).toBuffer(),
    ],
    ["PNG 7.7 MP (3200x2400), grain", async () => (await grainyPhoto(3200, 2400, 1)).png().toBuffer()],
    ["PNG 12 MP (4000x3000), smooth", async () => (await grainyPhoto(4000, 3000, 0)).png().toBuffer()],
    ["PNG 40 MP (7300x5470), smooth", async () => (await grainyPhoto(7300, 5470, 0)).png().toBuffer()],
    ["WebP 40 MP (7300x5470), q90", async () => (await grainyPhoto(7300, 5470, 3)).webp({ quality: 90 }).toBuffer()],
  ];
  const { default: sharp } = await import("sharp");
  console.log("\n## Structure check (inspectImage) vs decoding\n");
  console.log("| input | size | structure check | header (sharp metadata) | full decode | check / decode |");
  console.log("|---|---|---|---|---|---|");
  for (const [name, make] of inputs) {
    const bytes = await make();
    const format = sniffImageFormat(bytes);
    if (!format) throw new Error(`${name}: not sniffed`);
    const check = await timed(() => checkImageStructure(bytes, format), RUNS);
    const header = await timed(() => sharp(bytes, { limitInputPixels: false }).metadata(), RUNS);
    const decode = await timed(() => sharp(bytes, { limitInputPixels: false, failOn: "error" }).raw().toBuffer(), RUNS);
    console.log(
      `| ${name} | ${(bytes.length / 1e6).toFixed(1)} MB | ${ms(check)} | ${ms(header)} | ${ms(decode)} | ${((100 * check) / decode).toFixed(1)} % |`,
    );
  }
}

console.log("# Inputs\n");
console.log(
  `Machine: ${os.cpus()[0]?.model ?? "unknown CPU"}, ${os.cpus().length} cores; load average at start ${os
    .loadavg()
    .map((value) => value.toFixed(2))
    .join(", ")}\n`,
);
await base64Figures();
await structureFigures();
console.log(
  `\nLoad average at the end: ${os
    .loadavg()
    .map((value) => value.toFixed(2))
    .join(", ")}`,
);
