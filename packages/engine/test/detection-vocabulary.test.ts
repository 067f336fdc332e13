import { describe, expect, it } from "vitest";
import { readTerm, selectDetections, type TargetQuery } from "../src/detection-vocabulary";
import type { Detection } from "../src/engine.ports";

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

  it("reads quantity, position and colour", () => {
    expect(target("person")).toMatchObject({ all: false, position: undefined, colour: undefined });
    expect(target("all the people")).toMatchObject({ all: true });
    expect(target("cars")).toMatchObject({ all: true });
    expect(target("both dogs")).toMatchObject({ all: true });
    expect(target("car on the left")).toMatchObject({ all: false, position: "left" });
    expect(target("rightmost bottle")).toMatchObject({ position: "right" });
    expect(target("person in the background")).toMatchObject({ position: "smallest" });
    expect(target("biggest dog")).toMatchObject({ position: "largest" });
    expect(target("chair in the middle")).toMatchObject({ position: "center" });
    expect(target("red car")).toMatchObject({ colour: [220, 20, 20] });
    expect(target("orange car").colour).toEqual([255, 140, 0]);
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

  it("picks one object by position, size or confidence", () => {
    expect(selectDetections(target("car on the left"), detections, image)).toEqual([detections[0]]);
    expect(selectDetections(target("car on the right"), detections, image)).toEqual([detections[1]]);
    expect(selectDetections(target("car at the top"), detections, image)).toEqual([detections[2]]);
    expect(selectDetections(target("smallest car"), detections, image)).toEqual([detections[2]]);
    expect(selectDetections(target("car"), detections, image)).toEqual([detections[1]]);
    expect(selectDetections(target("man"), detections, image)).toEqual([detections[3]]);
  });

  it("takes all for plurals, kept to the named side", () => {
    expect(selectDetections(target("cars"), detections, image)).toHaveLength(3);
    expect(selectDetections(target("all cars on the left"), detections, image)).toEqual([detections[0], detections[2]]);
    expect(selectDetections(target("dogs"), detections, image)).toEqual([]);
  });

  it("picks by colour when asked for a red one", () => {
    const colours = new Map([
      [detections[0]?.box, [200, 30, 30] as const],
      [detections[1]?.box, [30, 30, 200] as const],
      [detections[2]?.box, [240, 240, 240] as const],
    ]);
    const meanColour = (box: Detection["box"]) => colours.get(box) ?? ([0, 0, 0] as const);
    expect(selectDetections(target("red car"), detections, { ...image, meanColour })).toEqual([detections[0]]);
    expect(selectDetections(target("white car"), detections, { ...image, meanColour })).toEqual([detections[2]]);
  });
});
