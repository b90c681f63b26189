import type { Db } from "./client.ts";
import { createTeam } from "./teams.ts";

let counter = 0;

/** A team with one base model and one LoRA adapter, for tests. */
export async function makeTeamWithAdapter(db: Db, label: string) {
  counter += 1;
  const team = await createTeam(db, { slug: `${label}-${counter}-${Date.now()}`, name: label });
  const baseModel = await db.baseModel.upsert({
    where: { name: "test/tiny" },
    create: {
      name: "test/tiny",
      path: "/models/tiny",
      architecture: "LlamaForCausalLM",
      vocabSize: 64,
      contextLength: 128,
    },
    update: {},
  });
  const adapter = await db.adapter.create({
    data: {
      teamId: team.id,
      baseModelId: baseModel.id,
      name: `${label}-adapter`,
      kind: "LORA",
      rank: 8,
      alpha: 16,
    },
  });
  return { team, baseModel, adapter };
}
