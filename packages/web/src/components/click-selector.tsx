import { type PointerEvent, useCallback, useEffect, useRef, useState } from "react";
import { errorCode } from "../api/errors";
import { trpcClient } from "../api/trpc";

/** A click on the picture, in the picture's own pixels. */
export interface SelectionPoint {
  x: number;
  y: number;
  /** true: part of the object; false: leave this out. */
  include: boolean;
}

interface Selected {
  /** The object's mask as the service answered it: a PNG, white on black, at the encoder's scale. */
  png: Blob;
  bitmap: ImageBitmap;
  width: number;
  height: number;
  coverage: number;
  predictedIou: number;
}

export interface ClickSelection {
  /** The picture is encoded and clicks can be answered. */
  ready: boolean;
  busy: "preparing" | "selecting" | undefined;
  points: readonly SelectionPoint[];
  selected: Selected | undefined;
  error: unknown;
  add(point: SelectionPoint): void;
  undo(): void;
  clear(): void;
  /** The selection as the job's `mask` (the painter's kind: white marks the area, resized to the picture); undefined if none. */
  toPng(): Blob | undefined;
}

function base64ToBlob(base64: string, type: string): Blob {
  const text = atob(base64);
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  return new Blob([bytes], { type });
}

function fileToBase64(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ""));
    reader.onerror = () => reject(reader.error ?? new Error("The picture could not be read."));
    reader.readAsDataURL(file);
  });
}

/**
 * Click-to-select on the service's segmenter: the picture is sent once when
 * selection starts (the service encodes it and keeps it a few minutes), then
 * each click sends every point so far and gets the object's mask back. The
 * points live here; a selection the service has forgotten (expired, or the
 * service restarted) is started again without the person noticing. Free:
 * nothing here charges a credit.
 */
export function useClickSelection(file: File | undefined, enabled: boolean): ClickSelection {
  const [selectionId, setSelectionId] = useState<string | undefined>();
  const [points, setPoints] = useState<SelectionPoint[]>([]);
  const [selected, setSelected] = useState<Selected | undefined>();
  const [busy, setBusy] = useState<ClickSelection["busy"]>();
  const [error, setError] = useState<unknown>();
  /** Only the answer to the latest click is shown: an earlier one may arrive after it. */
  const latest = useRef(0);

  const start = useCallback(async (picture: File): Promise<string> => {
    const started = await trpcClient.selection.start.mutate({ image: await fileToBase64(picture) });
    return started.selection_id;
  }, []);

  useEffect(() => {
    setSelectionId(undefined);
    setPoints([]);
    setSelected(undefined);
    setError(undefined);
    if (!enabled || !file) return;
    let current = true;
    setBusy("preparing");
    start(file)
      .then((id) => current && setSelectionId(id))
      .catch((failure: unknown) => current && setError(failure))
      .finally(() => current && setBusy(undefined));
    return () => {
      current = false;
    };
  }, [enabled, file, start]);

  const select = async (next: SelectionPoint[]) => {
    setPoints(next);
    setError(undefined);
    const call = ++latest.current;
    if (!selectionId || !file || !next.some((point) => point.include)) {
      setSelected(undefined);
      return;
    }
    setBusy("selecting");
    const refine = (id: string) => trpcClient.selection.refine.mutate({ selection_id: id, points: next });
    try {
      let answer: Awaited<ReturnType<typeof refine>>;
      try {
        answer = await refine(selectionId);
      } catch (failure) {
        if (errorCode(failure) !== "not_found") throw failure;
        // Forgotten by the service: encode the picture again and ask once more.
        const id = await start(file);
        setSelectionId(id);
        answer = await refine(id);
      }
      const png = base64ToBlob(answer.mask, "image/png");
      const bitmap = await createImageBitmap(png);
      if (call !== latest.current) return;
      setSelected({
        png,
        bitmap,
        width: answer.mask_width,
        height: answer.mask_height,
        coverage: answer.coverage,
        predictedIou: answer.predicted_iou,
      });
    } catch (failure) {
      if (call === latest.current) setError(failure);
    } finally {
      if (call === latest.current) setBusy(undefined);
    }
  };

  return {
    ready: selectionId !== undefined,
    busy,
    points,
    selected,
    error,
    add: (point) => void select([...points, point]),
    undo: () => void select(points.slice(0, -1)),
    clear: () => void select([]),
    toPng: () => selected?.png,
  };
}

