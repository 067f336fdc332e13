import { type DestinationStream, type Logger, pino } from "pino";

export type { Logger };

/**
 * Structured JSON logs. Credentials never reach a log line: the known secret
 * fields are redacted wherever they appear, and request logging (server) only
 * records method, path, status and timing.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: "retouch" },
      redact: {
        paths: [
          "authorization",
          "cookie",
          "password",
          "token",
          "key",
          "secret",
          "*.authorization",
          "*.cookie",
          "*.password",
          "*.token",
          "*.key",
          "*.secret",
          "headers.authorization",
          "headers.cookie",
          'headers["set-cookie"]',
        ],
        censor: "[redacted]",
      },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}
