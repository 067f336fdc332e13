import type { AppRouter } from "./router.generated";

type SubmitInput = AppRouter["process"]["submit"]["_def"]["$types"]["input"];

/** The formats the service writes an edit in, as its router declares them. */
export type OutputFormat = NonNullable<SubmitInput["format"]>;

// The SDK loads none of the server's code, so the list it offers at run time is written here once more; `satisfies`
// holds it to the router's type both ways (a format missing here, or one the service does not write, fails the type
// check), so the server's list (@retouch/engine's OUTPUT_FORMATS) stays the one owner.
const listed = { jpeg: true, png: true, webp: true } satisfies Record<OutputFormat, true>;

/** Every output format, for a command line's or a form's choices: `jpeg`, `png`, `webp`. */
export const OUTPUT_FORMATS = Object.keys(listed) as readonly OutputFormat[];
