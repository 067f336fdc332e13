import { mkdir, mkdtemp, readdir, readFile, utimes, writeFile } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { catalogModelOptions, parseConfig } from "@retouch/core";
import {
  BUILT_IN_CATALOG,
  checkCatalog,
  extendCatalog,
  isPermissive,
  type ModelCatalog,
  type ModelEntry,
  ModelLibrary,
  OnnxBackgroundRemover,
} from "@retouch/engine";
import { create as createArchive } from "tar";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ZipFile } from "yazl";
import { freePort } from "../../../test/support/free-port";
import { type ModelMirror, sha256Of, startModelMirror, writeTestCatalog } from "../../../test/support/model-mirror";
import { redSaliencyModel } from "../../engine/test/onnx-model.builder";

/** A real ONNX model (about 64 kB) served by a real HTTP server on loopback. */
const model = redSaliencyModel({ padding: 16_000 });
const FILE = "test-red.onnx";
let mirror: ModelMirror;
let catalog: ModelCatalog;
let dir: string;

function library(options: { mirror?: string } = {}): ModelLibrary {
  return new ModelLibrary({ dir, catalog, mirror: options.mirror ?? mirror.url });
}

const quick = { retryDelayMs: 10 };

/** An npm-style package archive (package/...) holding the model and another file, as a registry serves it. */
const ARCHIVE = "test-models-1.0.0.tgz";
let archiveBytes: Buffer;

/** A library whose catalog publishes test-red at `url` alone (no mirror): a URL into an archive. */
async function archiveLibrary(url: string): Promise<ModelLibrary> {
  const catalogDir = await mkdtemp(path.join(os.tmpdir(), "retouch-catalog-"));
  const config = parseConfig({
    RETOUCH_MODEL_CATALOG: await writeTestCatalog(catalogDir, [{ name: "test-red", bytes: model, urls: [url] }]),
  });
  return new ModelLibrary({ dir, catalog: config.models.catalog });
}

async function packageArchive(): Promise<Buffer> {
  const root = await mkdtemp(path.join(os.tmpdir(), "retouch-package-"));
  await mkdir(path.join(root, "package", "models"), { recursive: true });
  await writeFile(path.join(root, "package", "package.json"), JSON.stringify({ name: "test-models", version: "1.0.0" }));
  await writeFile(path.join(root, "package", "models", FILE), model);
  await writeFile(path.join(root, "package", "models", "other.onnx"), redSaliencyModel({ padding: 9_000 }));
  // As large as the model, but other bytes.
  await writeFile(path.join(root, "package", "models", "twin.onnx"), Buffer.alloc(model.length, 7));
  const file = path.join(root, ARCHIVE);
  await createArchive({ gzip: true, file, cwd: root }, ["package"]);
  return readFile(file);
}

beforeAll(async () => {
  mirror = await startModelMirror();
  mirror.serve(FILE, model);
  // The catalog comes through RETOUCH_MODEL_CATALOG, as an operator's would.
  const catalogDir = await mkdtemp(path.join(os.tmpdir(), "retouch-catalog-"));
  const config = parseConfig({
    RETOUCH_MODEL_CATALOG: await writeTestCatalog(catalogDir, [
      { name: "test-red", bytes: model },
      { name: "test-wrong", bytes: model, sha256: sha256Of(Buffer.from("another file")) },
    ]),
  });
  catalog = config.models.catalog;
  mirror.serve("test-wrong.onnx", model);
  archiveBytes = await packageArchive();
  mirror.serve(ARCHIVE, archiveBytes);
});
afterAll(() => mirror.close());
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "retouch-models-"));
  mirror.requests.length = 0;
  mirror.ignoreRange(false);
});

