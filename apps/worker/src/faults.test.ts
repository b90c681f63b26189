// The worker's fault classes and retries (issue 44): a failed connection is
// transient and retried; a job's own bad config or diverged update is the
// user's; anything else is ours; only transient faults are tried again.
import { createServer } from "node:net";
import { DivergedError } from "@opentinker/protocol";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { classifyFault, type RetryPlan, retryTransient } from "./faults.ts";

/** A real refused connection: fetch to a port nobody listens on. */
async function refusedFetch(): Promise<unknown> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return fetch(`http://127.0.0.1:${port}/`).then(
    () => expect.unreachable("nobody listens there"),
    (error: unknown) => error,
  );
}

const quick: RetryPlan = { attempts: 3, firstDelayMs: 1, maxDelayMs: 2 };

describe("classifyFault", () => {
  it("calls a refused connection transient", async () => {
    expect(classifyFault(await refusedFetch())).toBe("TRANSIENT");
  });

  it("calls the job's own bad values and a diverged update the user's", () => {
    expect(classifyFault(new RangeError("config.steps: too many"))).toBe("USER");
    expect(classifyFault(new DivergedError(3, new Error("non-finite loss")))).toBe("USER");
    expect(classifyFault(z.object({ steps: z.number() }).safeParse({}).error)).toBe("USER");
  });

  it("calls anything else internal", () => {
    expect(classifyFault(new TypeError("cannot read properties of undefined"))).toBe("INTERNAL");
    expect(classifyFault(new Error("something else"))).toBe("INTERNAL");
  });
});

describe("retryTransient", () => {
  it("tries a transient fault again, telling the work its attempt", async () => {
    const fault = await refusedFetch();
    const attempts: number[] = [];
    const result = await retryTransient(
      "test",
      async (attempt) => {
        attempts.push(attempt);
        if (attempt < 3) throw fault;
        return "done";
      },
      quick,
    );
    expect(result).toBe("done");
    expect(attempts).toEqual([1, 2, 3]);
  });

  it("gives up on a transient fault after its attempts, and at once on any other", async () => {
    const fault = await refusedFetch();
    let tries = 0;
    await expect(
      retryTransient(
        "test",
        async () => {
          tries++;
          throw fault;
        },
        quick,
      ),
    ).rejects.toBe(fault);
    expect(tries).toBe(3);
    tries = 0;
    const bad = new RangeError("bad value");
    await expect(
      retryTransient(
        "test",
        async () => {
          tries++;
          throw bad;
        },
        quick,
      ),
    ).rejects.toBe(bad);
    expect(tries).toBe(1);
  });
});
