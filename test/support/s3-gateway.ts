import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import S3rver from "s3rver";

/**
 * An S3-protocol server on loopback for tests: s3rver (a real implementation
 * of the protocol, objects on disk) behind a gateway that does what s3rver
 * does not: verify AWS Signature Version 4, both the Authorization header and
 * presigned query strings. s3rver alone serves anonymous requests, ignores
 * signatures, and stores aws-chunked uploads with their chunk framing, so a
 * signing mistake in the service would go unseen against it. The gateway
 * checks, independently of the AWS SDK (node:crypto only), the access key,
 * the signature, the credential scope's region and service, the request time
 * (15 minutes of skew) or the presigned URL's expiry, and that
 * x-amz-content-sha256 is the body's actual SHA-256 (UNSIGNED-PAYLOAD only on
 * presigned GETs). Anything else is refused as S3 refuses it (403 with an
 * S3 error document), and only verified requests reach s3rver.
 *
 * It is also as strict as the strictest S3-compatible servers about checksums,
 * which is where current SDKs break them: a DeleteObjects must carry a
 * Content-MD5 of its body (the S3 specification; MinIO and Ceph refuse it
 * without, and the SDK sends CRC32 instead unless told MD5), and the
 * "flexible checksum" headers the SDK adds by default since 3.729
 * (x-amz-checksum-crc32, ...) are answered 501 NotImplemented, as R2 and
 * Backblaze B2 answered them when that version came out.
 */
export interface S3Gateway {
  /** The endpoint to give the service (RETOUCH_S3_ENDPOINT); path-style addressing. */
  endpoint: string;
  region: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Every request that reached the gateway, in order, with what the gateway answered. */
  requests: GatewayRequest[];
  /** Refuses requests that match with this status and S3 error code (a store that fails mid-job); `undefined` lifts it. */
  failWhen(rule: FailureRule | undefined): void;
  /** The keys in the bucket, read from s3rver directly. */
  keys(): Promise<string[]>;
  /** An object's bytes, read from s3rver directly; undefined when missing. */
  object(key: string): Promise<Buffer | undefined>;
  close(): Promise<void>;
}

export interface GatewayRequest {
  method: string;
  /** The path and query as sent. */
  url: string;
  auth: "header" | "query" | "none";
  status: number;
  /** The S3 error code the gateway answered with, when it refused. */
  refused?: string;
  /** For a DeleteObjects: the keys it named. */
  deleteKeys?: string[];
}

export interface FailureRule {
  method?: string;
  /** Matches when the path (after the bucket) starts with this. */
  keyPrefix?: string;
  status: number;
  code: string;
}

const ALGORITHM = "AWS4-HMAC-SHA256";
const MAX_SKEW_MS = 15 * 60_000;
const EMPTY_SHA256 = createHash("sha256").update("").digest("hex");

