import type { GreyImage, ObjectRemovalTask, ObjectRemover, RgbaImage, WorkContext } from "../engine.ports";
import { DEFAULT_MAX_PIXELS, resizeRgba } from "../pixels/image-codec";
import { blendInside, dilate } from "../pixels/mask-ops";
import { decodeAnswer, encodeUpload, sizeWithin, whiteWhereMasked } from "./provider-images";
import type { ObjectRemovalProviderOptions } from "./removal-provider";
import { callStability, STABILITY_VENDOR, type StabilityRequest, stabilityEndpoint } from "./stability-api";
import { callUpstream, type UpstreamPolicy, type UpstreamTuning } from "./upstream-call";

/** The endpoint's name, recorded as the provider record's model. */
export const STABILITY_ERASE_MODEL = "erase";
const PATH = "/v2beta/stable-image/edit/erase";
/**
 * Stability takes up to 9,437,184 pixels here (every side at least 64) but
 * answers at about 4 megapixels: more would be upload time for nothing.
 */
const MAX_PIXELS = 4_194_304;
const MIN_SIDE = 64;
/** The mask is widened by this many pixels of the upload, so the fill covers the object's edge (anti-aliasing, a halo). */
const GROW_UPLOAD_PIXELS = 3;

/**
 * Masked object removal by Stability AI's `POST /v2beta/stable-image/edit/erase`
 * (multipart `image`, `mask` white where to erase, `output_format`; no
 * prompt). The mask is binarised and widened a little; the answer, brought
 * to the input's exact size, is used only inside that mask (feathered by
 * 2 px): every pixel outside it keeps the input's bytes. Unmasked removals
 * ("remove the person") never come here: the engine keeps them on its own
 * detector and inpainter.
 */
export class StabilityEraseRemover implements ObjectRemover {
  readonly name = "stability";
  readonly model = STABILITY_ERASE_MODEL;
  private readonly policy: UpstreamPolicy;
  private readonly baseUrl: string;

  constructor(
    private readonly options: ObjectRemovalProviderOptions,
    tuning?: UpstreamTuning,
  ) {
    ({ baseUrl: this.baseUrl, policy: this.policy } = stabilityEndpoint(PATH, options, tuning));
  }

  async removeObjects(task: ObjectRemovalTask, context: WorkContext): Promise<RgbaImage> {
    const { image, mask } = task;
    if (!mask) throw new Error("Stability's erase needs a mask: unmasked removals stay on the built-in remover");
    const size = sizeWithin(image, { maxPixels: MAX_PIXELS, minSide: MIN_SIDE });
    const hole = widened(mask, Math.ceil(GROW_UPLOAD_PIXELS * Math.max(1, image.width / size.width)));
    const request: StabilityRequest = {
      path: PATH,
      fields: [["output_format", "png"]],
      upload: await encodeUpload(image, size),
      mask: await whiteWhereMasked(hole, size),
    };
    const { value, latencyMs } = await callUpstream(this.policy, context.signal, (http) =>
      callStability(this.baseUrl, this.options.apiKey, request, http),
    );
    let answer = await decodeAnswer(STABILITY_VENDOR, value, DEFAULT_MAX_PIXELS);
    if (answer.width !== image.width || answer.height !== image.height) {
      // The same picture at another scale: stretched back, not cropped (its aspect is the upload's, up to rounding).
      answer = await resizeRgba(answer, image.width, image.height);
    }
    const result = await blendInside(image, answer, hole);
    context.recordProvider?.({ name: this.name, model: this.model, latencyMs });
    return result;
  }
}

/** The mask's marked pixels (at least half white), widened by `radius` pixels. */
function widened(mask: GreyImage, radius: number): GreyImage {
  const binary = new Uint8Array(mask.data.length);
  for (let i = 0; i < binary.length; i++) binary[i] = (mask.data[i] ?? 0) >= 128 ? 255 : 0;
  return { data: dilate(binary, mask.width, mask.height, radius), width: mask.width, height: mask.height };
}
