import { describe, expect, it } from "vitest";
import { CATALOG, type EditStep, parseInstructions } from "../src/prompts/generative-catalog";

describe("parseInstructions: one instruction", () => {
  it.each<[string, EditStep]>([
    ["make it black and white", { op: "greyscale" }],
    ["Black & White", { op: "greyscale" }],
    ["grayscale", { op: "greyscale" }],
    ["monochrome please", { op: "greyscale" }],
    ["remove the colour", { op: "greyscale" }],
    ["sepia", { op: "sepia", strength: 1 }],
    ["give it a vintage look", { op: "sepia", strength: 1 }],
    ["invert the colors", { op: "invert" }],
    ["make it brighter", { op: "brightness", factor: 1.2 }],
    ["a lot brighter", { op: "brightness", factor: 1.4 }],
    ["slightly brighter", { op: "brightness", factor: 1.1 }],
    ["increase the brightness by 30%", { op: "brightness", factor: 1.3 }],
    ["brightness -20%", { op: "brightness", factor: 0.8 }],
    ["lighten it", { op: "brightness", factor: 1.2 }],
    ["darker", { op: "brightness", factor: 0.8 }],
    ["less bright", { op: "brightness", factor: 0.8 }],
    ["darken it a little", { op: "brightness", factor: 0.9 }],
    ["more contrast", { op: "contrast", factor: 1.25 }],
    ["reduce the contrast by 20%", { op: "contrast", factor: 0.8 }],
    ["more vivid", { op: "saturation", factor: 1.3 }],
    ["make the colours pop", { op: "saturation", factor: 1.3 }],
    ["less saturated", { op: "saturation", factor: 0.7 }],
    ["desaturate it a bit", { op: "saturation", factor: 0.85 }],
    ["make it warmer", { op: "temperature", amount: 0.1 }],
    ["much cooler", { op: "temperature", amount: -0.2 }],
    ["less warm", { op: "temperature", amount: -0.1 }],
    ["shift the hue by 90 degrees", { op: "hue", degrees: 90 }],
    ["rotate the hue 30°", { op: "hue", degrees: 30 }],
    ["blur it", { op: "blur", sigma: 3 }],
    ["a slight blur", { op: "blur", sigma: 1.5 }],
    ["blur by 5px", { op: "blur", sigma: 5 }],
    ["sharpen", { op: "sharpen", sigma: 1.5 }],
    ["sharpen slightly", { op: "sharpen", sigma: 1 }],
    ["remove the blur", { op: "sharpen", sigma: 1.5 }],
    ["rotate 90 degrees", { op: "rotate", degrees: 90 }],
    ["rotate 45 degrees", { op: "rotate", degrees: 45 }],
    ["rotate it 45° counterclockwise", { op: "rotate", degrees: -45 }],
    ["rotate left", { op: "rotate", degrees: -90 }],
    ["rotate right", { op: "rotate", degrees: 90 }],
    ["turn it upside down", { op: "rotate", degrees: 180 }],
    ["flip horizontally", { op: "flip", axis: "horizontal" }],
    ["mirror it", { op: "flip", axis: "horizontal" }],
    ["flip vertically", { op: "flip", axis: "vertical" }],
    ["flip it upside down", { op: "flip", axis: "vertical" }],
    ["crop to a square", { op: "crop_aspect", ratio: 1 }],
    ["make it square", { op: "crop_aspect", ratio: 1 }],
    ["crop to 16:9", { op: "crop_aspect", ratio: 16 / 9 }],
    ["crop it to a 4 by 3 aspect ratio", { op: "crop_aspect", ratio: 4 / 3 }],
    ["crop to 800x600 pixels", { op: "crop_pixels", width: 800, height: 600 }],
    ["crop 10% off each side", { op: "crop_inset", fraction: 0.1 }],
    ["resize to 800 wide", { op: "resize", width: 800 }],
    ["resize it to 1200 pixels tall", { op: "resize", height: 1200 }],
    ["resize to 1024x768", { op: "resize", width: 1024, height: 768 }],
    ["resize to 800", { op: "resize", longSide: 800 }],
    ["make it half the size", { op: "resize", scale: 0.5 }],
    ["scale to 50%", { op: "resize", scale: 0.5 }],
    ["upscale 2x", { op: "resize", scale: 2 }],
    ["downscale by 4x", { op: "resize", scale: 0.25 }],
    ["make a thumbnail", { op: "resize", longSide: 256 }],
    ["add a white border", { op: "border", size: 0.03, unit: "fraction", colour: [255, 255, 255] }],
    ["add a 20px black frame", { op: "border", size: 20, unit: "px", colour: [0, 0, 0] }],
    ["add a thick red border", { op: "border", size: 0.06, unit: "fraction", colour: [220, 20, 20] }],
    ["put it on a white background", { op: "flatten", colour: [255, 255, 255] }],
    ["change the background to light blue", { op: "flatten", colour: [173, 216, 230] }],
    ["replace the background with #ffcc00", { op: "flatten", colour: [255, 204, 0] }],
    ["black background", { op: "flatten", colour: [0, 0, 0] }],
    ["remove the background", { op: "cutout" }],
    ["blur the background", { op: "blur_background", strength: 1 }],
    ["auto enhance", { op: "normalize" }],
    ["remove the noise", { op: "denoise" }],
    ["trim the white space", { op: "trim" }],
    ["remove the white border", { op: "trim" }],
    ["pixelate it", { op: "pixelate", blocks: 64 }],
    ["add a vignette", { op: "vignette", strength: 0.4 }],
    ["darken the corners", { op: "vignette", strength: 0.4 }],
  ])("%j", (prompt, step) => expect(parseInstructions(prompt)).toEqual([step]));
});

