import { describe, expect, it } from "vitest";
import { CATALOG } from "../src/prompts/generative-catalog";
import { planEdit } from "../src/workflows/edit-plan";

const none = { provider: false };
const hosted = { provider: true };

describe("planEdit: who carries out a prompt", () => {
  it("keeps what the built-in engine fully understands on the built-in engine, provider or not", () => {
    const cases: Array<[string, boolean, string]> = [
      ["remove the background", false, "background_removal"],
      ["remove the person on the left", false, "object_removal"],
      ["remove the car and make it black and white", false, "object_removal"],
      ["remove this", true, "object_removal"],
      ["make it black and white, then rotate 90 degrees", false, "generative_edit"],
      ["remove the background and add a drop shadow", false, "background_removal"],
      ["blur the faces", false, "generative_edit"],
    ];
    for (const [prompt, hasMask, workflow] of cases) {
      for (const options of [none, hosted]) {
        expect(planEdit({ prompt, hasMask }, options), prompt).toMatchObject({ ok: true, executor: "builtin", workflow });
      }
    }
  });

  it("never refuses one of the catalog's own examples", () => {
    for (const entry of CATALOG) {
      for (const example of entry.examples) {
        expect(planEdit({ prompt: example }, none), example).toMatchObject({ ok: true, executor: "builtin" });
      }
    }
  });

  it("sends the rest to the provider when one is configured", () => {
    const cases: Array<[string, string]> = [
      ["make it a watercolour painting", "generative_edit"],
      ["replace the sky with a sunset", "generative_edit"],
      ["put a hat on the dog", "generative_edit"],
      // The detector cannot find a watermark: the provider removes it from the prompt.
      ["remove the watermark", "object_removal"],
      // The removal is built in but the follow-up is not: all of it goes to the provider, nothing is dropped.
      ["remove the car and add snow", "object_removal"],
    ];
    for (const [prompt, workflow] of cases) {
      expect(planEdit({ prompt }, hosted), prompt).toMatchObject({ ok: true, executor: "provider", workflow });
    }
  });

  it("refuses, without a provider, with the clause it cannot do and what the server can", () => {
    const dragon = planEdit({ prompt: "make it brighter and add a dragon" }, none);
    expect(dragon).toMatchObject({ ok: false, reason: "unsupported_instruction" });
    if (dragon.ok) return;
    expect(dragon.message).toContain('"add a dragon"');
    expect(dragon.message).toMatch(/remove the background/);
    expect(dragon.message).toMatch(/GET \/api\/capabilities/);

    const watermark = planEdit({ prompt: "remove the watermark" }, none);
    expect(watermark).toMatchObject({ ok: false, reason: "target_not_detectable" });
    if (watermark.ok) return;
    expect(watermark.message).toMatch(/send a mask/);

    // The same prompt with a mask is built in: the mask says what to fill.
    expect(planEdit({ prompt: "remove the watermark", hasMask: true }, none)).toMatchObject({ ok: true, executor: "builtin" });
    expect(planEdit({ prompt: "remove the car and add snow" }, none)).toMatchObject({ ok: false });
    const vibes = planEdit({ prompt: "remove the car, make it warmer, snowy vibes" }, none);
    expect(vibes.ok || vibes.message).toMatch(/"snowy vibes"/);
    // A cut-out with a clause the catalog cannot do is refused whole, never cut out without it.
    const smile = planEdit({ prompt: "remove the background and make her smile" }, none);
    expect(smile).toMatchObject({ ok: false, reason: "unsupported_instruction" });
    expect(planEdit({ prompt: "remove the background and make her smile" }, hosted)).toMatchObject({ executor: "provider" });
  });

  it("lists what works once in a refusal, not once per clause and again at the end", () => {
    const list = CATALOG.map((entry) => entry.name).join(", ");
    for (const prompt of ["make it a watercolour painting", "make it brighter and add a dragon", "add a hat, add a dragon"]) {
      const plan = planEdit({ prompt }, none);
      expect(plan, prompt).toMatchObject({ ok: false, reason: "unsupported_instruction" });
      if (plan.ok) return;
      expect(plan.message.split(list).length - 1, plan.message).toBe(1);
    }
  });

  it("accepts any detect term with a mask (the mask skips detection), and refuses an unknown one without", () => {
    for (const detect of ["flux capacitor", "watermark . power line", "person"]) {
      for (const prompt of ["remove it", "Remove the marked object"]) {
        expect(planEdit({ prompt, detect, hasMask: true }, none), `${prompt} / ${detect}`).toMatchObject({
          ok: true,
          executor: "builtin",
          workflow: "object_removal",
        });
      }
    }
    const unknown = planEdit({ prompt: "remove it", detect: "flux capacitor" }, none);
    expect(unknown).toMatchObject({ ok: false, reason: "target_not_detectable" });
    if (unknown.ok) return;
    expect(unknown.message).toMatch(/"flux capacitor" is not something the detector knows; send a mask/);
    // A term the detector knows needs no mask.
    expect(planEdit({ prompt: "remove it", detect: "person . dog" }, none)).toMatchObject({ ok: true, executor: "builtin" });
  });
});
