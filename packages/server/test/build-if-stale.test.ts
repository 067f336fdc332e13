import { rm, utimes, writeFile } from "node:fs/promises";
import path from "node:path";
import { expect, it } from "vitest";
import { serverDir, sourcesFingerprint } from "../scripts/build-if-stale.mjs";

/**
 * `pnpm start` rebuilds the bundle when, and only when, its sources changed:
 * the fingerprint it compares must notice a new file, an edit, and a deletion
 * in core's sources as in the server's.
 */
it("notices a source file added, edited or deleted", async () => {
  const before = sourcesFingerprint();
  expect(sourcesFingerprint()).toBe(before);
  const probe = path.join(serverDir, "..", "core", "src", `fingerprint-probe-${process.pid}.ts`);
  try {
    await writeFile(probe, "export const probe = 1;\n");
    const added = sourcesFingerprint();
    expect(added).not.toBe(before);
    await writeFile(probe, "export const probe = 2;\n");
    await utimes(probe, new Date(), new Date(Date.now() + 5_000));
    expect(sourcesFingerprint()).not.toBe(added);
  } finally {
    await rm(probe, { force: true });
  }
  expect(sourcesFingerprint()).toBe(before);
});
