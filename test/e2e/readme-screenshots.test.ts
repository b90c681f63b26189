// The README's screenshots, from real runs (minutes of training, so only on request):
//   OPENTINKER_README_SCREENSHOTS=1 npx vitest run test/e2e/readme-screenshots.test.ts
// starts the service as the e2e tests do, trains two shapes jobs from the
// preset (two learning rates) on the vision-language model, and writes the job
// page and the comparison page of those two runs to docs/.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { RL_PRESETS } from "@opentinker/protocol";
import { expect, it } from "vitest";
import { launchBrowser, openPage, signIn, startStack, until } from "./stack.ts";

const DOCS = fileURLToPath(new URL("../../docs", import.meta.url));
const STEPS = 120;

it.skipIf(!process.env.OPENTINKER_README_SCREENSHOTS)(
  "writes the README's job and comparison screenshots",
  async () => {
    const stack = await startStack();
    const browser = await launchBrowser();
    try {
      const post = async (route: string, body: unknown): Promise<{ id: string }> => {
        const response = await fetch(`${stack.url}/api/v1${route}`, {
          method: "POST",
          headers: { authorization: `Bearer ${stack.demo.apiKey}`, "content-type": "application/json" },
          body: JSON.stringify(body),
        });
        if (!response.ok) throw new Error(`POST ${route}: ${response.status} ${await response.text()}`);
        return (await response.json()) as { id: string };
      };
      const env = await post("/environments", { name: "shapes", kind: "BUILTIN", builtin: "shapes" });
      const preset = RL_PRESETS.shapes.config;
      const jobs = [];
      for (const learningRate of [preset.adam.learningRate, preset.adam.learningRate / 4]) {
        const name = `shapes lr ${learningRate}`;
        const adapter = await post("/adapters", {
          name: `shapes-lr-${learningRate}`,
          baseModel: "opentinker-vl-tiny",
          rank: 16,
        });
        const validation = { ...preset.validation, every: STEPS / 4 };
        const config = { ...preset, steps: STEPS, adam: { learningRate }, validation };
        jobs.push(
          await post("/jobs", { kind: "RL", name, adapterId: adapter.id, environmentId: env.id, config }),
        );
      }
      const finished = async (id: string) => {
        const row = await stack.t.db.job.findUniqueOrThrow({ where: { id } });
        return row.finishedAt ? row.status : undefined;
      };
      for (const job of jobs)
        expect(await until(() => finished(job.id), `job ${job.id}`, 900_000)).toBe("SUCCEEDED");

      const { page } = await openPage(browser, { width: 1280, height: 900 });
      await signIn(page, stack.url, stack.demo.email, stack.demo.password);
      await page.goto(`${stack.url}/jobs/${jobs[0]?.id}`);
      await page.locator('[data-connection="ended"]').waitFor();
      await page.getByRole("slider").first().fill("0.6");
      await page.screenshot({ path: path.join(DOCS, "job-live.png"), fullPage: false });
      await page.goto(`${stack.url}/jobs/compare?ids=${jobs.map((j) => j.id).join(",")}`);
      await page.locator(".recharts-line").first().waitFor();
      await page.waitForTimeout(1_000);
      await page.screenshot({ path: path.join(DOCS, "compare.png"), fullPage: false });
    } finally {
      await browser.close();
      await stack.stop();
    }
  },
  1_200_000,
);
