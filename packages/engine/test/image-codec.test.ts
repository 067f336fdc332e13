import { readFile } from "node:fs/promises";
import { crc32 } from "node:zlib";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { EngineError } from "../src/engine-error";
import {
  checkImageStructure,
  DEFAULT_MAX_PIXELS,
  decodeImage,
  decodeMask,
  encodeImage,
  inspectImage,
  sniffImageFormat,
} from "../src/pixels/image-codec";

/** A PNG whose header claims `width` x `height` with a few bytes of data: a decompression bomb's shape. */
function pngHeaderOnly(width: number, height: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8); // 8-bit RGB
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    chunk("IDAT", Buffer.from([0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01])),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

/** 20x10: left half red, right half blue, stored with EXIF orientation 6 (display rotated 90 degrees clockwise). */
async function orientedJpeg(): Promise<Buffer> {
  const raw = Buffer.alloc(20 * 10 * 3);
  for (let y = 0; y < 10; y++) for (let x = 0; x < 20; x++) raw.set(x < 10 ? [230, 20, 20] : [20, 20, 230], (y * 20 + x) * 3);
  return sharp(raw, { raw: { width: 20, height: 10, channels: 3 } })
    .jpeg({ quality: 95 })
    .withMetadata({ orientation: 6 })
    .toBuffer();
}

describe("inspectImage", () => {
  it("reads format and oriented size from the header", async () => {
    const png = await sharp({ create: { width: 30, height: 20, channels: 4, background: "#00000000" } })
      .png()
      .toBuffer();
    const webp = await sharp({ create: { width: 31, height: 21, channels: 3, background: "#123456" } })
      .webp()
      .toBuffer();
    expect(await inspectImage(png)).toEqual({ format: "png", width: 30, height: 20 });
    expect(await inspectImage(webp)).toEqual({ format: "webp", width: 31, height: 21 });
    expect(await inspectImage(await orientedJpeg())).toEqual({ format: "jpeg", width: 10, height: 20 });
  });

  it("refuses other formats and garbage with a message a person can act on", async () => {
    const gif = await sharp({ create: { width: 8, height: 8, channels: 3, background: "#fff" } })
      .gif()
      .toBuffer();
    const tiff = await sharp({ create: { width: 8, height: 8, channels: 3, background: "#fff" } })
      .tiff()
      .toBuffer();
    for (const bytes of [gif, tiff]) {
      await expect(inspectImage(bytes)).rejects.toThrow(/send JPEG, PNG or WebP/);
    }
    await expect(inspectImage(Buffer.from("hello"))).rejects.toMatchObject({ reason: "unsupported_image" });
    await expect(inspectImage(Buffer.from("<svg xmlns='http://www.w3.org/2000/svg' width='10' height='10'/>"))).rejects.toThrow(
      /svg; send JPEG, PNG or WebP/,
    );
  });

  it("refuses a decompression bomb from its header alone, quickly", async () => {
    const bomb = pngHeaderOnly(100_000, 100_000);
    expect(bomb.length).toBeLessThan(100);
    const started = performance.now();
    const error = await inspectImage(bomb).catch((caught: unknown) => caught);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(error).toBeInstanceOf(EngineError);
    expect(error).toMatchObject({ reason: "image_too_large" });
    expect((error as Error).message).toBe(
      "The image is 100000x100000 pixels (10000.0 MP); the limit is 40.0 MP. Send a smaller image.",
    );
    await expect(decodeImage(bomb)).rejects.toMatchObject({ reason: "image_too_large" });
  });

  it("applies the configured limit", async () => {
    const png = await sharp({ create: { width: 200, height: 200, channels: 3, background: "#fff" } })
      .png()
      .toBuffer();
    await expect(inspectImage(png, 10_000)).rejects.toThrow(/200x200 pixels \(0.0 MP\); the limit is 0.0 MP/);
    expect(DEFAULT_MAX_PIXELS).toBe(40_000_000);
  });
});

