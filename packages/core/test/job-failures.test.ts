import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { EngineError, LocalOnnxRunner } from "@retouch/engine";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FileBlobStore } from "../src/blobs/blob-store";
import { ERROR_CODES } from "../src/errors/error-codes";
import { isPublicSentence, JOB_FAILURE_CODES, jobFailureFromError } from "../src/errors/job-failure-codes";

const during = (stage: "edit" | "store" | "settle", timedOut = false) => ({ timedOut, stage });

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), "retouch-failures-"));
});
afterAll(() => rm(scratch, { recursive: true, force: true }));

describe("the job failure table", () => {
  it("gives every code a sentence to act on", () => {
    for (const [code, entry] of Object.entries(JOB_FAILURE_CODES)) expect(entry.message, code).toMatch(/^[A-Z].{20,300}\.$/s);
  });

  it("is documented whole in docs/errors.md, beside the request errors", async () => {
    const docs = await readFile(new URL("../../../docs/errors.md", import.meta.url), "utf8");
    const missing = (codes: string[]) =>
      codes.filter((code) => !new RegExp(`^\\| (?:\\d{3} \\| )?\`${code}\` \\|`, "m").test(docs));
    expect(missing(Object.keys(JOB_FAILURE_CODES)), "job failure codes without a row").toEqual([]);
    expect(missing(Object.keys(ERROR_CODES)), "request error codes without a row").toEqual([]);
  });
});

describe("what a failed edit tells the client", () => {
  it("keeps the engine's own sentence when it is one a person can act on", () => {
    const message = '"giraffe" is not something the detector knows; send a mask, or name one of: person, car, dog.';
    const failure = jobFailureFromError(new EngineError("target_not_detectable", message), during("edit"));
    expect(failure).toEqual({ code: "target_not_detectable", message, reason: `target_not_detectable: ${message}` });
  });

  it("replaces a sentence carrying a path, a URL, a stack frame, a library error or a key with the code's default", () => {
    const leaks = [
      "The provider answered: see /var/lib/retouch/models/isnet.onnx for details.",
      "The provider at https://api.example.com/v1/images/edits said no.",
      "Failed\n    at Object.edit (engine.ts:10:5)",
      "The provider said: TypeError: fetch failed",
      "The provider refused the key sk-proj-abcdef123456.",
      "The provider could not be reached (ECONNREFUSED).",
      "x".repeat(1300),
    ];
    for (const text of leaks) {
      expect(isPublicSentence(text), text).toBe(false);
      const failure = jobFailureFromError(new EngineError("upstream_failed", text), during("edit"));
      expect(failure.code).toBe("upstream_failed");
      expect(failure.message).toBe(JOB_FAILURE_CODES.upstream_failed.message);
      // The operator still reads the whole of it.
      expect(failure.reason).toContain(text);
    }
  });

  it("never shows a model failure's own text: a real load failure names the file", async () => {
    const missing = path.join(scratch, "no-such-model.onnx");
    const error = await new LocalOnnxRunner({ threads: 1 }).load({ path: missing }).catch((e) => e);
    expect(error).toBeInstanceOf(EngineError);
    const failure = jobFailureFromError(error, during("edit"));
    expect(failure.code).toBe("model_failed");
    expect(failure.message).toBe(JOB_FAILURE_CODES.model_failed.message);
    expect(failure.message).not.toContain(scratch);
    expect(failure.reason).toContain(missing);
  });

  it("turns an unexpected error into internal_error with the generic sentence (a real ENOENT naming a path)", async () => {
    const error = await new FileBlobStore(scratch).get("inputs/job_missing").catch((e) => e);
    const failure = jobFailureFromError(error, during("edit"));
    expect(failure.code).toBe("internal_error");
    expect(failure.message).toBe(JOB_FAILURE_CODES.internal_error.message);
    expect(failure.reason).toContain("ENOENT");
    // The same error while storing the result is a storage failure.
    expect(jobFailureFromError(error, during("store")).code).toBe("result_storage_failed");
    expect(jobFailureFromError(error, during("settle")).code).toBe("internal_error");
  });

  it("reports a cancellation by the job's deadline as job_timeout, but keeps a real answer given at the last moment", () => {
    const cancelled = new EngineError("cancelled", "The edit was cancelled.");
    expect(jobFailureFromError(cancelled, during("edit", true)).code).toBe("job_timeout");
    expect(jobFailureFromError(cancelled, during("edit", false)).code).toBe("internal_error");
    const found = new EngineError("nothing_detected", "No person was found in the image.");
    expect(jobFailureFromError(found, during("edit", true)).code).toBe("nothing_detected");
  });
});
