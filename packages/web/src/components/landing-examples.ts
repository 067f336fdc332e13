/**
 * The landing page's before/after examples: real photographs (the engine's
 * test fixtures, packages/engine/test/fixtures/README.md gives their sources)
 * edited by this service's own engine. `pnpm --filter @retouch/web examples`
 * (scripts/make-landing-examples.ts) writes the pictures into public/examples;
 * nothing there is made by hand.
 */
export interface LandingExample {
  id: string;
  /** The fixture photograph it starts from. */
  photo: string;
  prompt: string;
  /** Alt text of the original. */
  subject: string;
  /** The photo's author and licence, as the fixtures' README states them. */
  credit: string;
  /** What the engine is asked for; a cut-out is always PNG, stored as WebP with its transparency. */
  format: "png" | "jpeg";
}

export const LANDING_EXAMPLES: LandingExample[] = [
  {
    id: "coffee",
    photo: "coffee.jpg",
    prompt: "remove the background",
    subject: "a cup of coffee on a saucer",
    credit: "Photo: Rachel Michetti, CC0 (scikit-image sample data)",
    format: "png",
  },
  {
    id: "pagoda",
    photo: "pagoda.jpg",
    prompt: "make it black and white",
    subject: "a pagoda at the Summer Palace",
    credit: "Photo: danielbuechele on Flickr, CC BY 2.0 (scikit-learn sample data)",
    format: "jpeg",
  },
  {
    id: "dahlia",
    photo: "dahlia.jpg",
    prompt: "make it brighter",
    subject: "two dahlias",
    credit: "Photo: vultilion on Flickr, CC BY 2.0 (scikit-learn sample data)",
    format: "jpeg",
  },
];

/** Where the page finds an example's pictures (the web package's public/examples). */
export const exampleBefore = (example: LandingExample) => `/examples/${example.id}-before.jpg`;
export const exampleAfter = (example: LandingExample) =>
  `/examples/${example.id}-after.${example.format === "png" ? "webp" : "jpg"}`;
