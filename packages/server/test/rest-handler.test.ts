import type { Services } from "@retouch/core";
import { afterEach, describe, expect, it } from "vitest";
import { createRestHandler } from "../src/http/rest.handler";

const environment = process.env;
afterEach(() => {
  process.env = environment;
});

describe("the REST handler", () => {
  it("is built without touching the process's environment (no NODE_ENV flip around the adapter)", () => {
    const writes: Array<string | symbol> = [];
    process.env = new Proxy(environment, {
      set: (target, name, value) => {
        writes.push(name);
        return Reflect.set(target, name, value);
      },
      deleteProperty: (target, name) => {
        writes.push(name);
        return Reflect.deleteProperty(target, name);
      },
    });
    // Building captures the services; nothing of them is used until a request comes.
    createRestHandler({} as Services);
    expect(writes).toEqual([]);
  });
});
