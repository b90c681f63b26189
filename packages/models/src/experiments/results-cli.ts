// npm run results -- <setting> [--seeds 1,2,3] [--steps N]
// Regenerates one setting's part of docs/results.md: runs each seed (the
// setting's own steps unless told), then writes docs/results/<setting>.md (the
// table, with the target checked per seed), <setting>.json (the summaries) and
// <setting>-seed<N>.svg (the plots), and puts the table between the setting's
// markers in docs/results.md.
import path from "node:path";
import { parseArgs } from "node:util";
import { regenerateResults } from "./results.ts";
import { settingNames } from "./run.ts";
import { PAIR_SETTINGS, SETTINGS } from "./settings.ts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { seeds: { type: "string", default: "1,2,3" }, steps: { type: "string" } },
});
const name = positionals[0];
const known = name ? (SETTINGS[name] ?? PAIR_SETTINGS[name]) : undefined;
if (!name || !known) {
  console.error(
    `usage: npm run results -- <setting> [--seeds 1,2,3] [--steps N]\nsettings: ${settingNames().join(", ")}`,
  );
  process.exit(2);
}
const seeds = values.seeds.split(",").map(Number);
const steps = values.steps === undefined ? known.steps : Number(values.steps);
if (seeds.some((s) => !Number.isInteger(s)) || !Number.isInteger(steps) || steps < 1) {
  console.error("--seeds must be integers separated by commas, --steps an integer ≥ 1");
  process.exit(2);
}
const flags = [
  values.seeds === "1,2,3" ? "" : ` --seeds ${values.seeds}`,
  values.steps ? ` --steps ${steps}` : "",
];
try {
  await regenerateResults({
    setting: name,
    seeds,
    steps,
    docsDir: path.resolve("docs", "results"),
    document: path.resolve("docs", "results.md"),
    outRoot: path.resolve("experiments", "out"),
    command: `npm run results -- ${name}${flags.join("")}`,
  });
} catch (error) {
  console.error(`results: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