describe("the built-in catalog", () => {
  it("gives every model its URLs, size, sha256, input and licence; defaults are permissive and verifiable", () => {
    const names = BUILT_IN_CATALOG.entries.map((entry) => entry.name);
    expect(names).toEqual([
      "isnet-general-use",
      "birefnet-general-lite",
      "u2netp",
      "lama",
      "migan",
      "mobilesam",
      "sam2.1-tiny",
      "grounding-dino-tiny",
    ]);
    for (const entry of BUILT_IN_CATALOG.entries) {
      expect(entry.urls.every((url) => url.startsWith("https://"))).toBe(true);
      // Grounding DINO's card gives its size in MB only: that file is checked by its digest alone.
      if (entry.name !== "grounding-dino-tiny") expect(entry.size).toBeGreaterThan(1_000_000);
      expect(entry.checksums.sha256).toMatch(/^[0-9a-f]{64}$/);
      expect(entry.licence.source).not.toBe("");
      expect(entry.checksumSource).not.toBe("unknown");
    }
    expect(BUILT_IN_CATALOG.defaults).toEqual({ background: "isnet-general-use", inpainting: "migan" });
    const isnet = BUILT_IN_CATALOG.entries[0] as ModelEntry;
    expect(isPermissive(isnet.licence.id)).toBe(true);
    expect(isnet.input).toEqual({ kind: "isnet", size: 1024, runSize: 704, mean: [0.485, 0.456, 0.406], std: [1, 1, 1] });
  });

  it("refuses a default with a licence that is not permissive, or with no checksum", () => {
    const isnet = BUILT_IN_CATALOG.entries[0] as ModelEntry;
    const restricted = { ...isnet, name: "rmbg", licence: { id: "bria-rmbg-1.4", source: "model card" } };
    expect(() => checkCatalog({ entries: [restricted], defaults: { background: "rmbg" } })).toThrow(/not a permissive one/);
    const unverified = { ...isnet, name: "mystery", checksums: {} };
    expect(() => checkCatalog({ entries: [unverified], defaults: { background: "mystery" } })).toThrow(
      /checksum or size is unknown/,
    );
    // An operator's file may add such a model (to be chosen by name), but it never becomes a default.
    const extended = extendCatalog(BUILT_IN_CATALOG, [{ ...restricted, name: "isnet-general-use" }]);
    expect(extended.defaults.background).toBeUndefined();
  });

  it("is what RETOUCH_BACKGROUND_MODEL names are checked against; paths still work", async () => {
    expect(parseConfig({}).models).toMatchObject({ background: "isnet-general-use", download: true, mirror: undefined });
    expect(parseConfig({ RETOUCH_BACKGROUND_MODEL: "u2netp", RETOUCH_MODEL_DOWNLOAD: "off" }).models).toMatchObject({
      background: "u2netp",
      download: false,
    });
    expect(parseConfig({ RETOUCH_DATA_DIR: "/srv/retouch" }).models.dir).toBe("/srv/retouch/models");
    expect(parseConfig({ RETOUCH_MODELS_DIR: "/models" }).models.dir).toBe("/models");
    const problems = (env: Record<string, string>) => {
      try {
        parseConfig(env);
        return "";
      } catch (error) {
        return (error as Error).message;
      }
    };
    expect(problems({ RETOUCH_BACKGROUND_MODEL: "lama" })).toMatch(
      /name of a background model in the catalog \(isnet-general-use/,
    );
    expect(problems({ RETOUCH_BACKGROUND_MODEL: "u2netp", RETOUCH_BACKGROUND_MODEL_KIND: "isnet" })).toMatch(
      /applies only to a model given by path/,
    );
    // The size a catalog model runs at may be chosen (IS-Net: 1024 for the published quality).
    expect(parseConfig({ RETOUCH_BACKGROUND_MODEL_SIZE: "1024" }).models).toMatchObject({ backgroundSize: 1024 });
    const isnet = BUILT_IN_CATALOG.entries.find((entry) => entry.name === "isnet-general-use") as ModelEntry;
    expect(catalogModelOptions(isnet, "/m/isnet.onnx")).toMatchObject({ inputSize: 704 });
    expect(catalogModelOptions(isnet, "/m/isnet.onnx", 1024)).toMatchObject({ inputSize: 1024 });
    expect(problems({ RETOUCH_MODEL_MIRROR: "ftp://mirror" })).toMatch(/RETOUCH_MODEL_MIRROR/);
    expect(problems({ RETOUCH_MODEL_MIRROR: "https://user:secret@mirror/models" })).toMatch(
      /RETOUCH_MODEL_MIRROR: must not contain a user name or password/,
    );
    expect(problems({ RETOUCH_MODEL_DOWNLOAD: "later" })).toMatch(/RETOUCH_MODEL_DOWNLOAD/);
    const badCatalog = path.join(dir, "bad.json");
    await writeFile(badCatalog, JSON.stringify({ models: [{ name: "x", task: "background" }] }));
    expect(problems({ RETOUCH_MODEL_CATALOG: badCatalog })).toMatch(/RETOUCH_MODEL_CATALOG .*bad\.json: models\.0\.file/);
    const modelFile = path.join(dir, "isnet-custom.onnx");
    await writeFile(modelFile, model);
    expect(parseConfig({ RETOUCH_BACKGROUND_MODEL: modelFile })).toMatchObject({
      backgroundModel: { path: modelFile },
      models: { background: undefined },
    });
  });
});

describe("pulling a model from a mirror", () => {
  it("downloads it, verifies the checksum, and the file loads as an ONNX model", async () => {
    const models = library();
    expect(await models.status("test-red")).toMatchObject({ state: "missing" });
    const result = await models.pull("test-red");
    expect(result).toMatchObject({ downloaded: true, bytes: model.length, resumedFrom: 0, path: path.join(dir, FILE) });
    expect(await readFile(result.path)).toEqual(model);
    expect(await readdir(dir)).toEqual([FILE]);
    expect(mirror.requests).toEqual([{ file: FILE, range: undefined, status: 200 }]);
    expect(await models.status("test-red")).toMatchObject({ state: "installed", bytes: model.length });
    await new OnnxBackgroundRemover({ modelPath: result.path, kind: "u2net" }).load();
    // Pulling again checks the installed copy and fetches nothing.
    expect(await models.pull("test-red")).toMatchObject({ downloaded: false });
    expect(mirror.requests).toHaveLength(1);
  });

  it("resumes an interrupted transfer with a Range request", async () => {
    mirror.cutNext(FILE, 30_000);
    const retries: string[] = [];
    const result = await library().pull("test-red", { ...quick, onRetry: ({ error }) => void retries.push(error.message) });
    expect(retries).toHaveLength(1);
    expect(retries[0]).toMatch(/stopped after 30000 bytes/);
    expect(mirror.requests).toEqual([
      { file: FILE, range: undefined, status: 200 },
      { file: FILE, range: "bytes=30000-", status: 206 },
    ]);
    expect(result).toMatchObject({ downloaded: true, resumedFrom: 30_000, bytes: model.length });
    expect(await readFile(result.path)).toEqual(model);
  });

  it("resumes after a restart from the part left on disk", async () => {
    mirror.cutNext(FILE, 20_000);
    // One attempt only: the process "dies" with a part file on disk.
    await expect(library().pull("test-red", { attempts: 1 })).rejects.toMatchObject({ reason: "download_failed" });
    expect(await library().status("test-red")).toMatchObject({ state: "partial", bytes: 20_000 });
    const result = await library().pull("test-red");
    expect(mirror.requests.at(-1)).toEqual({ file: FILE, range: "bytes=20000-", status: 206 });
    expect(await readFile(result.path)).toEqual(model);
  });

  it("restarts cleanly when the kept part is not the start of the file, or the host ignores Range", async () => {
    await writeFile(path.join(dir, `${FILE}.part`), Buffer.alloc(150, 7));
    const retries: string[] = [];
    const result = await library().pull("test-red", { ...quick, onRetry: ({ error }) => void retries.push(error.message) });
    expect(retries[0]).toMatch(/resumed file does not verify .* fetched whole/);
    expect(mirror.requests.map((request) => request.range)).toEqual(["bytes=150-", undefined]);
    expect(await readFile(result.path)).toEqual(model);

    mirror.requests.length = 0;
    await library().remove("test-red");
    await writeFile(path.join(dir, `${FILE}.part`), model.subarray(0, 100));
    mirror.ignoreRange(true);
    const whole = await library().pull("test-red");
    expect(mirror.requests).toEqual([{ file: FILE, range: "bytes=100-", status: 200 }]);
    expect(whole.resumedFrom).toBe(0);
    expect(await readFile(whole.path)).toEqual(model);
  });

  it("deletes a file whose checksum does not match and says so", async () => {
    const error = await library()
      .pull("test-wrong")
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ name: "ModelError", reason: "checksum_mismatch" });
    expect((error as Error).message).toMatch(
      /test-wrong from http:\/\/127\.0\.0\.1:\d+\/models\/test-wrong\.onnx is not the published one \(sha256 [0-9a-f]{64}, expected [0-9a-f]{64}\); it was deleted\. Check the mirror's copy\./,
    );
    expect(await readdir(dir)).toEqual([]);
    expect(await library().status("test-wrong")).toMatchObject({ state: "missing" });
  });

  it("fails with a reason a person can act on when the mirror cannot be reached", async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const error = await library({ mirror: closed })
      .pull("test-red", quick)
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ reason: "download_failed" });
    expect((error as Error).message).toMatch(
      /Could not download test-red: http:\/\/127\.0\.0\.1:\d+\/test-red\.onnx could not be reached/,
    );
    expect(await readdir(dir)).toEqual([]);
  });

  it("tries a URL `attempts` times, telling onRetry before each retry; a 404 is a definite answer, tried once", async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const retries: number[] = [];
    const onRetry = ({ attempt }: { attempt: number }) => void retries.push(attempt);
    await expect(library({ mirror: closed }).pull("test-red", { ...quick, attempts: 3, onRetry })).rejects.toMatchObject({
      reason: "download_failed",
    });
    expect(retries).toEqual([1, 2]);

    const empty = await startModelMirror();
    try {
      retries.length = 0;
      await expect(library({ mirror: empty.url }).pull("test-red", { ...quick, onRetry })).rejects.toMatchObject({
        reason: "download_failed",
      });
      expect(retries).toEqual([]);
      expect(empty.requests).toEqual([{ file: FILE, range: undefined, status: 404 }]);
    } finally {
      await empty.close();
    }
  });

  it("ends as cancelled when cancelled during the pause before a retry, and tries no more", async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const controller = new AbortController();
    const retries: number[] = [];
    // A pause far longer than the test: only the cancel can end it.
    const pull = library({ mirror: closed }).pull("test-red", {
      retryDelayMs: 600_000,
      signal: controller.signal,
      onRetry: ({ attempt }) => {
        retries.push(attempt);
        controller.abort();
      },
    });
    await expect(pull).rejects.toMatchObject({ reason: "cancelled" });
    expect(retries).toEqual([1]);
    expect(await readdir(dir)).toEqual([]);
  });

  it("leaves a download that another process holds alone, and takes over a dead one's", async () => {
    const lock = path.join(dir, `${FILE}.lock`);
    await writeFile(lock, "{}");
    await expect(library().pull("test-red")).rejects.toMatchObject({ reason: "busy" });
    await expect(library().remove("test-red")).rejects.toMatchObject({ reason: "busy" });
    const old = new Date(Date.now() - 5 * 60_000);
    await utimes(lock, old, old);
    expect(await library().pull("test-red")).toMatchObject({ downloaded: true });
    expect(await readdir(dir)).toEqual([FILE]);
  });

  it("takes the file out of a package archive (a .tgz URL naming the file), checks it, and keeps nothing else", async () => {
    const models = await archiveLibrary(`${mirror.url}${ARCHIVE}#package/models/${FILE}`);
    const cut = Math.floor(archiveBytes.length / 2);
    mirror.cutNext(ARCHIVE, cut);
    const retries: string[] = [];
    const result = await models.pull("test-red", { ...quick, onRetry: ({ error }) => void retries.push(error.message) });
    expect(result).toMatchObject({ downloaded: true, bytes: model.length, path: path.join(dir, FILE) });
    expect(await readFile(result.path)).toEqual(model);
    // The archive was resumed where the cut left it, and is gone with everything unpacked beside the file.
    expect(retries).toEqual([expect.stringMatching(new RegExp(`stopped after ${cut} bytes`))]);
    expect(mirror.requests.map((request) => request.status)).toEqual([200, 206]);
    expect(await readdir(dir)).toEqual([FILE]);
  });

  it("counts a half-fetched archive as a partial download, which the next pull resumes", async () => {
    const models = await archiveLibrary(`${mirror.url}${ARCHIVE}#package/models/${FILE}`);
    const cut = Math.floor(archiveBytes.length / 2);
    mirror.cutNext(ARCHIVE, cut);
    // One attempt only: the process "dies" with the archive half fetched.
    await expect(models.pull("test-red", { attempts: 1 })).rejects.toMatchObject({ reason: "download_failed" });
    expect(await models.status("test-red")).toMatchObject({
      state: "partial",
      bytes: cut,
      files: [expect.objectContaining({ state: "partial", bytes: cut, inArchive: path.join(dir, `${ARCHIVE}.part`) })],
    });
    const result = await models.pull("test-red");
    expect(mirror.requests.at(-1)).toEqual({ file: ARCHIVE, range: `bytes=${cut}-`, status: 206 });
    expect(await readFile(result.path)).toEqual(model);
    expect(await models.status("test-red")).toMatchObject({ state: "installed" });
  });

  it("refuses an archive without the named file, or a file in it that is not the published one, and keeps nothing", async () => {
    const missing = await archiveLibrary(`${mirror.url}${ARCHIVE}#package/models/absent.onnx`);
    await expect(missing.pull("test-red", quick)).rejects.toThrow(/holds no file package\/models\/absent\.onnx/);
    expect(await readdir(dir)).toEqual([]);
    // other.onnx is in the archive, but it is not test-red: of another size, never unpacked; of the same size, its
    // checksum is not test-red's.
    const other = await archiveLibrary(`${mirror.url}${ARCHIVE}#package/models/other.onnx`);
    await expect(other.pull("test-red", quick)).rejects.toThrow(
      /holds package\/models\/other\.onnx of \d+ bytes, not the published/,
    );
    expect(await readdir(dir)).toEqual([]);
    const twin = await archiveLibrary(`${mirror.url}${ARCHIVE}#package/models/twin.onnx`);
    await expect(twin.pull("test-red", quick)).rejects.toMatchObject({ reason: "checksum_mismatch" });
    expect(await readdir(dir)).toEqual([]);
    const notArchive = await archiveLibrary(`${mirror.url}${FILE.replace(".onnx", ".tgz")}#package/models/${FILE}`);
    mirror.serve(FILE.replace(".onnx", ".tgz"), model);
    await expect(notArchive.pull("test-red", quick)).rejects.toThrow(/is not a gzipped tarball that can be read/);
    expect(await readdir(dir)).toEqual([]);
  });

  it("refuses a host that sends more than the file can take, and keeps nothing: announced, or streamed without end", async () => {
    // A plain file announced larger than its published size: refused before its body is read, and not tried again.
    mirror.serve(FILE, Buffer.concat([model, Buffer.alloc(1000)]));
    try {
      await expect(library().pull("test-red", quick)).rejects.toThrow(
        new RegExp(`sends more than the ${model.length} bytes that ${FILE} can take`),
      );
      expect(mirror.requests.filter((request) => request.file === FILE)).toHaveLength(1);
      expect(await readdir(dir)).toEqual([]);
    } finally {
      mirror.serve(FILE, model);
    }
    // An archive streamed without a length, and without end: cut at four times the file's size and a MiB.
    let sent = 0;
    let closed = false;
    const endless = http.createServer((_request, response) => {
      response.writeHead(200, { "content-type": "application/gzip" });
      const chunk = Buffer.alloc(64 * 1024, 1);
      const more = () => {
        while (!response.destroyed && response.write(chunk)) sent += chunk.length;
        if (!response.destroyed) response.once("drain", more);
      };
      response.on("close", () => {
        closed = true;
      });
      more();
    });
    await new Promise<void>((resolve) => endless.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = endless.address() as AddressInfo;
      const models = await archiveLibrary(`http://127.0.0.1:${port}/endless.tgz#package/models/${FILE}`);
      await expect(models.pull("test-red", quick)).rejects.toThrow(/sends more than the \d+ bytes that test-red\.onnx can take/);
      expect(await readdir(dir)).toEqual([]);
      await expect.poll(() => closed).toBe(true);
      expect(sent).toBeLessThan(4 * model.length + 2 ** 20 + 4 * 2 ** 20);
    } finally {
      endless.closeAllConnections();
      await new Promise((resolve) => endless.close(resolve));
    }
  });

  it("removes the file and any part (an archive's too); an unknown name lists the known ones", async () => {
    const models = await archiveLibrary(`${mirror.url}${ARCHIVE}#package/models/${FILE}`);
    await models.pull("test-red");
    await writeFile(path.join(dir, `${FILE}.part`), "x");
    await writeFile(path.join(dir, `${ARCHIVE}.part`), "x");
    expect(await models.remove("test-red")).toEqual([
      path.join(dir, FILE),
      path.join(dir, `${FILE}.part`),
      path.join(dir, `${ARCHIVE}.part`),
    ]);
    expect(await models.remove("test-red")).toEqual([]);
    expect(() => models.entry("nope")).toThrow(/No model named "nope" in the catalog \(known: isnet-general-use, .*test-red/);
  });
});

