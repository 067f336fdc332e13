import { type ImageInput, imageToBase64, remoteImageUrl } from "./images";
import { PROCESS_ITEM_FIELDS } from "./process-item.generated";
import type { AppRouter } from "./router.generated";

/** One image of `process.submit` as it travels: the router's input without the batch's `images`. */
export type WireItem = Omit<AppRouter["process"]["submit"]["_def"]["$types"]["input"], "images">;

type CamelCase<S extends string> = S extends `${infer Head}_${infer Tail}` ? `${Head}${Capitalize<CamelCase<Tail>>}` : S;

/** The fields that carry a picture: the SDK takes an ImageInput for each and sends its bytes or its URL. */
type PictureField = "image" | "image_url" | "mask" | "mask_url";
type OptionField = Exclude<keyof WireItem, PictureField | "prompt">;

/**
 * An edit's options: every optional field of a process item (the router's
 * input, core's processItemSchema), camelCased (`negative_prompt` is
 * `negativePrompt`), and the mask as an image. `PROCESS_ITEM_FIELDS` has
 * each field's description.
 */
export type EditOptions = { [K in OptionField as CamelCase<K>]?: WireItem[K] } & {
  /** A PNG whose white pixels mark the area to edit (an http(s) URL is fetched by the service). */
  mask?: ImageInput;
};

/** One image of a batch: the picture, the prompt and its own options. */
export type BatchItem = EditOptions & { image: ImageInput; prompt: string };

// Both ways: a field the generated list lacks, or one the router does not take, fails the type check.
PROCESS_ITEM_FIELDS satisfies Record<keyof WireItem, string>;
const fieldNames = Object.keys(PROCESS_ITEM_FIELDS) as Array<keyof typeof PROCESS_ITEM_FIELDS>;
fieldNames satisfies Array<keyof WireItem>;

const PICTURE_FIELDS: readonly string[] = ["image", "image_url", "mask", "mask_url"] satisfies PictureField[];
const camelCase = (name: string) => name.replace(/_([a-z])/g, (_match, letter: string) => letter.toUpperCase());

/** Each option's wire name and its name in EditOptions, from the schema's own list. */
const OPTION_FIELDS = fieldNames
  .filter((name) => !PICTURE_FIELDS.includes(name) && name !== "prompt")
  .map((wire) => ({ wire, option: camelCase(wire) as keyof EditOptions }));

/**
 * The one mapping of an item to the wire. http(s) URLs go as `image_url` /
 * `mask_url`: the service fetches them, nothing is downloaded here; other
 * pictures go as base64. Options the caller left undefined are not sent;
 * anything else on `item` (a signal, wait options) is not an item field and
 * stays behind.
 */
export async function toWireItem(item: BatchItem, fetchImpl: typeof fetch, signal?: AbortSignal): Promise<WireItem> {
  const imageUrl = remoteImageUrl(item.image);
  const maskUrl = item.mask === undefined ? undefined : remoteImageUrl(item.mask);
  const wire: Record<string, unknown> = {
    ...(imageUrl !== undefined ? { image_url: imageUrl } : { image: await imageToBase64(item.image, fetchImpl, signal) }),
    prompt: item.prompt,
  };
  for (const { wire: name, option } of OPTION_FIELDS) {
    const value = item[option];
    if (value !== undefined) wire[name] = value;
  }
  if (maskUrl !== undefined) wire.mask_url = maskUrl;
  else if (item.mask !== undefined) wire.mask = await imageToBase64(item.mask, fetchImpl, signal);
  return wire as WireItem;
}
