import { describe, expect, it } from "vitest";
import type { Detection } from "../src/engine.ports";
import { readTerm, selectDetections, type TargetQuery } from "../src/prompts/detection-vocabulary";

function target(term: string): TargetQuery {
  const reading = readTerm(term);
  if (reading.kind !== "target") throw new Error(`${term} read as ${reading.kind}`);
  return reading.query;
}

describe("readTerm", () => {
  it.each([
    ["person", ["person"]],
    ["people", ["person"]],
    ["man", ["person"]],
    ["woman in red", ["person"]],
    ["guy", ["person"]],
    ["someone", ["person"]],
    ["tourists", ["person"]],
    ["car", ["car"]],
    ["auto", ["car"]],
    ["vehicle", ["car", "truck", "bus", "motorcycle"]],
    ["dog", ["dog"]],
    ["puppies", ["dog"]],
    ["kitten", ["cat"]],
    ["bike", ["bicycle", "motorcycle"]],
    ["stop signs", ["stop sign"]],
    ["teddy bear", ["teddy bear"]],
    ["coffee mug", ["cup"]],
    ["an orange", ["orange"]],
    ["orange car", ["car"]],
    ["buses", ["bus"]],
    ["knives", ["knife"]],
    ["the phone", ["cell phone"]],
  ])("%j -> %j", (term, labels) => expect(target(term).labels).toEqual(labels));

  it("reads quantity, place, size, distance, rank and colour", () => {
    expect(target("person")).toMatchObject({ all: false, count: undefined, sides: [], size: undefined, depth: undefined });
    expect(target("all the people")).toMatchObject({ all: true });
    expect(target("cars")).toMatchObject({ all: true });
    expect(target("one of the people")).toMatchObject({ all: false });
    expect(target("both dogs")).toMatchObject({ all: false, count: 2 });
    expect(target("the two people on the left")).toMatchObject({ count: 2, sides: ["left"] });
    expect(target("car on the left")).toMatchObject({ all: false, sides: ["left"] });
    expect(target("car on the far left")).toMatchObject({ sides: ["left"], depth: undefined });
    expect(target("rightmost bottle")).toMatchObject({ sides: ["right"] });
    expect(target("the dog on the left-hand side")).toMatchObject({ sides: ["left"] });
    expect(target("car in the top-left corner").sides.sort()).toEqual(["left", "top"]);
    expect(target("chair in the middle")).toMatchObject({ sides: ["center"] });
    expect(target("biggest dog")).toMatchObject({ size: "largest" });
    expect(target("the tall man")).toMatchObject({ size: "largest" });
    for (const term of [
      "person in the background",
      "background person",
      "person at the back",
      "the far boat",
      "boat in the distance",
    ]) {
      expect(target(term), term).toMatchObject({ depth: "background", size: undefined });
    }
    expect(target("person in front")).toMatchObject({ depth: "foreground" });
    expect(target("the nearest car")).toMatchObject({ depth: "foreground" });
    expect(target("second car from the left")).toMatchObject({ sides: ["left"], ordinal: 2 });
    expect(target("third largest car")).toMatchObject({ size: "largest", ordinal: 3 });
    expect(target("last car on the right")).toMatchObject({ sides: ["right"], ordinal: 1 });
    expect(target("red car")).toMatchObject({ colour: [220, 20, 20] });
    expect(target("woman wearing a red coat")).toMatchObject({ colour: [220, 20, 20], unread: [] });
    expect(target("orange car").colour).toEqual([255, 140, 0]);
  });

  it("keeps the words it cannot read, so that a choice never silently drops them", () => {
    expect(target("person with the hat").unread).toEqual(["with", "hat"]);
    expect(target("the other car").unread).toEqual(["other"]);
    expect(target("coffee mug").unread).toEqual(["coffee"]);
    expect(target("the unwanted tourist").unread).toEqual([]);
  });

  it.each([
    ["the second person", /needs a side or a size/],
    ["the last dog", /needs a side/],
    ["second cars from the left", /picks one/],
    ["the biggest dogs", /picks one, but the term asks for all/],
    ["car on the left and right", /contradict/],
    ["the big small dog", /contradict/],
    ["person in front of the car", /names two things \("person" and "car"\)/],
    ["man holding an umbrella", /names two things/],
    ["cup on the table", /names two things/],
    ["the lamp next to the sofa", /"lamp next to"\) is placed by the sofa/],
  ])("refuses %j: a wording no rule here can honour", (term, reason) => {
    const reading = readTerm(term);
    expect(reading.kind).toBe("unsupported");
    expect(reading.kind === "unsupported" && reading.reason).toMatch(reason);
  });

  it("says which targets need a mask and which are unknown", () => {
    for (const term of ["text", "the watermark", "scratches", "logo", "power lines", "shadow"]) {
      expect(readTerm(term).kind).toBe("needs_mask");
    }
    expect(readTerm("unicorn")).toEqual({ kind: "unknown", term: "unicorn" });
  });
});

