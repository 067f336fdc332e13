import { existsSync } from "node:fs";
import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type ModelMirror, sha256Of, startModelMirror } from "../../../test/support/model-mirror";
import { BUILT_IN_CATALOG, isPullable, type ModelEntry, modelFiles, parseCatalogFile } from "../src/models/model-catalog";
import { ModelLibrary } from "../src/models/model-library";

/**
 * Catalog entries of several files (a segmenter's encoder and decoder, a
 * detector and its vocabulary): each file is fetched and verified on its own,
 * the entry is installed only when every one is, and an entry with a file
 * nobody published a checksum for is never fetched, not even in part.
 */

const encoder = Buffer.from("an encoder's bytes ".repeat(500));
const decoder = Buffer.from("a decoder's bytes ".repeat(300));

function segmenterEntry(overrides: { decoderSha256?: string | undefined } = {}): ModelEntry {
  return {
    name: "test-sam",
    task: "segmenter",
    title: "A segmenter of two files",
    file: "test-sam-encoder.onnx",
    urls: ["https://example.invalid/encoder.onnx"],
    size: encoder.length,
    checksums: { sha256: sha256Of(encoder) },
    checksumSource: "computed by the test",
    extraFiles: [
      {
        role: "decoder",
        file: "test-sam-decoder.onnx",
        urls: ["https://example.invalid/decoder.onnx"],
        size: decoder.length,
        checksums: "decoderSha256" in overrides ? { sha256: overrides.decoderSha256 } : { sha256: sha256Of(decoder) },
        checksumSource: "computed by the test",
      },
    ],
    input: { kind: "mobilesam" },
    licence: { id: "MIT", source: "this test" },
    project: "https://example.invalid/",
  };
}

let mirror: ModelMirror;
beforeAll(async () => {
  mirror = await startModelMirror();
  mirror.serve("test-sam-encoder.onnx", encoder);
  mirror.serve("test-sam-decoder.onnx", decoder);
});
afterAll(() => mirror.close());
beforeEach(() => {
  mirror.requests.length = 0;
});

async function library(entry: ModelEntry): Promise<ModelLibrary> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "retouch-model-files-"));
  return new ModelLibrary({ dir, catalog: { entries: [entry], defaults: {} }, mirror: mirror.url });
}

describe("a model of several files", () => {
  it("is partial with one file there, and a pull fetches only the missing one", async () => {
    const models = await library(segmenterEntry());
    const paths = models.paths("test-sam");
    expect(Object.keys(paths).sort()).toEqual(["decoder", "model"]);
    expect((await models.status("test-sam")).state).toBe("missing");

    await writeFile(paths.model ?? "", encoder);
    const half = await models.status("test-sam");
    expect(half.state).toBe("partial");
    expect(half.files.map((file) => [file.role, file.state])).toEqual([
      ["model", "installed"],
      ["decoder", "missing"],
    ]);

    const pulled = await models.pull("test-sam");
    expect(pulled.downloaded).toBe(true);
    expect(mirror.requests.map((request) => request.file)).toEqual(["test-sam-decoder.onnx"]);
    expect((await models.status("test-sam")).state).toBe("installed");

    const removed = await models.remove("test-sam");
    expect(removed.sort()).toEqual([paths.decoder, paths.model].sort());
    expect(existsSync(paths.model ?? "")).toBe(false);
  });

  it("refuses the file that does not verify, and keeps the entry uninstalled", async () => {
    const models = await library(segmenterEntry({ decoderSha256: sha256Of(Buffer.from("another decoder")) }));
    await expect(models.pull("test-sam")).rejects.toMatchObject({ reason: "checksum_mismatch" });
    expect((await models.status("test-sam")).state).toBe("partial");
    expect(existsSync(models.paths("test-sam").decoder ?? "")).toBe(false);
  });

  it("is never fetched, not even in part, when one of its files has no published checksum", async () => {
    const entry = segmenterEntry({ decoderSha256: undefined });
    entry.extraFiles = (entry.extraFiles ?? []).map((extra) => ({ ...extra, checksums: {} }));
    expect(isPullable(entry)).toBe(false);
    const models = await library(entry);
    await expect(models.pull("test-sam")).rejects.toMatchObject({ reason: "unverifiable" });
    expect(mirror.requests).toEqual([]);
  });
});

describe("the catalog's segmenters and detectors", () => {
  it("lists MobileSAM and SAM 2.1 tiny (pullable) and Grounding DINO tiny (its vocabulary has no published digest)", () => {
    const mobilesam = BUILT_IN_CATALOG.entries.find((entry) => entry.name === "mobilesam");
    const sam2 = BUILT_IN_CATALOG.entries.find((entry) => entry.name === "sam2.1-tiny");
    const groundingDino = BUILT_IN_CATALOG.entries.find((entry) => entry.name === "grounding-dino-tiny");
    expect(mobilesam).toMatchObject({ task: "segmenter", input: { kind: "mobilesam" }, licence: { id: "Apache-2.0" } });
    expect(mobilesam && isPullable(mobilesam)).toBe(true);
    // Both files out of one zip, which the library fetches once for the two.
    expect(sam2).toMatchObject({ task: "segmenter", input: { kind: "sam2" }, licence: { id: "Apache-2.0" } });
    expect(sam2 && isPullable(sam2)).toBe(true);
    const archives = sam2 ? modelFiles(sam2).map((file) => [file.urls[0]?.split("#")[0], file.archiveSize]) : [];
    expect(new Set(archives.map((archive) => archive.join(" "))).size).toBe(1);
    expect(archives).toHaveLength(2);
    expect(groundingDino).toMatchObject({ task: "detector", input: { kind: "grounding-dino" }, licence: { id: "Apache-2.0" } });
    expect(groundingDino && isPullable(groundingDino)).toBe(false);
  });

  it("refuses, in an operator's catalog file, a segmenter without its decoder", () => {
    const { extraFiles: _dropped, ...withoutDecoder } = segmenterEntry();
    const parsed = parseCatalogFile({ models: [withoutDecoder] });
    expect(parsed).toEqual({ problems: ['test-sam: a segmenter model needs an extra file with the role "decoder"'] });
  });
});
