import { errorResponses, type Operation } from "../discovery/error-responses";

/** Where a result's signed link points (under FILES_PREFIX). */
export const DOWNLOAD_RESULT_PATH = "/files/results/{file}";

/**
 * A result's download link in the OpenAPI document: served by the host from
 * the blob store, not by a procedure, so the generator cannot derive it.
 */
export function downloadResultPath(): Record<string, Operation> {
  return {
    get: {
      operationId: "downloadResult",
      summary: "Download a result image",
      description:
        "The `url` of `GET /api/process/result` (and of a webhook's `result_url`). The signature in the query is the credential: no header is needed, and the link works for 1 hour. A server that keeps results in an S3 bucket may hand out the bucket's own presigned URL instead, which works the same way.",
      tags: ["Jobs"],
      security: [],
      parameters: [
        { name: "file", in: "path", required: true, schema: { type: "string" }, description: "`<job_id>.<png|jpeg|webp>`" },
        {
          name: "expires",
          in: "query",
          required: true,
          schema: { type: "integer" },
          description: "Unix seconds when the link stops working",
        },
        {
          name: "signature",
          in: "query",
          required: true,
          schema: { type: "string" },
          description: "HMAC of the path and expiry",
        },
      ],
      responses: {
        "200": {
          description: "The image",
          content: {
            "image/png": { schema: { type: "string", contentMediaType: "image/png" } },
            "image/jpeg": { schema: { type: "string", contentMediaType: "image/jpeg" } },
            "image/webp": { schema: { type: "string", contentMediaType: "image/webp" } },
          },
        },
        ...errorResponses(["signed_url_invalid", "not_found"]),
      },
    },
  };
}
