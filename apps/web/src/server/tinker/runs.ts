// Training runs (our adapters) as the Tinker REST client lists them.
import { getTrainingRun, listTrainingRuns, type TrainingRunRow } from "@opentinker/db";
import { stringMetadata, TinkerError } from "./convert.ts";
import { pageQuery, ZAccessQuery } from "./rest-schemas.ts";
import { parseBody, type Scope } from "./scope.ts";
import { presentCheckpoint } from "./weights.ts";

export function presentRun(run: TrainingRunRow) {
  const lora = run.kind === "LORA";
  return {
    training_run_id: run.id,
    base_model: run.baseModel,
    model_owner: run.owner,
    is_lora: lora,
    corrupted: false,
    lora_rank: lora ? run.rank : null,
    last_request_time: run.lastRequestAt.toISOString(),
    last_checkpoint: run.lastCheckpoint ? presentCheckpoint(run.lastCheckpoint) : null,
    last_sampler_checkpoint: run.lastSamplerCheckpoint ? presentCheckpoint(run.lastSamplerCheckpoint) : null,
    user_metadata: stringMetadata(run.userMetadata),
  };
}

export async function listRuns(scope: Scope, query: unknown) {
  const { limit, offset } = parseBody(pageQuery(20), query);
  const { runs, total } = await listTrainingRuns(scope.ctx.db, scope.ctx.caller.teamId, { limit, offset });
  return { training_runs: runs.map(presentRun), cursor: { offset, limit, total_count: total } };
}

export async function getRun(scope: Scope, id: string, query: unknown) {
  parseBody(ZAccessQuery, query);
  const run = await getTrainingRun(scope.ctx.db, scope.ctx.caller.teamId, id);
  if (!run) throw new TinkerError(404, `training run ${id} not found`);
  return presentRun(run);
}
