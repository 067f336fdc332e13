import type { IncomingMessage, ServerResponse } from "node:http";
import { Busboy, type BusboyFileStream, type BusboyInstance } from "@fastify/busboy";
import { type MultipartForm, RetouchError } from "@retouch/core";
import { type ReadBodyOptions, streamBody } from "./body";

/** Longest text part: a prompt is at most 2000 characters, a URL 2048; 16 KiB leaves room for any UTF-8. */
export const MAX_TEXT_PART_BYTES = 16 * 1024;

/**
 * What a file part may declare itself as. curl sends the type its extension
 * suggests, or `application/octet-stream` when it knows none; the bytes are
 * inspected afterwards anyway, as base64 is. A part declared as text or JSON
 * is a mistake worth saying (a prompt sent with `@`, a file with `<`).
 */
function acceptedFileType(type: string | undefined): boolean {
  const media = type?.split(";")[0]?.trim().toLowerCase();
  return media === undefined || media === "" || media.startsWith("image/") || media === "application/octet-stream";
}

const invalid = (message: string) => new RetouchError("invalid_request", message);

export interface ReadMultipartOptions extends ReadBodyOptions {
  form: MultipartForm;
  /** Largest file part (the service's largest image, RETOUCH_MAX_IMAGE_BYTES). */
  maxFileBytes: number;
}

/**
 * Reads a `multipart/form-data` body as it streams (@fastify/busboy), under
 * the same checks as a JSON body (`streamBody`: the request's size limit, the
 * body budget, the idle timeout) and the form's own, each refused as soon as it
 * is seen, with the rest of the body left unread: a file part over
 * `maxFileBytes` (413, the same code as an oversized base64 image), a part
 * the form does not take, a part twice, a file declared as text (415). The
 * result is the JSON body the operation would have got: file parts as base64,
 * numbers as numbers. Undefined for an empty body.
 */
export async function readMultipartBody(
  req: IncomingMessage,
  res: ServerResponse,
  options: ReadMultipartOptions,
): Promise<Record<string, unknown> | undefined> {
  const { form, maxFileBytes } = options;
  const fileNames = Object.keys(form.files);
  let parser: BusboyInstance;
  try {
    parser = new Busboy({
      headers: req.headers as { "content-type": string },
      limits: {
        files: fileNames.length,
        fields: form.text.length,
        parts: fileNames.length + form.text.length,
        fieldSize: MAX_TEXT_PART_BYTES,
        headerPairs: 16,
      },
    });
  } catch (error) {
    throw invalid(`The multipart/form-data body cannot be read: ${(error as Error).message}.`);
  }

  let failure: RetouchError | undefined;
  const fail = (error: RetouchError) => {
    failure ??= error;
  };
  const files = new Map<string, Buffer>();
  const texts = new Map<string, string>();
  const seen = new Set<string>();
  const once = (name: string): boolean => {
    if (seen.has(name)) {
      fail(invalid(`${name}: sent twice; send each part once.`));
      return false;
    }
    seen.add(name);
    return true;
  };
  const tooMany = () => fail(invalid(`Too many parts: this operation takes ${[...fileNames, ...form.text].join(", ")}.`));

  parser.on("file", (name: string, stream: BusboyFileStream, _filename: string, _encoding: string, type: string) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // Whatever happens, the part is drained: the parser moves on to the next one.
    stream.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxFileBytes) {
        fail(
          new RetouchError(
            "payload_too_large",
            `${name}: the file is larger than ${maxFileBytes} bytes, the largest image accepted.`,
          ),
        );
      } else if (!failure) chunks.push(chunk);
    });
    // A body cut short inside a file part errors on the part's stream: without a listener, that would throw out of
    // the process (any client could stop the server with a truncated upload).
    stream.on("error", (error: Error) => {
      fail(invalid(`The multipart/form-data body is malformed: ${error.message}.`));
    });
    stream.on("end", () => {
      if (!failure && size <= maxFileBytes) files.set(name, Buffer.concat(chunks, size));
    });
    if (!(name in form.files)) {
      if (form.text.includes(name)) fail(invalid(`${name}: send it as a text part, not a file.`));
      else fail(invalid(`${name}: not a part this operation takes; files go in ${fileNames.join(" and ")}.`));
      return;
    }
    if (!once(name)) return;
    if (!acceptedFileType(type)) {
      fail(
        new RetouchError(
          "unsupported_media_type",
          `${name}: the part is declared as ${type}; send the picture's bytes as image/jpeg, image/png, image/webp or application/octet-stream (curl -F ${name}=@photo.jpg).`,
        ),
      );
    }
  });
  parser.on("field", (name: string, value: string, _nameTruncated: boolean, valueTruncated: boolean) => {
    if (name in form.files) {
      fail(invalid(`${name}: send the picture as a file part (curl -F ${name}=@photo.jpg), not as text.`));
      return;
    }
    if (!form.text.includes(name)) {
      fail(
        invalid(
          name === "images"
            ? "images: a batch is sent as JSON; a multipart body carries one image."
            : `${name}: not a field of this operation; it takes ${form.text.join(", ")}.`,
        ),
      );
      return;
    }
    if (!once(name)) return;
    if (valueTruncated) fail(invalid(`${name}: a text part is at most ${MAX_TEXT_PART_BYTES} bytes.`));
    texts.set(name, value);
  });
  parser.on("filesLimit", tooMany);
  parser.on("fieldsLimit", tooMany);
  parser.on("partsLimit", tooMany);
  const finished = new Promise<void>((resolve) => {
    parser.on("finish", resolve);
    parser.on("error", (error: unknown) => {
      fail(invalid(`The multipart/form-data body is malformed: ${(error as Error).message}.`));
      resolve();
    });
  });

  let received: number;
  try {
    received = await streamBody(req, res, options, (chunk) => {
      // Refused at the chunk that showed the problem: nothing more is read.
      if (failure) throw failure;
      parser.write(chunk);
    });
  } catch (error) {
    parser.destroy();
    throw error;
  }
  if (received === 0) return undefined;
  parser.end();
  await finished;
  if (failure) throw failure;

  const body: Record<string, unknown> = {};
  for (const [name, value] of texts) {
    // A number that is not one stays text: the operation's validation names the field.
    body[name] = form.numbers.includes(name) && /^-?\d+(?:\.\d+)?$/.test(value.trim()) ? Number(value) : value;
  }
  for (const [name, bytes] of files) body[name] = bytes.toString("base64");
  for (const [name, file] of Object.entries(form.files)) {
    if (!file.required || files.has(name) || (file.alternative && texts.has(file.alternative))) continue;
    throw invalid(
      `${name}: is required: send the picture as a file part (curl -F ${name}=@photo.jpg)${file.alternative ? ` or ${file.alternative} as text` : ""}.`,
    );
  }
  return body;
}
