import path from "node:path";
import type { Config } from "../config/env";
import { type BlobStore, FileBlobStore } from "./blob-store";
import type { S3BlobStore } from "./s3-blob-store";

/**
 * The store RETOUCH_BLOB_STORE names: files under the data directory, or an S3
 * bucket (credentials: the AWS SDK's default chain). The S3 store, and with it
 * the AWS SDK (some 90 ms to load here), is loaded only when it is configured,
 * so that a file-store installation starts as fast as before.
 */
export async function openBlobStore(config: Pick<Config, "blobStore" | "dataDir">): Promise<BlobStore> {
  const store = config.blobStore;
  if (store.kind === "file") return new FileBlobStore(path.join(config.dataDir, "blobs"));
  return openS3BlobStore(store);
}

/** The S3 store the RETOUCH_S3_* settings name (the service's, and the target of `admin blobs migrate`). */
export async function openS3BlobStore(store: Extract<Config["blobStore"], { kind: "s3" }>): Promise<S3BlobStore> {
  const { S3BlobStore } = await import("./s3-blob-store");
  return new S3BlobStore({
    bucket: store.bucket,
    endpoint: store.endpoint,
    region: store.region,
    forcePathStyle: store.forcePathStyle,
    prefix: store.prefix,
  });
}
