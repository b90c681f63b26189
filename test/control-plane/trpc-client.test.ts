// The SDK's typed tRPC client against a real server: API-key auth, calls
// batched into one HTTP request, the server's errors as typed client errors.
import { createOpenTinkerClient } from "@opentinker/sdk";
import { TRPCClientError } from "@trpc/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE, ControlPlane, type Team } from "./harness.ts";

let cp: ControlPlane;
let team: Team;
let other: Team;
beforeAll(async () => {
  cp = await ControlPlane.start();
  team = await cp.team("typed");
  other = await cp.team("typed-other");
}, 60_000);
afterAll(() => cp?.stop());

/** A fetch that counts the HTTP requests the client makes. */
function countingFetch() {
  const counter = {
    requests: 0,
    fetch: ((input, init) => {
      counter.requests++;
      return fetch(input, init);
    }) as typeof fetch,
  };
  return counter;
}

describe("createOpenTinkerClient", () => {
  it("calls procedures with the API key, batching concurrent calls into one request", async () => {
    const counter = countingFetch();
    const client = createOpenTinkerClient({ url: cp.url, apiKey: team.key, fetch: counter.fetch });
    const created = await client.adapters.create.mutate({ name: "typed", baseModel: BASE });
    expect(created).toMatchObject({ name: "typed", baseModel: BASE, kind: "LORA" });
    counter.requests = 0;
    const [models, adapters, one] = await Promise.all([
      client.models.list.query({}),
      client.adapters.list.query({}),
      client.adapters.get.query({ adapterId: created.id }),
    ]);
    expect(counter.requests).toBe(1);
    expect(models.map((m) => m.name)).toContain(BASE);
    expect(adapters.map((a) => a.id)).toEqual([created.id]);
    expect(one).toEqual(created);
  });

  it("answers another team's id like a missing one, and a bad key with 401", async () => {
    const theirs = await createOpenTinkerClient({ url: cp.url, apiKey: other.key }).adapters.create.mutate({
      name: "theirs",
      baseModel: BASE,
    });
    const client = createOpenTinkerClient({ url: `${cp.url}/`, apiKey: team.key });
    const error = await client.adapters.get.query({ adapterId: theirs.id }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TRPCClientError);
    expect(error).toMatchObject({ message: `adapter ${theirs.id} not found`, data: { code: "NOT_FOUND" } });
    const stranger = createOpenTinkerClient({ url: cp.url, apiKey: "ot_not-a-key" });
    await expect(stranger.adapters.list.query({})).rejects.toMatchObject({
      data: { code: "UNAUTHORIZED", httpStatus: 401 },
    });
  });
});
