import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveInputs } from "../src/commands/jobs.commands";

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "retouch-cli-inputs-"));
  // A folder name with glob characters in it: the pattern is only ever the last segment.
  await mkdir(path.join(dir, "shoot [1] (final)"));
  for (const name of ["b.jpg", "a.jpg", "c.PNG", "notes.txt", ".cover.jpg", "ab.webp"]) {
    await writeFile(path.join(dir, "shoot [1] (final)", name), "x");
  }
  await mkdir(path.join(dir, "shoot [1] (final)", "nested.jpg"));
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("resolveInputs: globs", () => {
  const folder = () => path.join(dir, "shoot [1] (final)");

  it("expands * in the last segment to the images there, sorted, the folder's name taken literally", async () => {
    const files = await resolveInputs([path.join(folder(), "*")]);
    expect(files).toEqual([".cover.jpg", "a.jpg", "ab.webp", "b.jpg", "c.PNG"].map((name) => path.join(folder(), name)));
  });

  it("matches ? as one character, and a file only (not a folder named like an image)", async () => {
    expect(await resolveInputs([path.join(folder(), "?.jpg")])).toEqual(["a.jpg", "b.jpg"].map((n) => path.join(folder(), n)));
    expect(await resolveInputs([path.join(folder(), "n*")]).catch((error: Error) => error.message)).toMatch(
      /no JPEG, PNG or WebP images found/,
    );
  });

  it("refuses a pattern that matches nothing, or a folder that does not exist, with a usage error", async () => {
    await expect(resolveInputs([path.join(folder(), "*.gif")])).rejects.toThrow(/no JPEG, PNG or WebP images found/);
    await expect(resolveInputs([path.join(dir, "missing", "*.jpg")])).rejects.toThrow(/no JPEG, PNG or WebP images found/);
  });
});
