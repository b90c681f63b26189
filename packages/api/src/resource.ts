// The list, get and delete procedures of a team-owned resource, served at
// <path> and <path>/{<idKey>}: each one call to packages/db with the caller's
// team, presented. Another team's id answers 404 exactly like a missing one.
import type { Db } from "@opentinker/db";
import { idRequest, ZDeleted, ZNoInput } from "@opentinker/protocol";
import { z } from "zod";
import { found, notFound, teamRoute } from "./trpc.ts";

// The schema built for a generic key has an output type TypeScript cannot see
// into here; each instance's is `{ [idKey]: string }`, as the client sees it.
const idOf = <K extends string>(input: unknown, key: K): string => (input as Record<K, string>)[key];

interface Resource<Row, Out, K extends string> {
  /** The OpenAPI tag. */
  tag: string;
  /** The collection, e.g. `/v1/jobs`. */
  path: `/${string}`;
  /** What a 404 calls one ("job"). */
  what: string;
  /** The path parameter that names one ("jobId"). */
  idKey: K;
  output: z.ZodType<Out>;
  list: (db: Db, teamId: string) => Promise<Row[]>;
  get: (db: Db, teamId: string, id: string) => Promise<Row | null>;
  present: (row: Row) => Out;
}

/** `list` (newest first, as packages/db orders them) and `get`. */
export function readProcedures<Row, Out, K extends string>(r: Resource<Row, Out, K>) {
  return {
    list: teamRoute("GET", r.path, r.tag)
      .input(ZNoInput)
      .output(z.array(r.output))
      .query(async ({ ctx }) => (await r.list(ctx.db, ctx.caller.teamId)).map(r.present)),

    get: teamRoute("GET", `${r.path}/{${r.idKey}}`, r.tag)
      .input(idRequest(r.idKey))
      .output(r.output)
      .query(async ({ ctx, input }) => {
        const id = idOf(input, r.idKey);
        return r.present(found(await r.get(ctx.db, ctx.caller.teamId, id), r.what, id));
      }),
  };
}

/** `delete`: the team's object with its history; false from packages/db is the 404. */
export function deleteProcedure<K extends string>(
  r: Pick<Resource<unknown, unknown, K>, "tag" | "path" | "what" | "idKey">,
  remove: (db: Db, teamId: string, id: string) => Promise<boolean>,
) {
  return teamRoute("DELETE", `${r.path}/{${r.idKey}}`, r.tag)
    .input(idRequest(r.idKey))
    .output(ZDeleted)
    .mutation(async ({ ctx, input }) => {
      const id = idOf(input, r.idKey);
      if (!(await remove(ctx.db, ctx.caller.teamId, id))) notFound(r.what, id);
      return { deleted: true as const };
    });
}
