import { MAX_SELECTION_POINTS } from "@retouch/engine";
import { z } from "zod";

/** Click-to-select in the dashboard's playground: tRPC only (`selection.*`), not part of the REST API. */

export const selectionStatusOutput = z.object({
  available: z.boolean().describe("Whether this server can select objects by clicking"),
  reason: z.string().nullable().describe("Why not, for a person, when it cannot"),
});

export const startSelectionInput = z.object({
  image: z
    .string({ error: "must be base64 text" })
    .min(1)
    .describe("Base64 JPEG, PNG or WebP bytes (a `data:image/...;base64,` prefix is accepted), as a submission's `image`"),
});

export const startSelectionOutput = z.object({
  selection_id: z.string().describe("`sel_...`: send it with each click"),
  width: z.number().int().describe("The picture's width in pixels (points are in these pixels)"),
  height: z.number().int(),
  expires_at: z.string().describe("When the encoded picture is dropped if no click uses it (ISO 8601)"),
});

export const selectionPoint = z.object({
  x: z.number().finite().describe("In the picture's pixels, from the left"),
  y: z.number().finite().describe("In the picture's pixels, from the top"),
  include: z.boolean().describe("true: part of the object; false: leave this out"),
});

export const refineSelectionInput = z.object({
  selection_id: z.string().min(1).max(64),
  points: z
    .array(selectionPoint)
    .min(1, { error: "click on the object at least once" })
    .max(MAX_SELECTION_POINTS, { error: `at most ${MAX_SELECTION_POINTS} points: undo some, or clear and start again` }),
});

export const refineSelectionOutput = z.object({
  mask: z.string().describe("Base64 PNG, white on black: the object, usable as a submission's `mask` (resized to the picture)"),
  mask_width: z.number().int(),
  mask_height: z.number().int(),
  predicted_iou: z.number().describe("The segmenter's own estimate, 0..1, of how well the mask covers the object"),
  coverage: z.number().describe("Share of the picture selected, 0..1"),
});

export type StartSelectionInput = z.infer<typeof startSelectionInput>;
export type StartSelectionOutput = z.infer<typeof startSelectionOutput>;
export type RefineSelectionInput = z.infer<typeof refineSelectionInput>;
export type RefineSelectionOutput = z.infer<typeof refineSelectionOutput>;
export type SelectionStatusOutput = z.infer<typeof selectionStatusOutput>;
