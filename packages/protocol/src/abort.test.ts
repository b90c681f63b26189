import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { whenAborted } from "./abort.ts";

let warnings: string[] = [];
const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
beforeEach(() => {
  warnings = [];
  process.on("warning", onWarning);
});
afterEach(() => {
  process.off("warning", onWarning);
});

/** Lets Node emit the warnings it queued (process warnings are emitted on the next tick). */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("waiting on one AbortSignal from many operations", () => {
  it("calls every operation still waiting when the signal aborts, and no released one", async () => {
    const controller = new AbortController();
    const called: number[] = [];
    const releases = Array.from({ length: 100 }, (_, i) =>
      whenAborted(controller.signal, () => called.push(i)),
    );
    for (const release of releases.filter((_, i) => i % 2 === 1)) release();
    controller.abort();
    expect(called).toEqual(Array.from({ length: 50 }, (_, i) => i * 2));
    // Once only: a second abort (or a late release) calls nothing more.
    controller.abort();
    releases[0]?.();
    expect(called).toHaveLength(50);
    await settle();
    expect(warnings).toEqual([]);
  });

  it("keeps one listener on the signal however many operations wait (no MaxListenersExceededWarning)", async () => {
    const controller = new AbortController();
    const signal = AbortSignal.any([controller.signal]);
    for (let round = 0; round < 3; round++) {
      const releases = Array.from({ length: 64 }, () => whenAborted(signal, () => {}));
      for (const release of releases) release();
    }
    const held = Array.from({ length: 64 }, () => whenAborted(signal, () => {}));
    await settle();
    expect(warnings).toEqual([]);
    for (const release of held) release();
  });

  it("calls nothing for a signal that had already aborted", () => {
    let called = false;
    whenAborted(AbortSignal.abort(), () => {
      called = true;
    });
    expect(called).toBe(false);
  });
});