describe("selectDetections", () => {
  const image = { width: 1000, height: 600 };
  const at = (label: string, x: number, y: number, size: number, score: number): Detection => ({
    label,
    score,
    box: { x, y, width: size, height: size },
  });
  const detections = [
    at("car", 50, 300, 100, 0.4),
    at("car", 800, 250, 150, 0.9),
    at("car", 450, 50, 60, 0.5),
    at("person", 400, 250, 200, 0.8),
  ];
  const select = (term: string, found = detections, frame: Parameters<typeof selectDetections>[2] = image) =>
    selectDetections(target(term), found, frame);
  const picks = (...chosen: (Detection | undefined)[]) => ({ kind: "found", detections: chosen });

  it("picks one object by place, size, rank or confidence", () => {
    expect(select("car on the left")).toEqual(picks(detections[0]));
    expect(select("car on the right")).toEqual(picks(detections[1]));
    expect(select("car at the top")).toEqual(picks(detections[2]));
    expect(select("top left car")).toEqual(picks(detections[2]));
    expect(select("smallest car")).toEqual(picks(detections[2]));
    expect(select("second car from the left")).toEqual(picks(detections[2]));
    expect(select("last car on the right")).toEqual(picks(detections[1]));
    expect(select("second largest car")).toEqual(picks(detections[0]));
    expect(select("car")).toEqual(picks(detections[1]));
    expect(select("man")).toEqual(picks(detections[3]));
  });

  it("takes all for plurals, kept to the named side, and exactly two for both", () => {
    expect(select("cars")).toMatchObject({ kind: "found", detections: { length: 3 } });
    expect(select("all cars on the left")).toEqual(picks(detections[0], detections[2]));
    expect(select("the two cars on the left")).toEqual(picks(detections[0], detections[2]));
    expect(select("both cars")).toMatchObject({ kind: "ambiguous", message: expect.stringContaining("say which 2") });
    expect(select("both cars", detections.slice(0, 2))).toEqual(picks(detections[0], detections[1]));
    expect(select("third car from the right", detections.slice(0, 2))).toMatchObject({ kind: "not_found" });
    expect(select("dogs")).toEqual({ kind: "not_found", message: "No dogs were found in the image." });
  });

  it("reads the background as the matches clearly smaller than the largest", () => {
    const people = [at("person", 100, 100, 300, 0.9), at("person", 600, 100, 120, 0.6), at("person", 800, 150, 100, 0.5)];
    expect(select("person in the foreground", people)).toEqual(picks(people[0]));
    expect(select("people in the background", people)).toEqual(picks(people[1], people[2]));
    // Two are farther back: which one is not said.
    expect(select("person in the background", people)).toMatchObject({ kind: "ambiguous" });
    expect(select("smallest person in the background", people)).toEqual(picks(people[2]));
    // Of two people the same size, neither is in the background.
    expect(select("person in the background", [people[1] as Detection, people[2] as Detection])).toMatchObject({
      kind: "not_found",
      message: expect.stringContaining("about the same size"),
    });
    // A lone person filling the frame is not "in the background"; a small one may be.
    expect(select("person in the background", [at("person", 100, 0, 500, 0.9)])).toMatchObject({ kind: "not_found" });
    expect(select("person in the background", [people[2] as Detection])).toEqual(picks(people[2]));
  });

  it("does not take the only match when it is not where the words put it", () => {
    const onTheRight = [at("car", 800, 250, 150, 0.9)];
    expect(select("car on the left", onTheRight)).toMatchObject({ kind: "not_found" });
    expect(select("car on the right", onTheRight)).toEqual(picks(onTheRight[0]));
  });

  it("refuses to guess with words it cannot read and several matches, and takes a lone match", () => {
    expect(select("person with the hat", [detections[3] as Detection])).toEqual(picks(detections[3]));
    expect(select("the other car")).toMatchObject({
      kind: "ambiguous",
      message: expect.stringContaining('"other" cannot tell them apart'),
    });
  });

  it("picks by colour when asked for a red one", () => {
    const colours = new Map([
      [detections[0]?.box, [200, 30, 30] as const],
      [detections[1]?.box, [30, 30, 200] as const],
      [detections[2]?.box, [240, 240, 240] as const],
    ]);
    const meanColour = (box: Detection["box"]) => colours.get(box) ?? ([0, 0, 0] as const);
    expect(select("red car", detections, { ...image, meanColour })).toEqual(picks(detections[0]));
    expect(select("white car", detections, { ...image, meanColour })).toEqual(picks(detections[2]));
    expect(select("red car on the right", detections, { ...image, meanColour })).toEqual(picks(detections[1]));
  });
});