describe("parseInstructions: several instructions compose in order", () => {
  it("keeps the order of the prompt", () => {
    expect(parseInstructions("Make it brighter, add more contrast and then rotate 90 degrees").map((step) => step.op)).toEqual([
      "brightness",
      "contrast",
      "rotate",
    ]);
    expect(parseInstructions("make it black and white and add a thin black border")).toEqual([
      { op: "greyscale" },
      { op: "border", size: 0.015, unit: "fraction", colour: [0, 0, 0] },
    ]);
    expect(parseInstructions("crop to a square. Then resize to 512 wide; sharpen slightly").map((step) => step.op)).toEqual([
      "crop_aspect",
      "resize",
      "sharpen",
    ]);
    expect(parseInstructions("remove the background and put it on a white background").map((step) => step.op)).toEqual([
      "cutout",
      "flatten",
    ]);
  });

  it("ignores politeness around instructions", () => {
    expect(parseInstructions("Please, make it sepia. Thanks!")).toEqual([{ op: "sepia", strength: 1 }]);
  });
});

describe("parseInstructions: what it cannot do", () => {
  it.each([
    "make the person smile",
    "add a unicorn",
    "make it brighter and add a dragon",
    "replace the person with a robot",
    "make it look like a Van Gogh painting",
  ])("refuses %j with a clear reason", (prompt) => {
    expect(() => parseInstructions(prompt)).toThrow(expect.objectContaining({ reason: "unsupported_instruction" }));
  });

  it("names the clause it could not do", () => {
    expect(() => parseInstructions("make it brighter and add a dragon")).toThrow(/cannot carry out "add a dragon"/);
    expect(() => parseInstructions("crop it")).toThrow(/say how to crop/);
    expect(() => parseInstructions("please")).toThrow(/names no edit/);
    expect(() => parseInstructions("")).toThrow(/names no edit/);
  });

  it("says once, after the clause it could not do, what it can", () => {
    const list = CATALOG.map((entry) => entry.name).join(", ");
    const error = (() => {
      try {
        parseInstructions("add a dragon");
      } catch (caught) {
        return caught as Error;
      }
      throw new Error("parseInstructions accepted a dragon");
    })();
    expect(error.message.split(list).length - 1, error.message).toBe(1);
  });
});
