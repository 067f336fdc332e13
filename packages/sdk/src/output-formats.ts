import { DEFAULT_OUTPUT_FORMAT, FIXED_OUTPUT_FORMATS as FIXED, OUTPUT_FORMAT_LIST } from "./process-item.generated";
import type { AppRouter } from "./router.generated";

type SubmitInput = AppRouter["process"]["submit"]["_def"]["$types"]["input"];

/** The formats the service writes an edit in, as its router declares them. */
export type OutputFormat = NonNullable<SubmitInput["format"]>;

/** A workflow, as the service names it. */
export type Workflow = NonNullable<AppRouter["jobs"]["list"]["_def"]["$types"]["input"]["workflow"]>;

// The values come from the generated file (the engine's own lists, read at generation); `satisfies` holds them to
// the router's types, so a stale generation fails the type check as well as its test.

/** Every output format, for a command line's or a form's choices: `jpeg`, `png`, `webp`. */
export const OUTPUT_FORMATS: readonly OutputFormat[] = OUTPUT_FORMAT_LIST satisfies readonly OutputFormat[];

/** The workflows that write one format whatever `format` asks: a background removal gives a PNG, for its transparency. */
export const FIXED_OUTPUT_FORMATS: Readonly<Partial<Record<Workflow, OutputFormat>>> = FIXED satisfies Partial<
  Record<Workflow, OutputFormat>
>;

/** What an edit is written in: its workflow's fixed format, else the one asked, else the default (JPEG). */
export function outputFormatFor(workflow: Workflow, requested?: OutputFormat): OutputFormat {
  return FIXED_OUTPUT_FORMATS[workflow] ?? requested ?? (DEFAULT_OUTPUT_FORMAT satisfies OutputFormat);
}
