import { z } from "zod";

const HANDLE = /^opentinker:\/\/([a-z0-9][a-z0-9-]*)\/([A-Za-z0-9_-]+)\/sampler\/([1-9][0-9]*)$/;

/** `opentinker://<team>/<adapter>/sampler/<version>`: an immutable policy snapshot (C2). */
export const ZSamplerHandle = z
  .string()
  .regex(HANDLE, "expected opentinker://<team>/<adapter>/sampler/<version>");

export interface SamplerHandle {
  team: string;
  adapter: string;
  version: number;
}

export function formatSamplerHandle(h: SamplerHandle): string {
  return `opentinker://${h.team}/${h.adapter}/sampler/${h.version}`;
}

export function parseSamplerHandle(handle: string): SamplerHandle {
  const match = HANDLE.exec(handle);
  if (!match)
    throw new RangeError(
      `not a sampler handle: "${handle}" (expected opentinker://<team>/<adapter>/sampler/<version>)`,
    );
  return { team: match[1] as string, adapter: match[2] as string, version: Number(match[3]) };
}

/** What a sampling request names: a published snapshot, or the bare base model. Never weights. */
export const ZPolicyRef = z.union([
  z.object({ handle: ZSamplerHandle }),
  z.object({ baseModel: z.string().min(1) }),
]);
export type PolicyRef = z.infer<typeof ZPolicyRef>;
