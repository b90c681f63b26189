// What the procedures of every team-owned resource share: the request that
// names one by id, the answer of a delete, the input of a procedure that takes none.
import { z } from "zod";

/** `{ <key>: id }`: how a path names one object (checked against the team by the service). */
export function idRequest<K extends string>(key: K) {
  return z.object({ [key]: z.string().min(1) } as { [k in K]: z.ZodString });
}

/** What a delete answers. */
export const ZDeleted = z.object({ deleted: z.literal(true) });

/** The input of a procedure that takes none. */
export const ZNoInput = z.object({});
