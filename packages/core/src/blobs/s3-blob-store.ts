import { Readable } from "node:stream";
import {
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { type BlobStore, BlobStoreError, type PutOptions } from "./blob-store";

export interface S3BlobStoreOptions {
  bucket: string;
  /** Unset: AWS itself. Otherwise an S3-compatible server (R2, MinIO, ...). */
  endpoint: string | undefined;
  region: string;
  /** `https://endpoint/bucket/key` rather than `https://bucket.endpoint/key` (MinIO and most self-hosted servers). */
  forcePathStyle: boolean;
  /** Put before every key, e.g. `retouch/` (already normalised: empty or ending in one slash). */
  prefix: string;
  /**
   * For tests only: explicit credentials. Left out, the AWS SDK's default chain
   * is used (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, a profile, an instance or task role, ...).
   */
  credentials?: { accessKeyId: string; secretAccessKey: string };
}

/** S3's DeleteObjects takes at most 1000 keys a request. */
const DELETE_BATCH = 1000;

/**
 * Blobs as objects in one S3 bucket (AWS S3, Cloudflare R2, MinIO, any
 * S3-compatible server), on the official AWS SDK.
 *
 * Request checksums are "when required" both ways: since 3.729 the SDK adds a
 * CRC32 checksum to every upload and, for a body it cannot hash up front,
 * sends it as `aws-chunked` with a trailing checksum; many S3-compatible
 * servers (older MinIO, R2 at the time, Ceph, s3rver) refuse such uploads or,
 * worse, store the chunk framing as the object. Uploads here are Buffers with a
 * known Content-Length, signed with their SHA-256, which every server accepts.
 * DeleteObjects is the one operation that requires a checksum, and there even
 * "when required" sends CRC32 rather than the Content-MD5 that S3's
 * specification names and that MinIO and Ceph insist on: deleteMany asks for MD5.
 */
export class S3BlobStore implements BlobStore {
  readonly kind = "s3";
  private readonly client: S3Client;

  constructor(private readonly options: S3BlobStoreOptions) {
    this.client = new S3Client({
      region: options.region,
      ...(options.endpoint ? { endpoint: options.endpoint } : {}),
      forcePathStyle: options.forcePathStyle,
      ...(options.credentials ? { credentials: options.credentials } : {}),
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
      // A store that stops answering must fail the request (and the job, refunded), not hold it forever.
      requestHandler: { connectionTimeout: 5_000, requestTimeout: 60_000 },
      maxAttempts: 3,
    });
  }

  private objectKey(key: string): string {
    return `${this.options.prefix}${key}`;
  }

  async put(key: string, bytes: Buffer, options: PutOptions = {}): Promise<void> {
    await this.send("put", key, () =>
      this.client.send(
        new PutObjectCommand({
          Bucket: this.options.bucket,
          Key: this.objectKey(key),
          Body: bytes,
          ContentLength: bytes.length,
          ...(options.contentType ? { ContentType: options.contentType } : {}),
        }),
      ),
    );
  }

  async get(key: string): Promise<Buffer> {
    const opened = await this.open(key);
    if (!opened) throw new Error(`no blob ${key} in the store`);
    const chunks: Buffer[] = [];
    try {
      for await (const chunk of opened.stream) chunks.push(chunk as Buffer);
    } catch (error) {
      throw this.failure("get", key, error);
    }
    return Buffer.concat(chunks);
  }

  async open(key: string): Promise<{ stream: Readable; size: number } | undefined> {
    try {
      const output = await this.client.send(new GetObjectCommand({ Bucket: this.options.bucket, Key: this.objectKey(key) }));
      const body = output.Body;
      if (!(body instanceof Readable)) throw new Error("the store answered without a body");
      return { stream: body, size: output.ContentLength ?? 0 };
    } catch (error) {
      if (error instanceof S3ServiceException && error.name === "NoSuchKey") return undefined;
      throw this.failure("get", key, error);
    }
  }

  /**
   * An object's size and ETag (HEAD), or undefined when it does not exist:
   * the blob migration's check for what is already in the bucket. The ETag is
   * the store's own MD5 of the bytes for a single-part upload without SSE-KMS.
   */
  async stat(key: string): Promise<{ size: number; etag: string | undefined } | undefined> {
    try {
      const output = await this.client.send(new HeadObjectCommand({ Bucket: this.options.bucket, Key: this.objectKey(key) }));
      return { size: output.ContentLength ?? 0, etag: output.ETag };
    } catch (error) {
      // HEAD has no body: a missing key is a bare 404 ("NotFound").
      if (error instanceof S3ServiceException && error.$metadata.httpStatusCode === 404) return undefined;
      throw this.failure("head", key, error);
    }
  }

  async delete(key: string): Promise<void> {
    // S3 answers 204 for a missing key too.
    await this.send("delete", key, () =>
      this.client.send(new DeleteObjectCommand({ Bucket: this.options.bucket, Key: this.objectKey(key) })),
    );
  }

  async deleteMany(keys: readonly string[]): Promise<void> {
    for (let start = 0; start < keys.length; start += DELETE_BATCH) {
      const batch = keys.slice(start, start + DELETE_BATCH);
      const output = await this.send("delete", `${batch.length} keys`, () =>
        this.client.send(
          new DeleteObjectsCommand({
            Bucket: this.options.bucket,
            Delete: { Objects: batch.map((key) => ({ Key: this.objectKey(key) })), Quiet: true },
            // Content-MD5, not the SDK's CRC32 (see the class comment).
            ChecksumAlgorithm: "MD5",
          }),
        ),
      );
      // DeleteObjects answers 200 even when some keys were not deleted: those are listed.
      const failed = output.Errors ?? [];
      if (failed.length > 0) {
        const first = failed[0];
        throw new BlobStoreError(
          `S3 delete in bucket ${this.options.bucket}: ${failed.length} of ${batch.length} objects not deleted (first: ${first?.Key}: ${first?.Code})`,
        );
      }
    }
  }

  async check(): Promise<void> {
    await this.send("check", "", () => this.client.send(new HeadBucketCommand({ Bucket: this.options.bucket })));
  }

  presignedUrl(key: string, ttlSeconds: number): Promise<string> {
    return getSignedUrl(this.client, new GetObjectCommand({ Bucket: this.options.bucket, Key: this.objectKey(key) }), {
      expiresIn: ttlSeconds,
    });
  }

  private async send<T>(operation: string, key: string, request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (error) {
      throw this.failure(operation, key, error);
    }
  }

  /** An operator's sentence: which operation on which bucket, and what the store (or the network) said; never a credential. */
  private failure(operation: string, key: string, error: unknown): BlobStoreError {
    const where = `bucket "${this.options.bucket}"${this.options.endpoint ? ` at ${this.options.endpoint}` : ""} (region ${this.options.region})`;
    let said: string;
    if (error instanceof S3ServiceException) {
      const status = error.$metadata.httpStatusCode;
      // HeadBucket has no body, so its refusals come back as bare statuses.
      const hint =
        status === 403
          ? ": check the credentials (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY), RETOUCH_S3_REGION and the key's permissions on the bucket"
          : status === 404 && operation === "check"
            ? ": the bucket does not exist (RETOUCH_S3_BUCKET; Retouch does not create it)"
            : "";
      said = `${error.name}${status ? ` (HTTP ${status})` : ""}${hint}`;
    } else {
      const code = (error as { code?: unknown }).code;
      said = `${error instanceof Error ? error.message : String(error)}${typeof code === "string" ? ` (${code})` : ""}`;
    }
    return new BlobStoreError(`S3 ${operation}${key ? ` of ${key}` : ""} in ${where} failed: ${said}`, { cause: error });
  }

  /** Closes the SDK's sockets. */
  close(): void {
    this.client.destroy();
  }
}
