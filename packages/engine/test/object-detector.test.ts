import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { decodeImage } from "../src/pixels/image-codec";
import { HumanObjectDetector } from "../src/vision/object-detector.human";

/** The detector's thread of its own (one per detection): the answer comes back, and a cancelled edit does not wait for it. */
describe("HumanObjectDetector's thread", () => {
  const detector = new HumanObjectDetector();

  it("answers from a fresh thread each time, the same boxes each time", async () => {
    const image = await decodeImage(await readFile(new URL("./fixtures/astronaut.jpg", import.meta.url)));
    const [first, second] = [await detector.detect(image, {}), await detector.detect(image, {})];
    expect(first.map((detection) => detection.label)).toContain("person");
    expect(second).toEqual(first);
  });

  it("ends the detection when the edit is cancelled", async () => {
    const image = await decodeImage(await readFile(new URL("./fixtures/coffee.jpg", import.meta.url)));
    const controller = new AbortController();
    const detection = detector.detect(image, { signal: controller.signal });
    // The next turn of the event loop, not a timer: the thread is started and busy loading the model
    // then, however loaded the machine (a 50 ms timer fired only after the detection had finished).
    setImmediate(() => controller.abort());
    await expect(detection).rejects.toMatchObject({ reason: "cancelled" });
  });
});
