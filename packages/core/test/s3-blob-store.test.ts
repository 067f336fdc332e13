import { createHash } from "node:crypto";
import { PassThrough } from "node:stream";
import { DeleteObjectsCommand, GetObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type S3Gateway, startS3Gateway } from "../../../test/support/s3-gateway";
import { BlobStoreError } from "../src/blobs/blob-store";
import { S3BlobStore } from "../src/blobs/s3-blob-store";

/**
 * The S3 store against s3rver behind the verifying gateway
 * (test/support/s3-gateway.ts), and the gateway's own checks: each signing
 * mistake a client could make is refused, so that the service's requests
 * passing through it means they are correctly signed.
 */
let gateway: S3Gateway;
beforeAll(async () => {
  gateway = await startS3Gateway();
});
afterAll(() => gateway.close());

function client(overrides: { region?: string; secretAccessKey?: string; checksums?: "WHEN_SUPPORTED" | "WHEN_REQUIRED" } = {}) {
  return new S3Client({
    endpoint: gateway.endpoint,
    region: overrides.region ?? gateway.region,
    forcePathStyle: true,
    credentials: { accessKeyId: gateway.accessKeyId, secretAccessKey: overrides.secretAccessKey ?? gateway.secretAccessKey },
    requestChecksumCalculation: overrides.checksums ?? "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    maxAttempts: 1,
  });
}

function store(overrides: Partial<ConstructorParameters<typeof S3BlobStore>[0]> = {}) {
  return new S3BlobStore({
    bucket: gateway.bucket,
    endpoint: gateway.endpoint,
    region: gateway.region,
    forcePathStyle: true,
    prefix: "unit/",
    credentials: { accessKeyId: gateway.accessKeyId, secretAccessKey: gateway.secretAccessKey },
    ...overrides,
  });
}

const bytes = (size: number, seed: number) => Buffer.from(Array.from({ length: size }, (_, index) => (index * 31 + seed) % 256));

describe("S3BlobStore through the verifying gateway", () => {
  it("puts, gets, streams, deletes (one and many) and checks the bucket, every request signed by header", async () => {
    const blobs = store();
    const image = bytes(300_000, 7);
    await blobs.check();
    await blobs.put("results/job_a.png", image, { contentType: "image/png" });
    // The exact bytes are in the bucket under the prefix: no aws-chunked framing was stored with them.
    expect((await gateway.object("unit/results/job_a.png"))?.equals(image)).toBe(true);
    expect((await blobs.get("results/job_a.png")).equals(image)).toBe(true);
    const opened = await blobs.open("results/job_a.png");
    expect(opened?.size).toBe(image.length);
    const chunks: Buffer[] = [];
    for await (const chunk of opened?.stream ?? []) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).equals(image)).toBe(true);
    expect(await blobs.open("results/missing.png")).toBeUndefined();

    const keys = Array.from({ length: 5 }, (_, index) => `inputs/job_${index}`);
    await Promise.all(keys.map((key, index) => blobs.put(key, bytes(1000, index))));
    await blobs.delete("results/job_a.png");
    await blobs.delete("results/never-was.png");
    await blobs.deleteMany([...keys, "inputs/never-was"]);
    expect((await gateway.keys()).filter((key) => key.startsWith("unit/"))).toEqual([]);
    const mine = gateway.requests.filter((request) => request.url.includes("/unit/") || request.url.includes("delete"));
    expect(mine.length).toBeGreaterThan(0);
    expect(mine.every((request) => request.auth === "header" && request.refused === undefined)).toBe(true);
    blobs.close();
  });

  it("presigns a GET that downloads the bytes with no other credential, for its lifetime only", async () => {
    const blobs = store();
    const image = bytes(5000, 3);
    await blobs.put("results/job_p.webp", image, { contentType: "image/webp" });
    const url = await blobs.presignedUrl("results/job_p.webp", 3600);
    expect(new URL(url).searchParams.get("X-Amz-Expires")).toBe("3600");
    const answer = await fetch(url);
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toBe("image/webp");
    expect(Buffer.from(await answer.arrayBuffer()).equals(image)).toBe(true);
    expect(gateway.requests.at(-1)).toMatchObject({ auth: "query", status: 200 });
    blobs.close();
  });

  it("a bucket that does not exist, a wrong secret and an unreachable store are BlobStoreErrors naming the cause", async () => {
    const missing = await store({ bucket: "no-such-bucket" })
      .check()
      .catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(BlobStoreError);
    expect((missing as Error).message).toMatch(/no-such-bucket.*does not exist/);

    const wrongSecret = await store({
      credentials: { accessKeyId: gateway.accessKeyId, secretAccessKey: "wrong-secret-wrong-secret" },
    })
      .put("inputs/x", bytes(10, 1))
      .catch((error: unknown) => error);
    expect(wrongSecret).toBeInstanceOf(BlobStoreError);
    expect((wrongSecret as Error).message).toMatch(/SignatureDoesNotMatch \(HTTP 403\): check the credentials/);
    expect((wrongSecret as Error).message).not.toContain("wrong-secret");

    const down = await store({ endpoint: "http://127.0.0.1:9" })
      .check()
      .catch((error: unknown) => error);
    expect(down).toBeInstanceOf(BlobStoreError);
    expect((down as Error).message).toMatch(/S3 check in bucket "retouch-test" at http:\/\/127\.0\.0\.1:9/);
  });
});

