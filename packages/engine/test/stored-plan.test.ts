import sharp from "sharp";
import { beforeAll, describe, expect, it } from "vitest";
import type { PlannedEdit } from "../src/engine.ports";
import { EngineError } from "../src/engine-error";
import { planEdit, plannedEdit } from "../src/workflows/edit-plan";
import { createImageEngine } from "../src/workflows/engine";
import { productScenes, type Scene } from "./synthetic-scenes.fixture";

/**
 * The plan a submission accepted is executed as given (EditRequest.plan): the
 * engine never reads the prompt again from its own configuration, and a plan it
 * cannot carry out fails the edit instead of becoming a different edit.
 */
const engine = createImageEngine();
let scene: Scene;

beforeAll(async () => {
  scene = (await productScenes(120))[1] as Scene;
});

function accepted(prompt: string, options: { provider: boolean }): PlannedEdit {
  const plan = planEdit({ prompt }, options);
  if (!plan.ok) throw new Error(`"${prompt}" was refused: ${plan.message}`);
  return plannedEdit(plan);
}

describe("a stored plan, executed as stored", () => {
  it("is plain JSON: what a submission stores reads back the same", () => {
    const plan = accepted("remove the background and add a drop shadow", { provider: false });
    expect(JSON.parse(JSON.stringify(plan))).toEqual(plan);
    expect(plan).toEqual({
      workflow: "background_removal",
      executor: "builtin",
      route: { workflow: "background_removal", removalTerms: [], followUpInstructions: ["add a drop shadow"] },
    });
  });

  it("runs the plan's workflow even where this engine's own reading of the prompt would differ, and plans one without", async () => {
    // The plan says background removal; the prompt alone reads as a black-and-white edit (JPEG).
    const plan = accepted("remove the background", { provider: false });
    const result = await engine.edit({ image: scene.jpeg, prompt: "make it black and white", plan });
    expect(result).toMatchObject({ workflow: "background_removal", format: "png" });
    expect((await sharp(result.image).metadata()).hasAlpha).toBe(true);
    // A request without a plan (a job queued before plans were stored, a direct caller) is read as before.
    const planned = await engine.edit({ image: scene.jpeg, prompt: "make it black and white" });
    expect(planned).toMatchObject({ workflow: "generative_edit", format: "jpeg" });
  });
});

describe("a stored plan this engine cannot execute", () => {
  it("fails with plan_not_executable when it names the hosted provider and this engine has none", async () => {
    const plan = accepted("make her smile", { provider: true });
    expect(plan.executor).toBe("provider");
    const edit = engine.edit({ image: scene.jpeg, prompt: "make her smile", plan });
    await expect(edit).rejects.toBeInstanceOf(EngineError);
    await expect(edit).rejects.toMatchObject({
      reason: "plan_not_executable",
      message: expect.stringContaining("RETOUCH_GENERATIVE_PROVIDER"),
    });
  });

  it("fails with plan_not_executable when the stored plan is not one it can read, rather than planning anew", async () => {
    const unreadable = [
      {
        workflow: "colourise",
        executor: "builtin",
        route: { workflow: "colourise", removalTerms: [], followUpInstructions: [] },
      },
      { workflow: "generative_edit", executor: "builtin" },
      {
        workflow: "background_removal",
        executor: "builtin",
        route: { workflow: "generative_edit", removalTerms: [], followUpInstructions: [] },
      },
    ];
    for (const plan of unreadable) {
      await expect(
        engine.edit({ image: scene.jpeg, prompt: "make it black and white", plan: plan as unknown as PlannedEdit }),
        JSON.stringify(plan),
      ).rejects.toMatchObject({ reason: "plan_not_executable" });
    }
  });
});