/** Translucent inside, an opaque line along the outline. */
const FILL = [224, 83, 61, 90] as const;
const OUTLINE = [255, 214, 10, 255] as const;

/**
 * The selection drawn over the picture (its outline and a tint inside, the
 * points as dots) and where the clicks land: a click adds to the object, a
 * click with Shift or Alt held (or with `exclude` on, for touch) leaves the
 * spot out.
 */
export function SelectionOverlay({
  selection,
  width,
  height,
  exclude,
}: {
  selection: ClickSelection;
  /** The picture's size: points are in its pixels. */
  width: number;
  height: number;
  exclude: boolean;
}) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const { selected, points } = selection;
  // Drawn at the mask's resolution (at most 1024 a side), scaled by CSS over the picture.
  const drawWidth = selected?.width ?? Math.min(1024, width);
  const drawHeight = selected?.height ?? Math.round((drawWidth / width) * height);

  useEffect(() => {
    const context = canvas.current?.getContext("2d", { willReadFrequently: true });
    if (!context) return;
    context.clearRect(0, 0, drawWidth, drawHeight);
    if (selected) {
      context.drawImage(selected.bitmap, 0, 0, drawWidth, drawHeight);
      const image = context.getImageData(0, 0, drawWidth, drawHeight);
      const mask = new Uint8Array(drawWidth * drawHeight);
      for (let i = 0; i < mask.length; i++) mask[i] = (image.data[i * 4] ?? 0) >= 128 ? 1 : 0;
      const on = (x: number, y: number) => x >= 0 && y >= 0 && x < drawWidth && y < drawHeight && mask[y * drawWidth + x] === 1;
      for (let y = 0; y < drawHeight; y++) {
        for (let x = 0; x < drawWidth; x++) {
          const offset = (y * drawWidth + x) * 4;
          const edge = on(x, y) && !(on(x - 1, y) && on(x + 1, y) && on(x, y - 1) && on(x, y + 1));
          const colour = edge ? OUTLINE : on(x, y) ? FILL : [0, 0, 0, 0];
          image.data.set(colour, offset);
        }
      }
      context.putImageData(image, 0, 0);
    }
    const radius = Math.max(4, drawWidth / 120);
    for (const point of points) {
      context.beginPath();
      context.arc((point.x / width) * drawWidth, (point.y / height) * drawHeight, radius, 0, 2 * Math.PI);
      context.fillStyle = point.include ? "#2f9e44" : "#c92a2a";
      context.fill();
      context.lineWidth = radius / 3;
      context.strokeStyle = "#ffffff";
      context.stroke();
    }
  }, [selected, points, drawWidth, drawHeight, width, height]);

  const onPointerDown = (event: PointerEvent<HTMLCanvasElement>) => {
    if (event.button !== 0 || !selection.ready) return;
    const rect = event.currentTarget.getBoundingClientRect();
    const x = ((event.clientX - rect.left) / rect.width) * width;
    const y = ((event.clientY - rect.top) / rect.height) * height;
    if (x < 0 || y < 0 || x >= width || y >= height) return;
    selection.add({ x, y, include: !(exclude || event.shiftKey || event.altKey) });
  };

  return (
    <canvas
      ref={canvas}
      className="selection-canvas"
      width={drawWidth}
      height={drawHeight}
      data-testid="selection-overlay"
      aria-label="Selection: click the object to select it; Shift-click or Alt-click to leave a part out"
      onPointerDown={onPointerDown}
    />
  );
}
