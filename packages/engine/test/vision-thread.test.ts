import { afterEach, describe, expect, it, vi } from "vitest";
import { VisionThreadClient, VisionThreadHost } from "../src/vision/vision-thread";

/**
 * The pool's vision thread (a real one; `preparePose` loads MoveNet and answers nothing) kept or ended by what
 * the pool's edits need: VisionThreadHost's `track` and an edit's hold between its passes.
 */
const hosts: VisionThreadHost[] = [];
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((host) => host.close()));
});

function start(): { host: VisionThreadHost; client: () => VisionThreadClient } {
  const host = new VisionThreadHost(60_000);
  hosts.push(host);
  return {
    host,
    client: () => {
      const client = new VisionThreadClient();
      client.connect(host.connect());
      return client;
    },
  };
}

const pass = { preparePose: true } as const;
const options = { signal: undefined, what: "pose model" };

describe("VisionThreadHost", () => {
  it("keeps the idle thread for the next removal while only small pictures are edited", async () => {
    const { host, client } = start();
    const untrack = host.track(Promise.resolve(1_000_000));
    await client().ask(pass, options);
    untrack();
    expect(host.stats).toEqual({ starts: 1, running: true });
  }, 60_000);

  it("beside a picture over 4 MP, ends it as soon as it has answered, and does not load the pose model ahead", async () => {
    const { host, client } = start();
    await client().ask(pass, options);
    expect(host.stats).toEqual({ starts: 1, running: true });
    // A large edit comes: the idle thread goes at once.
    const untrack = host.track(Promise.resolve(12_000_000));
    await vi.waitFor(() => expect(host.stats.running).toBe(false), { timeout: 5_000, interval: 5 });
    // Asked to load the pose model ahead: answered without a thread.
    expect(await client().ask(pass, options)).toBeNull();
    expect(host.stats).toEqual({ starts: 1, running: false });
    // A pass (the keypoints, here of no crops) starts it, and it ends once answered.
    expect(await client().ask({ crops: [] }, options)).toEqual([]);
    await vi.waitFor(() => expect(host.stats).toEqual({ starts: 2, running: false }), { timeout: 5_000, interval: 5 });
    // The large edit over, the thread is kept again.
    untrack();
    await client().ask(pass, options);
    expect(host.stats).toEqual({ starts: 3, running: true });
  }, 60_000);
});
