// Setup of the "strict-backend" test project (vitest.config.ts): the engine's
// sampler and trainer suites run again with every model on the strict backend,
// whose buffers refuse host access except through download, so any code above
// the seam that still reads device memory directly fails there.
import { StrictBackend } from "@opentinker/kernels/testing";
import { setDefaultBackend } from "../base-model.ts";

setDefaultBackend(new StrictBackend());
