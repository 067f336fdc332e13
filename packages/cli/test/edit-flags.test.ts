import { PROCESS_ITEM_FIELDS } from "@retouch/sdk";
import { expect, it } from "vitest";
import { EDIT_FLAGS } from "../src/commands/jobs.commands";
import { runCli } from "./run-cli";

/** `retouch edit`'s flags come from one list, which covers every option of a process item. */
it("has a flag for every option of a process item, each in `edit --help`, the formats from the SDK", async () => {
  const options = Object.keys(PROCESS_ITEM_FIELDS)
    .filter((name) => !["image", "image_url", "mask_url", "prompt"].includes(name))
    .map((name) => name.replace(/_([a-z])/g, (_match, letter: string) => letter.toUpperCase()));
  expect(Object.keys(EDIT_FLAGS).sort()).toEqual(options.sort());
  const help = await runCli(["edit", "--help"], {});
  expect(help.code).toBe(0);
  for (const spec of Object.values(EDIT_FLAGS)) expect(help.stdout).toContain(`--${spec.flag} ${spec.value}`);
  expect(help.stdout).toMatch(/--format <f> +jpeg, png or webp \(background removal always gives png\)/);
  expect(help.stdout).toContain("--negative-prompt <text>");
});

it("refuses a bad value of a generated flag before anything is sent (exit 2)", async () => {
  const bad = await runCli(["edit", "https://example.com/photo.jpg", "x", "--format", "gif"], { RETOUCH_API_KEY: "pk_test" });
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain("--format must be one of jpeg, png, webp");
});