describe("inspectImage reads the displayed size from the structure walk, as libvips would", () => {
  it("agrees with sharp's header read (orientation applied) on JPEG, PNG and WebP variants", async () => {
    const photo = await readFile(new URL("./fixtures/coffee.jpg", import.meta.url));
    const base = sharp(photo).resize(321, 203);
    const variants: Array<[string, Buffer]> = [
      ["baseline JPEG", await base.clone().jpeg().toBuffer()],
      ["progressive JPEG", await base.clone().jpeg({ progressive: true }).toBuffer()],
      ...(await Promise.all(
        [3, 5, 6, 8].map(
          async (orientation) =>
            [`JPEG with EXIF orientation ${orientation}`, await base.clone().jpeg().withMetadata({ orientation }).toBuffer()] as [
              string,
              Buffer,
            ],
        ),
      )),
      ["PNG", await base.clone().png().toBuffer()],
      ["PNG with alpha, palette", await base.clone().ensureAlpha(0.5).png({ palette: true }).toBuffer()],
      ["lossy WebP", await base.clone().webp().toBuffer()],
      ["lossless WebP", await base.clone().webp({ lossless: true }).toBuffer()],
      ["WebP with alpha (VP8X)", await base.clone().ensureAlpha(0.5).webp().toBuffer()],
    ];
    for (const [label, bytes] of variants) {
      const metadata = await sharp(bytes).metadata();
      const expected = { width: metadata.autoOrient.width, height: metadata.autoOrient.height };
      // From the walk itself, not a fallback to libvips:
      expect(checkImageStructure(bytes, metadata.format as "jpeg" | "png" | "webp"), label).toEqual(expected);
      expect(await inspectImage(bytes), label).toEqual({ format: metadata.format, ...expected });
    }
  });
});

describe("checkImageStructure", () => {
  const photo = () => readFile(new URL("./fixtures/coffee.jpg", import.meta.url));
  const encodings = async () => {
    const source = sharp(await photo());
    return {
      jpeg: await photo(),
      progressive: await source.clone().jpeg({ quality: 90, progressive: true }).toBuffer(),
      exif: await source.clone().jpeg({ quality: 85 }).withMetadata({ orientation: 3 }).toBuffer(),
      png: await source.clone().png().toBuffer(),
      webp: await source.clone().webp({ quality: 80 }).toBuffer(),
      lossless: await source.clone().webp({ lossless: true }).toBuffer(),
    };
  };
  const formatOf = (bytes: Buffer) => sniffImageFormat(bytes) ?? "jpeg";

  it("accepts real photographs in every input format, and bytes after a JPEG's end (camera trailers)", async () => {
    const files = await encodings();
    for (const [name, bytes] of Object.entries(files))
      expect(() => checkImageStructure(bytes, formatOf(bytes)), name).not.toThrow();
    const trailer = Buffer.concat([files.jpeg, Buffer.from("vendor trailer data")]);
    expect(() => checkImageStructure(trailer, "jpeg")).not.toThrow();
  });

  it("refuses every truncation of every format: at the end, in the middle, in the headers", async () => {
    for (const [name, bytes] of Object.entries(await encodings())) {
      for (const keep of [bytes.length - 1, bytes.length - 2, Math.floor(bytes.length / 2), 200, 40, 13]) {
        const cut = bytes.subarray(0, keep);
        expect(() => checkImageStructure(cut, formatOf(bytes)), `${name} cut to ${keep} bytes`).toThrow(/truncated|damaged/);
        await expect(inspectImage(cut)).rejects.toMatchObject({ reason: "unsupported_image" });
      }
    }
  });

  it("refuses a PNG with any changed byte (chunk checksums)", async () => {
    const { png } = await encodings();
    for (const at of [20, Math.floor(png.length / 3), png.length - 20]) {
      const damaged = Buffer.from(png);
      damaged[at] = (damaged[at] ?? 0) ^ 0x10;
      expect(() => checkImageStructure(damaged, "png"), `byte ${at}`).toThrow(/fails its checksum|invalid PNG chunk/);
    }
  });

  it("refuses a JPEG whose segments are broken, and one without image data", async () => {
    const { jpeg } = await encodings();
    // The byte after APP0 must start the next marker segment.
    const app0End = 4 + jpeg.readUInt16BE(4);
    const broken = Buffer.from(jpeg);
    broken[app0End] = 0x00;
    expect(() => checkImageStructure(broken, "jpeg")).toThrow(/no JPEG marker/);
    const overlong = Buffer.from(jpeg);
    overlong.writeUInt16BE(0xfff0, 4);
    expect(() => checkImageStructure(overlong, "jpeg")).toThrow(/damaged|truncated/);
    const headerOnly = Buffer.concat([jpeg.subarray(0, app0End), Buffer.from([0xff, 0xd9])]);
    expect(() => checkImageStructure(headerOnly, "jpeg")).toThrow(/before any image data/);
  });

  it("refuses a WebP whose RIFF length does not match its chunks", async () => {
    const { webp } = await encodings();
    const longer = Buffer.from(webp);
    longer.writeUInt32LE(webp.readUInt32LE(4) + 100, 4);
    expect(() => checkImageStructure(longer, "webp")).toThrow(/truncated/);
    const chunkOverrun = Buffer.from(webp);
    chunkOverrun.writeUInt32LE(webp.readUInt32LE(16) + 100, 16);
    expect(() => checkImageStructure(chunkOverrun, "webp")).toThrow(/overruns/);
  });

  it("sniffs the format from magic bytes only", async () => {
    const files = await encodings();
    expect([files.jpeg, files.png, files.webp].map((bytes) => sniffImageFormat(bytes))).toEqual(["jpeg", "png", "webp"]);
    expect(sniffImageFormat(Buffer.from("<html><body>not found</body></html>"))).toBeUndefined();
    expect(sniffImageFormat(Buffer.from("GIF89a"))).toBeUndefined();
    expect(sniffImageFormat(Buffer.alloc(0))).toBeUndefined();
  });
});

