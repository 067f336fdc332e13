import sharp from "sharp";

/**
 * A product-style scene: a coloured disc on a plain light background, the
 * kind of picture background removal is made for.
 */
export async function productPhoto(
  options: { width?: number; height?: number; format?: "jpeg" | "png" | "webp" } = {},
): Promise<Buffer> {
  const width = options.width ?? 320;
  const height = options.height ?? 240;
  const radius = Math.round(Math.min(width, height) * 0.3);
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">
    <rect width="100%" height="100%" fill="#f4f4f2"/>
    <circle cx="${width / 2}" cy="${height / 2}" r="${radius}" fill="#c0392b"/>
    <circle cx="${width / 2 - radius / 3}" cy="${height / 2 - radius / 3}" r="${radius / 4}" fill="#e67e22"/>
  </svg>`;
  const image = sharp(Buffer.from(svg));
  const format = options.format ?? "png";
  return (
    format === "jpeg" ? image.jpeg({ quality: 92 }) : format === "webp" ? image.webp({ quality: 92 }) : image.png()
  ).toBuffer();
}

/** A white-on-black PNG mask marking a rectangle. */
export async function rectangleMask(
  width: number,
  height: number,
  box: { left: number; top: number; width: number; height: number },
): Promise<Buffer> {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">
    <rect width="100%" height="100%" fill="black"/>
    <rect x="${box.left}" y="${box.top}" width="${box.width}" height="${box.height}" fill="white"/>
  </svg>`;
  return sharp(Buffer.from(svg)).png().toBuffer();
}

export const base64 = (bytes: Buffer): string => bytes.toString("base64");
