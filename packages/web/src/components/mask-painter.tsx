import { type PointerEvent, type Ref, useImperativeHandle, useRef } from "react";

export interface MaskPainterHandle {
  /** The mask as the API wants it: a PNG at the image's size, white where painted, black elsewhere; undefined if nothing is painted. */
  toPng(): Promise<Blob | undefined>;
  clear(): void;
}

/**
 * A canvas over the picture, at the picture's own pixel size, on which the
 * person paints the area to edit. Strokes show in a translucent colour; only
 * their coverage counts.
 */
export function MaskPainter({
  width,
  height,
  brush,
  ref,
}: {
  width: number;
  height: number;
  /** Brush diameter as a share of the picture's longer side. */
  brush: number;
  ref: Ref<MaskPainterHandle>;
}) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const last = useRef<{ x: number; y: number } | undefined>(undefined);
  const painted = useRef(false);

  useImperativeHandle(ref, () => ({
    async toPng() {
      const source = canvas.current;
      const context = source?.getContext("2d");
      if (!source || !context || !painted.current) return undefined;
      const strokes = context.getImageData(0, 0, width, height).data;
      const mask = document.createElement("canvas");
      mask.width = width;
      mask.height = height;
      const maskContext = mask.getContext("2d");
      if (!maskContext) return undefined;
      const pixels = maskContext.createImageData(width, height);
      for (let offset = 0; offset < strokes.length; offset += 4) {
        const value = (strokes[offset + 3] ?? 0) > 0 ? 255 : 0;
        pixels.data[offset] = value;
        pixels.data[offset + 1] = value;
        pixels.data[offset + 2] = value;
        pixels.data[offset + 3] = 255;
      }
      maskContext.putImageData(pixels, 0, 0);
      return new Promise<Blob | undefined>((resolve) => mask.toBlob((blob) => resolve(blob ?? undefined), "image/png"));
    },
    clear() {
      canvas.current?.getContext("2d")?.clearRect(0, 0, width, height);
      painted.current = false;
    },
  }));

  const point = (event: PointerEvent<HTMLCanvasElement>) => {
    const rect = event.currentTarget.getBoundingClientRect();
    return {
      x: ((event.clientX - rect.left) / rect.width) * width,
      y: ((event.clientY - rect.top) / rect.height) * height,
    };
  };
  const stroke = (to: { x: number; y: number }) => {
    const context = canvas.current?.getContext("2d");
    if (!context) return;
    const from = last.current ?? to;
    context.strokeStyle = "#e0533d";
    context.lineCap = "round";
    context.lineJoin = "round";
    context.lineWidth = Math.max(2, brush * Math.max(width, height));
    context.beginPath();
    context.moveTo(from.x, from.y);
    context.lineTo(to.x, to.y);
    context.stroke();
    last.current = to;
    painted.current = true;
  };

  return (
    <canvas
      ref={canvas}
      className="mask-canvas"
      width={width}
      height={height}
      aria-label="Mask: paint over the area to edit"
      onPointerDown={(event) => {
        event.currentTarget.setPointerCapture(event.pointerId);
        last.current = undefined;
        stroke(point(event));
      }}
      onPointerMove={(event) => {
        if (event.buttons & 1) stroke(point(event));
      }}
      onPointerUp={() => {
        last.current = undefined;
      }}
    />
  );
}