class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export async function startS3Gateway(
  options: { region?: string; bucket?: string; accessKeyId?: string; secretAccessKey?: string } = {},
): Promise<S3Gateway> {
  const region = options.region ?? "eu-central-1";
  const bucket = options.bucket ?? "retouch-test";
  const accessKeyId = options.accessKeyId ?? "AKIARETOUCHTEST00001";
  const secretAccessKey = options.secretAccessKey ?? "retouch-test-secret-0123456789abcdefghijkl";
  const directory = await mkdtemp(path.join(os.tmpdir(), "retouch-s3rver-"));
  const backend = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory, configureBuckets: [{ name: bucket }] });
  const { port: backendPort } = (await backend.run()) as AddressInfo;
  const requests: GatewayRequest[] = [];
  let failure: FailureRule | undefined;

  const backendGate = new DeleteGate();
  const verifier = new SigV4Verifier({ region, service: "s3", keys: new Map([[accessKeyId, secretAccessKey]]) });

  const server: Server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(error));
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const url = req.url ?? "/";
    const entry: GatewayRequest = { method: req.method ?? "GET", url, auth: "none", status: 0 };
    if (req.method === "POST" && new URL(url, "http://gateway").searchParams.has("delete")) {
      entry.deleteKeys = [...body.toString("utf8").matchAll(/<Key>([^<]*)<\/Key>/g)].map((match) => unescapeXml(match[1] ?? ""));
    }
    requests.push(entry);
    try {
      entry.auth = verifier.verify(req, body);
      const rule = failure;
      const keyPath = new URL(url, "http://gateway").pathname.slice(`/${bucket}/`.length);
      if (
        rule &&
        (rule.method === undefined || rule.method === req.method) &&
        (rule.keyPrefix === undefined || keyPath.startsWith(rule.keyPrefix))
      ) {
        throw new Refusal(rule.status, rule.code, "refused by the test's failure rule");
      }
    } catch (error) {
      if (!(error instanceof Refusal)) throw error;
      entry.status = error.status;
      entry.refused = error.code;
      const xml = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${error.code}</Code><Message>${error.message}</Message></Error>`;
      res.writeHead(error.status, { "Content-Type": "application/xml", "Content-Length": Buffer.byteLength(xml) });
      res.end(req.method === "HEAD" ? undefined : xml);
      return;
    }
    const deletes =
      req.method === "DELETE" || (req.method === "POST" && new URL(url, "http://gateway").searchParams.has("delete"));
    const status = await backendGate.run(deletes, () => forward(req, body, res));
    entry.status = status;
  }

  /** Sends a verified request on to s3rver without its credentials (s3rver's own, partial, V4 check is not relied on). */
  function forward(req: IncomingMessage, body: Buffer, res: ServerResponse): Promise<number> {
    const target = new URL(req.url ?? "/", "http://gateway");
    for (const name of [...target.searchParams.keys()]) if (/^x-amz-/i.test(name)) target.searchParams.delete(name);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined || name === "host" || name === "authorization" || name === "connection") continue;
      if (name.startsWith("x-amz-") && !name.startsWith("x-amz-meta-")) continue;
      headers[name] = Array.isArray(value) ? value.join(",") : value;
    }
    headers["content-length"] = String(body.length);
    return new Promise((resolve, reject) => {
      const upstream = request(
        { host: "127.0.0.1", port: backendPort, method: req.method, path: `${target.pathname}${target.search}`, headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
          answer.on("end", () => resolve(answer.statusCode ?? 502));
          answer.on("error", reject);
        },
      );
      upstream.on("error", reject);
      upstream.end(body);
    });
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  async function direct(pathAndQuery: string): Promise<{ status: number; body: Buffer }> {
    const answer = await fetch(`http://127.0.0.1:${backendPort}${pathAndQuery}`);
    return { status: answer.status, body: Buffer.from(await answer.arrayBuffer()) };
  }

  return {
    endpoint: `http://127.0.0.1:${port}`,
    region,
    bucket,
    accessKeyId,
    secretAccessKey,
    requests,
    failWhen(rule) {
      failure = rule;
    },
    async keys() {
      const keys: string[] = [];
      let marker = "";
      for (;;) {
        const { body } = await direct(`/${bucket}?marker=${encodeURIComponent(marker)}`);
        const xml = body.toString("utf8");
        const page = [...xml.matchAll(/<Key>([^<]*)<\/Key>/g)].map((match) => unescapeXml(match[1] ?? ""));
        keys.push(...page);
        if (!/<IsTruncated>true<\/IsTruncated>/.test(xml) || page.length === 0) return keys.sort();
        marker = page.at(-1) as string;
      }
    },
    async object(key) {
      const { status, body } = await direct(`/${bucket}/${key.split("/").map(encodeRfc3986).join("/")}`);
      return status === 200 ? body : undefined;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await new Promise<void>((resolve) => backend.close(() => resolve()));
      await rm(directory, { recursive: true, force: true });
    },
  };
}

