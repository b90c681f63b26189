// Writes the starter model under OPENTINKER_DATA_DIR (default .data). The
// container images run it at build time, so every web and worker pod holds
// the same files at the same path as the row `npm run setup` registers.
import { ensureStarterModel } from "./base-models.ts";
import { readDataDir } from "./env.ts";

console.log(`starter model: ${await ensureStarterModel(readDataDir())}`);