describe("decodeImage", () => {
  it("applies the EXIF orientation", async () => {
    const image = await decodeImage(await orientedJpeg());
    expect([image.width, image.height]).toEqual([10, 20]);
    const at = (x: number, y: number) => [...image.data.subarray((y * 10 + x) * 4, (y * 10 + x) * 4 + 3)];
    // The stored top row (red | blue) is the displayed right column, red on top.
    expect(at(5, 2)[0]).toBeGreaterThan(180);
    expect(at(5, 17)[2]).toBeGreaterThan(180);
  });

  it("gives 8-bit RGBA whatever the input's channels and depth", async () => {
    const grey16 = await sharp(Buffer.alloc(6 * 4, 0x80), { raw: { width: 6, height: 4, channels: 1 } })
      .toColourspace("grey16")
      .png()
      .toBuffer();
    expect(await sharp(grey16).metadata()).toMatchObject({ channels: 1, depth: "ushort" });
    const image = await decodeImage(grey16);
    expect(image.data.length).toBe(6 * 4 * 4);
    expect(image.data[3]).toBe(255);
  });

  it("reports a truncated file as unsupported", async () => {
    const jpeg = await sharp({ create: { width: 64, height: 64, channels: 3, background: "#369" } })
      .jpeg()
      .toBuffer();
    await expect(decodeImage(jpeg.subarray(0, jpeg.length - 200))).rejects.toMatchObject({ reason: "unsupported_image" });
  });
});

describe("encodeImage", () => {
  const rgba = { data: new Uint8Array(16 * 16 * 4).fill(200), width: 16, height: 16 };
  rgba.data[3] = 0; // one transparent pixel

  it("reads width, height and format back from the output", async () => {
    for (const format of ["jpeg", "png", "webp"] as const) {
      const encoded = await encodeImage(rgba, format);
      expect(encoded).toMatchObject({ format, width: 16, height: 16 });
      expect((await sharp(encoded.data).metadata()).format).toBe(format);
    }
  });

  it("keeps alpha in PNG and WebP and flattens JPEG onto white", async () => {
    const png = await sharp((await encodeImage(rgba, "png")).data)
      .raw()
      .toBuffer();
    expect(png[3]).toBe(0);
    const jpeg = await sharp((await encodeImage(rgba, "jpeg")).data)
      .raw()
      .toBuffer();
    expect(jpeg[0]).toBeGreaterThan(245);
  });

  it("honours quality for lossy formats", async () => {
    const noisy = {
      data: new Uint8Array(64 * 64 * 4).map((_, i) => (i % 4 === 3 ? 255 : (i * 7919) % 251)),
      width: 64,
      height: 64,
    };
    for (const format of ["jpeg", "webp"] as const) {
      const low = await encodeImage(noisy, format, 10);
      const high = await encodeImage(noisy, format, 95);
      expect(low.data.length).toBeLessThan(high.data.length * 0.7);
    }
  });
});

describe("decodeMask", () => {
  it("reads white (or opaque white strokes on transparency) as selected, resized to the image", async () => {
    const raw = Buffer.alloc(10 * 10 * 4);
    for (let y = 0; y < 10; y++) for (let x = 0; x < 5; x++) raw.set([255, 255, 255, 255], (y * 10 + x) * 4);
    const png = await sharp(raw, { raw: { width: 10, height: 10, channels: 4 } })
      .png()
      .toBuffer();
    const mask = await decodeMask(png, 40, 20, DEFAULT_MAX_PIXELS);
    expect([mask.width, mask.height, mask.data.length]).toEqual([40, 20, 800]);
    expect(mask.data[10 * 40 + 5]).toBe(255);
    expect(mask.data[10 * 40 + 35]).toBe(0);
  });

  it("refuses a mask that is not an image", async () => {
    await expect(decodeMask(Buffer.from("nope"), 10, 10, DEFAULT_MAX_PIXELS)).rejects.toMatchObject({ reason: "invalid_mask" });
  });
});
