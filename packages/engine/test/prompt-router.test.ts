import { describe, expect, it } from "vitest";
import { cleanRemovalTerm, parseDetectQuery, routePrompt } from "../src/prompts/prompt-router";

describe("routePrompt: background removal", () => {
  it.each([
    "Remove the background",
    "remove background",
    "REMOVE THE BACKGROUND!",
    "Please remove the background from this photo",
    "remove the white background",
    "remove the whole grey backdrop",
    "make the background transparent",
    "Make the background see-through",
    "transparent background",
    "I need a transparent background please",
    "give me a transparent PNG background",
    "background removal",
    "remove bg",
    "removebg",
    "erase the background",
    "delete the background",
    "get rid of the background",
    "cut out the background",
    "cut out the product",
    "isolate the subject",
    "Please remove the background from this photo, thanks!",
    "remove the background and make it transparent",
  ])("%j", (prompt) => {
    expect(routePrompt({ prompt })).toEqual({ workflow: "background_removal", removalTerms: [], followUpInstructions: [] });
  });

  it.each([
    ["remove the background and add a border", ["add a border"]],
    ["remove the background and add a drop shadow", ["add a drop shadow"]],
    ["Remove the background, then add a white outline please", ["add a white outline please"]],
    ["add a drop shadow and remove the background", ["add a drop shadow"]],
    ["background removal with a soft drop shadow", ["a soft drop shadow"]],
    ["cut out the product and add a long shadow. Thanks!", ["add a long shadow"]],
    // A colour for an outline or a border is not a new background: the cut-out stays transparent.
    ["remove the background and add a white border", ["add a white border"]],
    // Not something a cut-out can honour: kept, so that the catalog refuses it rather than the engine dropping it.
    ["remove the background and keep the shadow", ["keep the shadow"]],
    ["remove the background and make it smile", ["make it smile"]],
  ])("%j keeps its other clauses as follow-ups", (prompt, followUps) => {
    expect(routePrompt({ prompt })).toEqual({
      workflow: "background_removal",
      removalTerms: [],
      followUpInstructions: followUps,
    });
  });
});

describe("routePrompt: object removal", () => {
  it.each([
    ["remove the person", ["person"]],
    ["Remove the person.", ["person"]],
    ["erase the car on the left", ["car on the left"]],
    ["delete the text", ["text"]],
    ["clean up the scratches", ["scratches"]],
    ["clean the dust spots", ["dust spots"]],
    ["remove the person in the background", ["person in the background"]],
    ["remove people from the photo", ["people"]],
    ["Please remove the dog from this picture", ["dog"]],
    ["remove the car, the dog and the bicycle", ["car", "dog", "bicycle"]],
    ["remove the car and erase the stop sign", ["car", "stop sign"]],
    ["get rid of the trash can", ["trash can"]],
    ["take the car out of the picture", ["car"]],
    ["take out the bottle", ["bottle"]],
    ["eliminate all the people", ["all the people"]],
    ["remove the red car so the street looks empty", ["red car"]],
    ["remove the man on the right", ["man on the right"]],
    ["can you remove the watermark please", ["watermark"]],
    ["remove the background person", ["background person"]],
  ])("%j -> %j", (prompt, terms) => {
    const route = routePrompt({ prompt });
    expect(route.workflow).toBe("object_removal");
    expect(route.removalTerms).toEqual(terms);
  });

  it("keeps the other instructions of a removal prompt as follow-ups, and ignores remarks", () => {
    expect(routePrompt({ prompt: "remove the car and make it black and white" })).toEqual({
      workflow: "object_removal",
      removalTerms: ["car"],
      followUpInstructions: ["make it black-and-white"],
    });
    // A clause that is no remark is an instruction, even without a verb: never silently dropped.
    expect(routePrompt({ prompt: "remove the car, make it warmer, snowy vibes" }).followUpInstructions).toEqual([
      "make it warmer",
      "snowy vibes",
    ]);
    expect(routePrompt({ prompt: "remove the car. great shot btw, thanks!" })).toMatchObject({
      removalTerms: ["car"],
      followUpInstructions: [],
    });
    // A remark is neither an edit nor one more thing to remove.
    expect(routePrompt({ prompt: "remove the dog, thanks! nice photo" })).toMatchObject({
      removalTerms: ["dog"],
      followUpInstructions: [],
    });
    // Constraints are neither targets nor edits.
    expect(routePrompt({ prompt: "remove the person, keep the dog" })).toEqual({
      workflow: "object_removal",
      removalTerms: ["person"],
      followUpInstructions: [],
    });
    expect(routePrompt({ prompt: "erase the car but leave the bicycle" }).removalTerms).toEqual(["car"]);
  });

  it("with a mask, a prompt that names nothing is still a removal, with no vocabulary", () => {
    for (const prompt of [
      "remove this",
      "erase it",
      "remove the marked area",
      "inpaint",
      "fill in the masked area",
      "fix this",
    ]) {
      expect(routePrompt({ prompt, hasMask: true })).toMatchObject({ workflow: "object_removal", removalTerms: [] });
    }
    // Without a mask, "inpaint" names nothing to detect: it is not a removal.
    expect(routePrompt({ prompt: "inpaint" }).workflow).toBe("generative_edit");
  });
});

describe("routePrompt: generative editing", () => {
  it.each([
    "replace the person with a robot",
    "remove the person and replace them with a robot",
    "swap the car for a bus",
    "turn the dog into a cat",
    "make it black and white",
    "increase the brightness",
    "rotate 90 degrees",
    "blur the background",
    "put it on a white background",
    "replace the background with white",
    "remove the background and put it on a white one",
    "remove the background and make it light blue",
    "remove the colour",
    "remove the noise",
    "remove the white border",
    "make the person smile",
    "",
  ])("%j", (prompt) => {
    expect(routePrompt({ prompt })).toEqual({ workflow: "generative_edit", removalTerms: [], followUpInstructions: [] });
  });
});

describe("routePrompt: detect", () => {
  it("forces object removal and replaces the derived vocabulary", () => {
    expect(routePrompt({ prompt: "remove the person", detect: "car . dog" })).toMatchObject({
      workflow: "object_removal",
      removalTerms: ["car", "dog"],
    });
    expect(routePrompt({ prompt: "make it brighter", detect: "person" })).toEqual({
      workflow: "object_removal",
      removalTerms: ["person"],
      followUpInstructions: ["make it brighter"],
    });
    expect(routePrompt({ prompt: "remove the background", detect: "bottle" })).toMatchObject({
      workflow: "object_removal",
      removalTerms: ["bottle"],
    });
  });

  it("parses terms separated by a period with spaces around it", () => {
    expect(parseDetectQuery("person . red car . Dog")).toEqual(["person", "red car", "dog"]);
    expect(parseDetectQuery(" cat ")).toEqual(["cat"]);
    expect(parseDetectQuery("cat . ")).toEqual(["cat"]);
    expect(parseDetectQuery(" . ")).toEqual([]);
    expect(parseDetectQuery("person.dog")).toEqual(["person", "dog"]);
  });
});

describe("cleanRemovalTerm", () => {
  it.each([
    ["the red car on the left from the photo please", "red car on the left"],
    ["this", undefined],
    ["the marked area", undefined],
    ["all the people", "all the people"],
    ['"logo"', "logo"],
  ])("%j -> %j", (phrase, term) => expect(cleanRemovalTerm(phrase)).toBe(term));
});
