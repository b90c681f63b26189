// Undo steps registered as resources come up, run last-first on success, on
// failure and on Ctrl-C, so a bench never leaves processes or databases behind.
import { progress } from "./stats.ts";

export class Teardown {
  private readonly steps: { name: string; run: () => Promise<unknown> }[] = [];
  private running: Promise<void> | null = null;

  defer(name: string, run: () => Promise<unknown>): void {
    this.steps.push({ name, run });
  }

  /** Runs every step once (later calls wait for the first); a failing step does not stop the rest. */
  run(): Promise<void> {
    this.running ??= (async () => {
      for (const step of this.steps.splice(0).reverse()) {
        try {
          await step.run();
        } catch (error) {
          progress(`cleanup: ${step.name} failed: ${error instanceof Error ? error.message : error}`);
        }
      }
    })();
    return this.running;
  }
}