/**
 * Lets s3rver run a delete only while nothing else runs, and anything else
 * beside anything but a delete: a delete removes the directories it empties,
 * and a put into one of them at that moment (it made the directory, then
 * opens its file) fails with ENOENT on a write stream s3rver does not listen
 * to for errors, which ends the whole process (the test run, the bench). The
 * processes on separate machines put and delete at once all the time.
 */
class DeleteGate {
  private running = 0;
  private deleting = false;
  private readonly waiting: Array<() => void> = [];

  async run<T>(isDelete: boolean, work: () => Promise<T>): Promise<T> {
    while (this.deleting || (isDelete && this.running > 0)) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.running++;
    if (isDelete) this.deleting = true;
    try {
      return await work();
    } finally {
      this.running--;
      if (isDelete) this.deleting = false;
      for (const wake of this.waiting.splice(0)) wake();
    }
  }
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

function unescapeXml(text: string): string {
  return text
    .replaceAll("&lt;", "<")
    .replaceAll("&gt;", ">")
    .replaceAll("&quot;", '"')
    .replaceAll("&apos;", "'")
    .replaceAll("&amp;", "&");
}

/** RFC 3986 percent-encoding, as SigV4 canonicalises: everything but A-Z a-z 0-9 - _ . ~ is encoded. */
function encodeRfc3986(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`);
}

function sha256Hex(data: string | Buffer): string {
  return createHash("sha256").update(data).digest("hex");
}

function hmac(key: string | Buffer, data: string): Buffer {
  return createHmac("sha256", key).update(data, "utf8").digest();
}

/** 20261127T131500Z to epoch ms; undefined when malformed. */
function parseAmzDate(text: string | undefined): number | undefined {
  const match = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(text ?? "");
  if (!match) return undefined;
  const [, y, mo, d, h, mi, s] = match.map(Number) as number[];
  return Date.UTC(y as number, (mo as number) - 1, d, h, mi, s);
}

/**
 * SigV4 verification written from AWS's specification ("Create a canonical
 * request", "Create a string to sign", "Calculate the signature") rather than
 * with the SDK's signer, so that a mistake shared by the SDK's signing and its
 * own verification could not cancel out.
 */
export class SigV4Verifier {
  constructor(private readonly options: { region: string; service: string; keys: Map<string, string> }) {}

  /** Throws Refusal, or says how the request was authenticated. */
  verify(req: IncomingMessage, body: Buffer): "header" | "query" {
    const url = new URL(req.url ?? "/", "http://gateway");
    const authorization = req.headers.authorization;
    const presigned = url.searchParams.has("X-Amz-Algorithm") || url.searchParams.has("X-Amz-Signature");
    if (authorization && presigned) throw new Refusal(400, "InvalidArgument", "only one auth mechanism allowed");
    if (authorization) {
      this.verifyHeader(req, url, authorization, body);
      return "header";
    }
    if (presigned) {
      this.verifyQuery(req, url, body);
      return "query";
    }
    throw new Refusal(403, "AccessDenied", "anonymous access is refused");
  }

  private verifyHeader(req: IncomingMessage, url: URL, authorization: string, body: Buffer): void {
    const match = /^AWS4-HMAC-SHA256 Credential=([^,\s]+),\s*SignedHeaders=([^,\s]+),\s*Signature=([0-9a-f]{64})$/.exec(
      authorization.trim(),
    );
    if (!match) throw new Refusal(400, "AuthorizationHeaderMalformed", "the Authorization header is not SigV4");
    const [, credential, signedHeaders, signature] = match as unknown as [string, string, string, string];
    const amzDate = header(req, "x-amz-date");
    const time = parseAmzDate(amzDate);
    if (time === undefined) throw new Refusal(403, "AccessDenied", "x-amz-date is missing or malformed");
    if (Math.abs(Date.now() - time) > MAX_SKEW_MS)
      throw new Refusal(403, "RequestTimeTooSkewed", "the request time is too far off");
    const scope = this.checkCredential(credential, (amzDate as string).slice(0, 8));
    const payloadHash = header(req, "x-amz-content-sha256");
    if (!payloadHash) throw new Refusal(400, "InvalidRequest", "x-amz-content-sha256 is missing");
    if (payloadHash.startsWith("STREAMING-")) {
      // aws-chunked: s3rver would keep the chunk signatures and trailers as part of the object.
      throw new Refusal(400, "NotImplemented", `streaming (aws-chunked) uploads are not accepted: ${payloadHash}`);
    }
    if (payloadHash === "UNSIGNED-PAYLOAD") {
      throw new Refusal(403, "AccessDenied", "UNSIGNED-PAYLOAD is only accepted on presigned GETs");
    }
    if (payloadHash !== sha256Hex(body)) {
      throw new Refusal(400, "XAmzContentSHA256Mismatch", "x-amz-content-sha256 is not the body's SHA-256");
    }
    for (const name of Object.keys(req.headers)) {
      if (name.startsWith("x-amz-checksum-")) {
        throw new Refusal(501, "NotImplemented", `Header '${name}' with value '${header(req, name)}' not implemented`);
      }
    }
    if (req.method === "POST" && url.searchParams.has("delete")) {
      const md5 = header(req, "content-md5");
      if (!md5) throw new Refusal(400, "MissingContentMD5", "Missing required header for this request: Content-Md5.");
      if (md5 !== createHash("md5").update(body).digest("base64")) {
        throw new Refusal(400, "BadDigest", "The Content-MD5 you specified did not match what we received.");
      }
    }
    const names = this.checkSignedHeaders(req, signedHeaders, ["host", "x-amz-date", "x-amz-content-sha256"]);
    const canonical = this.canonicalRequest(req, url, names, payloadHash, []);
    this.checkSignature(credential, scope, amzDate as string, canonical, signature);
  }

  private verifyQuery(req: IncomingMessage, url: URL, body: Buffer): void {
    const params = url.searchParams;
    if (params.get("X-Amz-Algorithm") !== ALGORITHM)
      throw new Refusal(400, "AuthorizationQueryParametersError", "unknown algorithm");
    const credential = params.get("X-Amz-Credential") ?? "";
    const amzDate = params.get("X-Amz-Date") ?? "";
    const expires = Number(params.get("X-Amz-Expires"));
    const signedHeaders = params.get("X-Amz-SignedHeaders") ?? "";
    const signature = params.get("X-Amz-Signature") ?? "";
    const time = parseAmzDate(amzDate);
    if (
      time === undefined ||
      !Number.isInteger(expires) ||
      expires < 1 ||
      expires > 604_800 ||
      !/^[0-9a-f]{64}$/.test(signature)
    ) {
      throw new Refusal(400, "AuthorizationQueryParametersError", "X-Amz-Date, X-Amz-Expires or X-Amz-Signature is malformed");
    }
    if (time - Date.now() > MAX_SKEW_MS) throw new Refusal(403, "AccessDenied", "the request is not yet valid");
    if (Date.now() > time + expires * 1000) throw new Refusal(403, "AccessDenied", "Request has expired");
    if (req.method !== "GET" && req.method !== "HEAD") {
      throw new Refusal(403, "AccessDenied", "this gateway accepts presigned GET and HEAD requests only");
    }
    if (body.length > 0) throw new Refusal(400, "InvalidRequest", "a presigned GET has no body");
    const scope = this.checkCredential(credential, amzDate.slice(0, 8));
    const names = this.checkSignedHeaders(req, signedHeaders, ["host"]);
    const payloadHash = params.get("X-Amz-Content-Sha256") ?? "UNSIGNED-PAYLOAD";
    if (payloadHash !== "UNSIGNED-PAYLOAD" && payloadHash !== EMPTY_SHA256) {
      throw new Refusal(400, "XAmzContentSHA256Mismatch", "X-Amz-Content-Sha256 is not the (empty) body's SHA-256");
    }
    const canonical = this.canonicalRequest(req, url, names, payloadHash, ["X-Amz-Signature"]);
    this.checkSignature(credential, scope, amzDate, canonical, signature);
  }

  /** `AKID/20261127/eu-central-1/s3/aws4_request`: a known key, the request's own date, this region and service. */
  private checkCredential(credential: string, date: string): string {
    const [keyId, scopeDate, region, service, terminator, ...rest] = credential.split("/");
    if (!keyId || !this.options.keys.has(keyId)) throw new Refusal(403, "InvalidAccessKeyId", "unknown access key");
    if (rest.length > 0 || terminator !== "aws4_request" || scopeDate !== date) {
      throw new Refusal(403, "SignatureDoesNotMatch", "the credential scope is malformed or not of the request's date");
    }
    if (region !== this.options.region) {
      throw new Refusal(403, "AuthorizationHeaderMalformed", `the region ${region} is wrong; expecting ${this.options.region}`);
    }
    if (service !== this.options.service) throw new Refusal(403, "SignatureDoesNotMatch", `the service ${service} is wrong`);
    return `${scopeDate}/${region}/${service}/aws4_request`;
  }

  private checkSignedHeaders(req: IncomingMessage, list: string, required: string[]): string[] {
    const names = list.split(";");
    const sorted = [...names].sort();
    if (names.some((name, index) => name !== sorted[index] || name !== name.toLowerCase() || name === "")) {
      throw new Refusal(403, "SignatureDoesNotMatch", "SignedHeaders is not a sorted, lower-case list");
    }
    for (const name of required) {
      if (!names.includes(name)) throw new Refusal(403, "AccessDenied", `${name} must be signed`);
    }
    for (const name of names) {
      if (req.headers[name] === undefined) throw new Refusal(403, "SignatureDoesNotMatch", `signed header ${name} is missing`);
    }
    return names;
  }

  private canonicalRequest(req: IncomingMessage, url: URL, names: string[], payloadHash: string, skip: string[]): string {
    // The path as sent, each segment decoded once and encoded again the canonical way (S3 does not double-encode).
    const rawPath = (req.url ?? "/").split("?")[0] ?? "/";
    const canonicalUri = rawPath
      .split("/")
      .map((segment) => encodeRfc3986(decodeURIComponent(segment)))
      .join("/");
    const query = [...url.searchParams.entries()]
      .filter(([name]) => !skip.includes(name))
      .map(([name, value]) => [encodeRfc3986(name), encodeRfc3986(value)] as const)
      .sort(([a, av], [b, bv]) => (a < b ? -1 : a > b ? 1 : av < bv ? -1 : av > bv ? 1 : 0))
      .map(([name, value]) => `${name}=${value}`)
      .join("&");
    const headers = names.map((name) => `${name}:${(header(req, name) ?? "").trim().replace(/\s+/g, " ")}\n`).join("");
    return [req.method, canonicalUri, query, headers, names.join(";"), payloadHash].join("\n");
  }

  private checkSignature(credential: string, scope: string, amzDate: string, canonical: string, signature: string): void {
    const [keyId] = credential.split("/");
    const secret = this.options.keys.get(keyId as string) as string;
    const [date, region, service] = scope.split("/") as [string, string, string];
    const stringToSign = [ALGORITHM, amzDate, scope, sha256Hex(canonical)].join("\n");
    const signingKey = hmac(hmac(hmac(hmac(`AWS4${secret}`, date), region), service), "aws4_request");
    const expected = createHmac("sha256", signingKey).update(stringToSign, "utf8").digest();
    if (!timingSafeEqual(expected, Buffer.from(signature, "hex"))) {
      throw new Refusal(403, "SignatureDoesNotMatch", "the signature does not match");
    }
  }
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(",") : value;
}
