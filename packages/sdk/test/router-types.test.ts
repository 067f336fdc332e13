import { readFile } from "node:fs/promises";
import { expect, it } from "vitest";
import { GENERATED_FILE, generateRouterTypes } from "../scripts/router-types";

it("the SDK's router types match the router (run `pnpm --filter @retouch/sdk generate` if not)", async () => {
  expect(generateRouterTypes()).toBe(await readFile(GENERATED_FILE, "utf8"));
}, 60_000);