describe("a zip archive that carries two files of an entry (SAM 2.1's encoder and decoder)", () => {
  const ZIP = "test-segmenter.zip";
  const decoder = redSaliencyModel({ padding: 9_000 });
  let zipBytes: Buffer;

  async function zipOf(files: Record<string, Buffer>): Promise<Buffer> {
    const zip = new ZipFile();
    for (const [name, bytes] of Object.entries(files)) zip.addBuffer(bytes, name);
    zip.end();
    const chunks: Buffer[] = [];
    for await (const chunk of zip.outputStream) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  }

  /** A segmenter entry whose two files come from `archive` (served by the mirror), as the catalog's SAM 2.1 entry. */
  async function zipLibrary(archive: string, options: { archiveSize?: number; encoderMember?: string } = {}) {
    const url = `${mirror.url}${archive}`;
    const archiveSize = options.archiveSize ?? zipBytes.length;
    const entry = {
      name: "test-sam2",
      task: "segmenter",
      title: "Test SAM 2",
      file: "test-sam2-encoder.onnx",
      urls: [`${url}#${options.encoderMember ?? "sam2/encoder.onnx"}`],
      size: model.length,
      archiveSize,
      checksums: { sha256: sha256Of(model) },
      checksumSource: "computed by the test",
      extraFiles: [
        {
          role: "decoder",
          file: "test-sam2-decoder.onnx",
          urls: [`${url}#sam2/decoder.onnx`],
          size: decoder.length,
          archiveSize,
          checksums: { sha256: sha256Of(decoder) },
          checksumSource: "computed by the test",
        },
      ],
      input: { kind: "sam2" },
      licence: { id: "Apache-2.0", source: "test" },
      project: "https://example.com/sam2",
    };
    const catalogDir = await mkdtemp(path.join(os.tmpdir(), "retouch-catalog-"));
    const file = path.join(catalogDir, "catalog.json");
    await writeFile(file, JSON.stringify({ models: [entry] }));
    return new ModelLibrary({ dir, catalog: parseConfig({ RETOUCH_MODEL_CATALOG: file }).models.catalog });
  }

  beforeAll(async () => {
    zipBytes = await zipOf({ "sam2/encoder.onnx": model, "sam2/decoder.onnx": decoder, "sam2/README.md": Buffer.from("x") });
    mirror.serve(ZIP, zipBytes);
  });

  it("fetches the archive once, resumed where a cut left it, takes both files out and keeps nothing else", async () => {
    const models = await zipLibrary(ZIP);
    const cut = Math.floor(zipBytes.length / 3);
    mirror.cutNext(ZIP, cut);
    const result = await models.pull("test-sam2", quick);
    expect(result).toMatchObject({ downloaded: true, bytes: model.length + decoder.length });
    expect(await readFile(path.join(dir, "test-sam2-encoder.onnx"))).toEqual(model);
    expect(await readFile(path.join(dir, "test-sam2-decoder.onnx"))).toEqual(decoder);
    // One whole transfer in two requests (the cut, then the rest): the decoder came out of the same download.
    expect(mirror.requests.map((request) => [request.file, request.status])).toEqual([
      [ZIP, 200],
      [ZIP, 206],
    ]);
    expect((await readdir(dir)).sort()).toEqual(["test-sam2-decoder.onnx", "test-sam2-encoder.onnx"]);
    expect(await models.status("test-sam2")).toMatchObject({ state: "installed" });
  });

  it("counts a half-fetched archive once for the two files it carries, and removes it with the model", async () => {
    const models = await zipLibrary(ZIP);
    const cut = Math.floor(zipBytes.length / 2);
    mirror.cutNext(ZIP, cut);
    await expect(models.pull("test-sam2", { attempts: 1 })).rejects.toMatchObject({ reason: "download_failed" });
    const part = path.join(dir, `${ZIP}.part`);
    expect(await models.status("test-sam2")).toMatchObject({
      state: "partial",
      bytes: cut,
      files: [
        expect.objectContaining({ role: "model", bytes: cut, inArchive: part }),
        expect.objectContaining({ role: "decoder", bytes: cut, inArchive: part }),
      ],
    });
    expect(await models.remove("test-sam2")).toEqual([part]);
    expect(await readdir(dir)).toEqual([]);
  });

  it("refuses a zip without the file, with it at another size, larger than published, or not a zip; keeps nothing", async () => {
    await expect((await zipLibrary(ZIP, { encoderMember: "sam2/absent.onnx" })).pull("test-sam2", quick)).rejects.toThrow(
      /holds no file sam2\/absent\.onnx/,
    );
    expect(await readdir(dir)).toEqual([]);
    await expect((await zipLibrary(ZIP, { encoderMember: "sam2/README.md" })).pull("test-sam2", quick)).rejects.toThrow(
      /holds sam2\/README\.md of 1 bytes, not the published/,
    );
    expect(await readdir(dir)).toEqual([]);
    // A host sending more than the archive's published size is cut off before it fills the disk.
    await expect((await zipLibrary(ZIP, { archiveSize: zipBytes.length - 100 })).pull("test-sam2", quick)).rejects.toThrow(
      /sends more than the \d+ bytes/,
    );
    expect(await readdir(dir)).toEqual([]);
    mirror.serve("not-a.zip", Buffer.alloc(zipBytes.length, 3));
    await expect((await zipLibrary("not-a.zip")).pull("test-sam2", quick)).rejects.toThrow(
      /is not a zip archive that can be read/,
    );
    expect(await readdir(dir)).toEqual([]);
  });
});