describe("the gateway refuses signing mistakes (so that passing it means something)", () => {
  const key = "gateway-check/object.bin";
  beforeAll(async () => {
    await client().send(new PutObjectCommand({ Bucket: gateway.bucket, Key: key, Body: bytes(100, 9) }));
  });

  async function refusal(send: () => Promise<unknown>): Promise<{ status?: number; name: string }> {
    const error = (await send().then(
      () => undefined,
      (caught: unknown) => caught,
    )) as { name: string; $metadata?: { httpStatusCode?: number } } | undefined;
    if (!error) throw new Error("the gateway accepted it");
    return { name: error.name, ...(error.$metadata?.httpStatusCode ? { status: error.$metadata.httpStatusCode } : {}) };
  }

  it("anonymous requests: 403", async () => {
    const answer = await fetch(`${gateway.endpoint}/${gateway.bucket}/${key}`);
    expect(answer.status).toBe(403);
    expect(await answer.text()).toContain("<Code>AccessDenied</Code>");
    const list = await fetch(`${gateway.endpoint}/${gateway.bucket}`);
    expect(list.status).toBe(403);
  });

  it("a wrong secret (header and presigned): 403 SignatureDoesNotMatch", async () => {
    const wrong = client({ secretAccessKey: "not-the-secret-0123456789" });
    expect(await refusal(() => wrong.send(new GetObjectCommand({ Bucket: gateway.bucket, Key: key })))).toEqual({
      status: 403,
      name: "SignatureDoesNotMatch",
    });
    const url = await getSignedUrl(wrong, new GetObjectCommand({ Bucket: gateway.bucket, Key: key }), { expiresIn: 60 });
    expect((await fetch(url)).status).toBe(403);
  });

  it("a wrong region (header and presigned): 403", async () => {
    const elsewhere = client({ region: "us-east-1" });
    expect(await refusal(() => elsewhere.send(new GetObjectCommand({ Bucket: gateway.bucket, Key: key })))).toMatchObject({
      status: 403,
    });
    const url = await getSignedUrl(elsewhere, new GetObjectCommand({ Bucket: gateway.bucket, Key: key }), { expiresIn: 60 });
    const answer = await fetch(url);
    expect(answer.status).toBe(403);
    expect(await answer.text()).toContain("region us-east-1 is wrong");
  });

  it("a tampered presigned URL (another key, a longer lifetime, a dropped signature): 403", async () => {
    const url = new URL(
      await getSignedUrl(client(), new GetObjectCommand({ Bucket: gateway.bucket, Key: key }), { expiresIn: 60 }),
    );
    expect((await fetch(url)).status).toBe(200);
    const otherKey = new URL(url);
    otherKey.pathname = otherKey.pathname.replace("object.bin", "other.bin");
    const longer = new URL(url);
    longer.searchParams.set("X-Amz-Expires", "3600");
    const unsigned = new URL(url);
    unsigned.searchParams.delete("X-Amz-Signature");
    for (const tampered of [otherKey, longer]) {
      const answer = await fetch(tampered);
      expect(answer.status).toBe(403);
      expect(await answer.text()).toContain("SignatureDoesNotMatch");
    }
    expect((await fetch(unsigned)).status).toBe(400);
  });

  it("an expired presigned URL: 403 Request has expired", async () => {
    const url = await getSignedUrl(client(), new GetObjectCommand({ Bucket: gateway.bucket, Key: key }), {
      expiresIn: 60,
      signingDate: new Date(Date.now() - 120_000),
    });
    const answer = await fetch(url);
    expect(answer.status).toBe(403);
    expect(await answer.text()).toContain("Request has expired");
  });

  it("a body that is not the one signed (x-amz-content-sha256 mismatch): 400, and nothing stored", async () => {
    const tampering = client();
    // After signing, the body is swapped for another of the same length, as a broken proxy or signer would.
    type Middleware = Parameters<typeof tampering.middlewareStack.addRelativeTo>[0];
    const swapBody = ((next: (args: { request: { body: unknown } }) => Promise<unknown>) =>
      async (args: { request: { body: unknown } }) => {
        args.request.body = bytes(100, 42);
        return next(args);
      }) as unknown as Middleware;
    tampering.middlewareStack.addRelativeTo(swapBody, {
      relation: "after",
      toMiddleware: "httpSigningMiddleware",
      name: "swapBody",
    });
    const signedBody = bytes(100, 1);
    expect(createHash("sha256").update(signedBody).digest("hex")).not.toBe(
      createHash("sha256").update(bytes(100, 42)).digest("hex"),
    );
    expect(
      await refusal(() =>
        tampering.send(new PutObjectCommand({ Bucket: gateway.bucket, Key: "gateway-check/swapped", Body: signedBody })),
      ),
    ).toEqual({ status: 400, name: "XAmzContentSHA256Mismatch" });
    expect(await gateway.object("gateway-check/swapped")).toBeUndefined();
  });

  it("the SDK's default checksums (a CRC32 header on a put; CRC32 rather than Content-MD5 on DeleteObjects) are refused as R2, B2 and MinIO refused them", async () => {
    const defaults = client({ checksums: "WHEN_SUPPORTED" });
    expect(
      await refusal(() =>
        defaults.send(new PutObjectCommand({ Bucket: gateway.bucket, Key: "gateway-check/crc", Body: bytes(10, 1) })),
      ),
    ).toEqual({ status: 501, name: "NotImplemented" });
    const deleteMany = new DeleteObjectsCommand({ Bucket: gateway.bucket, Delete: { Objects: [{ Key: key }], Quiet: true } });
    // "When required" still sends CRC32 here, not Content-MD5.
    expect(await refusal(() => client().send(deleteMany))).toEqual({ status: 501, name: "NotImplemented" });
    expect(await gateway.object("gateway-check/crc")).toBeUndefined();
    expect(await gateway.object(key)).toBeDefined();
  });

  it("the SDK's default checksums send a streamed upload as aws-chunked: refused, which is why the store turns them off and puts Buffers", async () => {
    const defaults = client({ checksums: "WHEN_SUPPORTED" });
    const body = new PassThrough();
    body.end(bytes(1000, 5));
    const outcome = await refusal(() =>
      defaults.send(
        new PutObjectCommand({ Bucket: gateway.bucket, Key: "gateway-check/chunked", Body: body, ContentLength: 1000 }),
      ),
    );
    expect(outcome).toEqual({ status: 400, name: "NotImplemented" });
    expect(gateway.requests.at(-1)?.refused).toBe("NotImplemented");
    expect(await gateway.object("gateway-check/chunked")).toBeUndefined();
  });
});
