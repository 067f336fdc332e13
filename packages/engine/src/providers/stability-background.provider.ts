import type { BackgroundRemover, GreyImage, RgbaImage, WorkContext } from "../engine.ports";
import { asBuffer, DEFAULT_MAX_PIXELS, resizeGrey } from "../pixels/image-codec";
import { createCheckpoint } from "../work-checkpoint";
import { cutOut, localColoursFromMatte } from "../workflows/alpha-matting";
import { toWorkingResolution } from "../workflows/background-removal.classical";
import { decodeAnswer, encodeUpload, sizeWithin } from "./provider-images";
import type { BackgroundProviderOptions } from "./removal-provider";
import { callStability, STABILITY_VENDOR, type StabilityRequest, stabilityEndpoint } from "./stability-api";
import { callUpstream, type UpstreamPolicy, type UpstreamTuning } from "./upstream-call";

/** The endpoint's name, recorded as the provider record's model. */
export const STABILITY_BACKGROUND_MODEL = "remove-background";
const PATH = "/v2beta/stable-image/edit/remove-background";
/** Stability's documented input limits for this endpoint: every side at least 64 px, at most 4,194,304 pixels. */
const MAX_PIXELS = 4_194_304;
const MIN_SIDE = 64;
/** The side the local colours are estimated at, as for the built-in model (background-removal.onnx.ts). */
const WORKING_SIZE = 800;

/**
 * Background removal by Stability AI's `POST /v2beta/stable-image/edit/remove-background`
 * (multipart `image`, `output_format`; the cut-out back as a PNG with alpha).
 * The picture is sent at its own size when the endpoint takes it, else
 * scaled into its limits; only the answer's alpha is used: brought to the
 * input's exact size, it is the matte of the same straight-alpha cut-out the
 * built-in model makes (the input's own colours, solved for their foreground
 * part at the edges), so a downscaled upload costs edge sharpness, never
 * colour.
 */
export class StabilityBackgroundRemover implements BackgroundRemover {
  readonly name = "stability";
  readonly model = STABILITY_BACKGROUND_MODEL;
  private readonly policy: UpstreamPolicy;
  private readonly baseUrl: string;

  constructor(
    private readonly options: BackgroundProviderOptions,
    tuning?: UpstreamTuning,
  ) {
    ({ baseUrl: this.baseUrl, policy: this.policy } = stabilityEndpoint(PATH, options, tuning));
  }

  async removeBackground(image: RgbaImage, context: WorkContext): Promise<RgbaImage> {
    const size = sizeWithin(image, { maxPixels: MAX_PIXELS, minSide: MIN_SIDE });
    const request: StabilityRequest = {
      path: PATH,
      fields: [["output_format", "png"]],
      upload: await encodeUpload(image, size),
      mask: undefined,
    };
    const { value, latencyMs } = await callUpstream(this.policy, context.signal, (http) =>
      callStability(this.baseUrl, this.options.apiKey, request, http),
    );
    const answer = await decodeAnswer(STABILITY_VENDOR, value, DEFAULT_MAX_PIXELS);
    const matte = alphaOf(answer);
    const alpha = await resizeGrey(matte, image.width, image.height);
    const work = await toWorkingResolution(image, WORKING_SIZE);
    const workAlpha = work === image ? alpha : await resizeGrey(matte, work.width, work.height);
    const result = await cutOut(image, alpha, localColoursFromMatte(work, workAlpha.data), createCheckpoint(context.signal));
    context.recordProvider?.({ name: this.name, model: this.model, latencyMs });
    return result;
  }
}

function alphaOf(image: RgbaImage): GreyImage {
  const data = new Uint8Array(image.width * image.height);
  const rgba = asBuffer(image.data);
  for (let i = 0; i < data.length; i++) data[i] = rgba[i * 4 + 3] ?? 0;
  return { data, width: image.width, height: image.height };
}
