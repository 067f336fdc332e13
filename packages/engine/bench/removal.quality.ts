/**
 * The removal part of `pnpm quality` (run after real-photos.quality.ts, which takes the photo names; alone with
 * `pnpm --filter @retouch/engine quality:removal [--max-side N] [PHOTO ...]`): each photo
 * whose reference matte is one person or a clear object has that object removed with
 * the matte, dilated a little, as the user's mask, through the engine as a job runs it
 * (the default engine: PatchMatch fills). Prints per photo the yardstick of
 * test/removal-quality.fixture.ts: ghost (luminance correlation with the original
 * inside the object, each row's mean taken out; clean about 0), tone (fill minus ring in the same rows; clean
 * within ±12 levels), texture (gradient inside the hole over the ring's; flat or
 * blurred about 0.5, copied from the surroundings about 1), outside (mean absolute
 * change beyond the hole; about 0) and the time. --out DIR writes each result as PNG
 * to judge by eye.
 */
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { parseArgs } from "node:util";
import sharp from "sharp";
import { createImageEngine } from "../src/engine";
import { widenUserMask } from "../src/object-removal";
import { median } from "../test/real-photos.fixture";
import { loadRemovalCase, REMOVAL_PHOTOS, removeMarked, scoreRemoval } from "../test/removal-quality.fixture";

const { values, positionals } = parseArgs({
  options: { "max-side": { type: "string" }, out: { type: "string" } },
  allowPositionals: true,
});
const maxSide = values["max-side"] ? Number(values["max-side"]) : Number.POSITIVE_INFINITY;
const names = positionals.filter((name) => REMOVAL_PHOTOS.includes(name));
const photos = names.length ? names : REMOVAL_PHOTOS;
const engine = createImageEngine();

console.log("\nObject removal with the reference matte as the user's mask (dilated 1% of the diagonal), PatchMatch fill\n");
console.log("| Photo | Size | Masked | Ghost (≈0) | Tone (±12) | Texture (≈1) | Outside (≈0) | Time |");
console.log("|---|---|---|---|---|---|---|---|");
const scores: ReturnType<typeof scoreRemoval>[] = [];
for (const name of photos) {
  const removal = await loadRemovalCase(name, maxSide);
  const { width, height } = removal.original;
  const outcome = await removeMarked(engine, removal);
  if (!outcome.result) {
    console.log(`| ${name} | ${width}x${height} | | refused (${outcome.refusal}) | | | | |`);
    continue;
  }
  const score = scoreRemoval(removal.original, outcome.result, removal.object, widenUserMask(removal.mask));
  scores.push(score);
  console.log(
    `| ${name} | ${width}x${height} | ${(100 * score.masked).toFixed(1)}% | ${score.ghost.toFixed(3)} | ${score.tone.toFixed(1)} | ${score.texture.toFixed(2)} | ${score.outside.toFixed(2)} | ${(outcome.milliseconds / 1000).toFixed(2)} s |`,
  );
  if (values.out) {
    await mkdir(values.out, { recursive: true });
    const { data } = outcome.result;
    await writeFile(
      path.join(values.out, `${name}-removed.png`),
      await sharp(Buffer.from(data), { raw: { width, height, channels: 4 } })
        .png()
        .toBuffer(),
    );
  }
}
if (scores.length) {
  const of = (pick: (score: (typeof scores)[number]) => number) => median(scores.map(pick));
  const clean = scores.filter(
    (score) => Math.abs(score.ghost) < 0.1 && Math.abs(score.tone) <= 12 && score.texture >= 0.75,
  ).length;
  console.log(
    `| **median of ${scores.length}** | | | ${of((s) => s.ghost).toFixed(3)} | ${of((s) => s.tone).toFixed(1)} | ${of((s) => s.texture).toFixed(2)} | ${of((s) => s.outside).toFixed(2)} | |`,
  );
  console.log(`\nClean on all three (|ghost| < 0.1, |tone| ≤ 12, texture ≥ 0.75): ${clean} of ${scores.length}.`);
}
