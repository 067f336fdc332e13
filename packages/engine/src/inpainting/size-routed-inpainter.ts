import type { GreyImage, Inpainter, RgbaImage, WorkContext } from "../engine.ports";

/**
 * Up to this many pixels a picture's holes are filled by the learned inpainter; above, by PatchMatch. The learned
 * model answers in its own 512 square: a person's hole in a 12 MP photo (about 1600 px tall) is drawn at 256 model
 * pixels and stretched six times, where PatchMatch copies the photo's own full-resolution pixels. And its pass at 512²
 * peaks at 255-390 MB (MI-GAN), which two 12 MP edits at once cannot add to within the worker's 1 GiB: 1156 MiB in
 * the 12 MP memory bench with MI-GAN filling, 962 MiB with PatchMatch (docs/engine.md, "Learned inpainting").
 */
export const LEARNED_FILL_MAX_PIXELS = 4_000_000;

/** A learned inpainter whose model can be given back between fills. */
export interface ReleasableInpainter extends Inpainter {
  release(): void;
}

/**
 * The learned inpainter for pictures up to `maxPixels`, PatchMatch (or another fallback) above. A fill above the
 * limit first gives the learned model's session back (about 60 MB held otherwise, through every large edit that
 * follows); the next small fill loads it again.
 */
export class SizeRoutedInpainter implements Inpainter {
  constructor(
    private readonly learned: ReleasableInpainter,
    private readonly fallback: Inpainter,
    private readonly maxPixels = LEARNED_FILL_MAX_PIXELS,
  ) {}

  inpaint(image: RgbaImage, mask: GreyImage, context: WorkContext): Promise<RgbaImage> {
    if (image.width * image.height <= this.maxPixels) return this.learned.inpaint(image, mask, context);
    this.learned.release();
    return this.fallback.inpaint(image, mask, context);
  }
}
