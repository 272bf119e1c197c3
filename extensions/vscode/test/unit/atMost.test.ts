import { afterEach, describe, expect, test, vi } from "vitest";
import { atMost } from "../../src/protocol/atMost";

afterEach(() => {
  vi.useRealTimers();
});

describe("atMost", () => {
  test("a promise that settles in time gives its value; one that does not gives undefined", async () => {
    expect(await atMost(Promise.resolve(7), 60000)).toBe(7);
    expect(await atMost(new Promise<number>(() => {}), 10)).toBeUndefined();
    await expect(atMost(Promise.reject(new Error("gone")), 60000)).rejects.toThrow("gone");
  });

  test("once the promise settles no timer is left pending (it kept a Node process alive)", async () => {
    vi.useFakeTimers();
    let settle: (v: string) => void = () => {};
    const waiting = atMost(new Promise<string>((r) => (settle = r)), 15000);
    expect(vi.getTimerCount()).toBe(1);
    settle("stopped");
    expect(await waiting).toBe("stopped");
    expect(vi.getTimerCount()).toBe(0);
    await expect(atMost(Promise.reject(new Error("gone")), 15000)).rejects.toThrow("gone");
    expect(vi.getTimerCount()).toBe(0);
  });
});
