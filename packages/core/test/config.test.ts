import { describe, expect, it } from "vitest";
import { ConfigError, parseConfig, parseDuration } from "../src/config/env";

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
