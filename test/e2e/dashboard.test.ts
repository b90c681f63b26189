// The dashboard end to end, in Debian's chromium against `npm start`'s stack:
// a user trains an RL job from the browser and watches it live; another team's
// user sees none of it; forms refuse bad input next to the field.
import { addMember, createTeam, createUser, setUserPassword } from "@opentinker/db";
import { RL_PRESETS } from "@opentinker/protocol";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countingReset, type RemoteEnv, startRemoteEnv } from "../control-plane/remote-env-server.ts";
import { launchBrowser, openPage, type Stack, screenshot, signIn, startStack, until } from "./stack.ts";

/** The step from which the exploding environment's rewards blow up, and the episodes each step plays. */
const EXPLODES_AT = 2;
const GROUP = 4;

/**
 * A remote environment whose rewards are 0 or 1 by episode (every group has
 * signal), then from step EXPLODES_AT on 0 or 1e300: finite on the wire, but an
 * advantage past float32's range, so that step's loss is non-finite. (A
 * built-in's rewards are bounded by its settings' schema.)
 */
function explodingEnvironment(): Promise<RemoteEnv> {
  let answered = 0;
  return startRemoteEnv({
    reset: countingReset(),
    step: () => {
      const scale = answered >= EXPLODES_AT * GROUP ? 1e300 : 1;
      return { reward: (answered++ % 2) * scale, done: true };
    },
  });
}

let stack: Stack;
let browser: Browser;
let exploding: RemoteEnv;
let explodingUrl: string;
beforeAll(async () => {
  exploding = await explodingEnvironment();
  explodingUrl = exploding.url();
  stack = await startStack({ OPENTINKER_REMOTE_ENV_HOSTS: exploding.host });
  browser = await launchBrowser();
}, 360_000);
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
  exploding?.close();
});

const WAIT = { timeout: 60_000 };

/**
 * The job form's Kind field. A select's label text includes its options' texts, so
 * once an environment named "kind-…" exists the Environment field matches "Kind" too.
 */
const kindField = (page: Page) => page.getByRole("combobox", { name: /^Kind/ });

/** A call to the REST API with the demo team's key; anything but 200 fails the test, naming the route. */
async function post<T = { id: string }>(route: string, body: unknown): Promise<T> {
  const response = await fetch(`${stack.url}/api/v1${route}`, {
    method: "POST",
    headers: { authorization: `Bearer ${stack.demo.apiKey}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(response.status, `POST ${route}`).toBe(200);
  return (await response.json()) as T;
}

describe("dashboard", () => {
  it("trains an RL job from the browser and shows it live, down to the tokens", async () => {
    const { page, problems } = await openPage(browser);
    await signIn(page, stack.url, stack.demo.email, stack.demo.password);
    await screenshot(page, "overview");

    await page.getByRole("link", { name: "Adapters", exact: true }).click();
    await page.getByRole("heading", { name: "Adapters", exact: true }).waitFor();
    // The starter random model keeps the job quick; the built-in pretrained ones are listed too.
    await page.getByLabel("Base model").selectOption("tiny-random");
    await page.getByLabel("Name").fill("e2e-adapter");
    await page.getByLabel("Rank").fill("4");
    await page.getByRole("button", { name: "Create adapter" }).click();
    await page.getByRole("table").getByRole("link", { name: "e2e-adapter" }).waitFor(WAIT);
    await screenshot(page, "adapters");

    await page.getByRole("link", { name: "Environments", exact: true }).click();
    await page.getByRole("heading", { name: "Environments", exact: true }).waitFor();
    await page.getByLabel("Name").fill("arith");
    await page.getByRole("button", { name: "Create environment" }).click();
    await page.getByText("arith", { exact: true }).first().waitFor(WAIT);

    await page.goto(`${stack.url}/jobs/new`);
    await page.getByRole("heading", { name: "New job", exact: true }).waitFor();
    await kindField(page).selectOption("RL");
    await page.getByLabel("Adapter").selectOption({ label: "e2e-adapter (tiny-random)" });
    await page.getByLabel("Environment").selectOption({ label: "arith (arithmetic)" });
    await page.getByLabel("Steps").fill("5000");
    await page.getByLabel("Group size").fill("4");
    // The starter model is untrained: every group scores alike, so train on those too.
    await page.getByLabel("Drop constant groups").uncheck();
    await page.getByRole("button", { name: "Create job" }).click();
    await page.waitForURL(
      (url) => /\/jobs\/[^/]+$/.test(url.pathname) && !url.pathname.endsWith("/new"),
      WAIT,
    );
    const jobUrl = page.url();

    // Live: points arrive over Socket.IO without a reload, and the version rises.
    const points = page.getByTestId("reward-chart").locator(".recharts-dot, .recharts-line-dot");
    await expect.poll(() => points.count(), WAIT).toBeGreaterThanOrEqual(3);
    const version = page.getByTestId("policy-version");
    await expect.poll(async () => Number(await version.textContent()), WAIT).toBeGreaterThanOrEqual(3);
    await screenshot(page, "job-live");

    await page
      .getByRole("link", { name: /trajectories/i })
      .first()
      .click();
    await page.locator('[data-kind="action"]').first().waitFor(WAIT);
    expect(await page.locator('[data-kind="observation"]').count()).toBeGreaterThan(0);
    await screenshot(page, "trajectories");

    await page.goto(jobUrl);
    await page.getByRole("button", { name: "Cancel job" }).click();
    await page.getByRole("button", { name: "Cancel job" }).click(); // the confirmation
    await page.getByText("CANCELLED").first().waitFor(WAIT);
    expect(problems).toEqual([]);
  }, 240_000);

  it("shows another team's user none of the first team's objects, and answers not found to a direct URL", async () => {
    const db = stack.t.db;
    const team = await createTeam(db, { slug: "rivals", name: "Rivals" });
    const user = await createUser(db, { email: "rival@example.com", name: "Rival" });
    await setUserPassword(db, user.id, "rival-password-1");
    await addMember(db, team.id, user.id, "OWNER");
    // The demo team's objects, made through its API key.
    const api = async <T>(route: string, body: unknown): Promise<T> => {
      const response = await fetch(`${stack.url}/api/v1${route}`, {
        method: "POST",
        headers: { authorization: `Bearer ${stack.demo.apiKey}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      return (await response.json()) as T;
    };
    const theirs = await api<{ id: string }>("/adapters", {
      name: "demo-private",
      baseModel: "tiny-random",
      rank: 2,
    });
    const env = await api<{ id: string }>("/environments", {
      name: "demo-env",
      kind: "BUILTIN",
      builtin: "arithmetic",
    });
    const job = await api<{ id: string }>("/jobs", {
      kind: "RL",
      adapterId: theirs.id,
      environmentId: env.id,
      config: { steps: 2, groupsPerStep: 1, groupSize: 2 },
    });

    const { page } = await openPage(browser);
    await signIn(page, stack.url, "rival@example.com", "rival-password-1");
    await page.goto(`${stack.url}/adapters`);
    await page.getByRole("heading", { name: "Adapters", exact: true }).waitFor();
    await page
      .getByText(/no adapters/i)
      .first()
      .waitFor(WAIT);
    expect(await page.getByText("demo-private").count()).toBe(0);
    await page.goto(`${stack.url}/jobs`);
    await page
      .getByText(/no jobs/i)
      .first()
      .waitFor(WAIT);
    await page.goto(`${stack.url}/adapters/${theirs.id}`);
    await page
      .getByText(/not found/i)
      .first()
      .waitFor(WAIT);
    await page.goto(`${stack.url}/jobs/${job.id}`);
    await page
      .getByText(/not found/i)
      .first()
      .waitFor(WAIT);
    await screenshot(page, "not-found");
  }, 120_000);

  it("shows form errors next to the field and submits nothing", async () => {
    const { page } = await openPage(browser, { width: 390, height: 844 }); // a phone
    await signIn(page, stack.url, stack.demo.email, stack.demo.password);
    const before = await stack.t.db.adapter.count();
    await page.goto(`${stack.url}/adapters`);
    await page.getByLabel("Name").fill("bad-rank");
    for (const rank of ["0", "four"]) {
      await page.getByLabel("Rank").fill(rank);
      await page.getByRole("button", { name: "Create adapter" }).click();
      const error = page.locator("#rank-error");
      await error.waitFor(WAIT);
      expect(await error.textContent()).toMatch(/rank|integer|number|at least/i);
    }
    await screenshot(page, "form-errors-phone");
    expect(await stack.t.db.adapter.count()).toBe(before);
  }, 60_000);

  it("answers an unknown path with the dashboard's 404 and a way back, and cancels a job only when confirmed", async () => {
    const { page } = await openPage(browser);
    await signIn(page, stack.url, stack.demo.email, stack.demo.password);
    const missing = await page.goto(`${stack.url}/no-such-page`);
    expect(missing?.status()).toBe(404);
    await page.getByRole("heading", { name: "Page not found" }).waitFor(WAIT);
    const nav = page.getByRole("navigation", { name: "Main" });
    for (const section of ["Overview", "Adapters", "Environments", "Jobs", "Playground", "API keys"])
      expect(await nav.getByRole("link", { name: section, exact: true }).count()).toBe(1);
    await screenshot(page, "404");
    await page.getByRole("link", { name: "Back to the overview" }).click();
    await page.getByRole("heading", { name: "Overview" }).waitFor(WAIT);

    const adapter = await post("/adapters", { name: "e2e-cancel", baseModel: "tiny-random", rank: 2 });
    const env = await post("/environments", { name: "cancel-env", kind: "BUILTIN", builtin: "arithmetic" });
    const job = await post("/jobs", {
      kind: "RL",
      adapterId: adapter.id,
      environmentId: env.id,
      config: { steps: 5000, groupsPerStep: 1, groupSize: 2 },
    });
    await page.goto(`${stack.url}/jobs/${job.id}`);
    await page.getByRole("button", { name: "Cancel job" }).click();
    // One click only asks, and the safe answer has the focus.
    const keep = page.getByRole("button", { name: "Keep running" });
    await keep.waitFor(WAIT);
    expect(await page.locator(":focus").textContent()).toBe("Keep running");
    await screenshot(page, "cancel-confirmation");
    await keep.click();
    const row = () => stack.t.db.job.findUniqueOrThrow({ where: { id: job.id } });
    expect((await row()).cancelRequestedAt).toBeNull();

    await page.getByRole("button", { name: "Cancel job" }).click();
    await page.getByRole("button", { name: "Cancel job" }).click();
    await page.getByText("CANCELLED").first().waitFor(WAIT);
    expect((await row()).cancelRequestedAt).not.toBeNull();
    // Once the job has ended, the indicator no longer says live.
    await page.locator('[data-connection="ended"]').waitFor(WAIT);

    // A cancelled job goes on from its last checkpoint, again only when confirmed.
    await page.getByRole("button", { name: "Resume job" }).click();
    await page.getByRole("button", { name: "Resume job" }).click(); // the confirmation
    await page.getByRole("button", { name: "Cancel job" }).waitFor(WAIT);
    await expect.poll(async () => (await row()).status).not.toBe("CANCELLED");
    expect((await row()).cancelRequestedAt).toBeNull();
    await page.getByRole("button", { name: "Cancel job" }).click();
    await page.getByRole("button", { name: "Cancel job" }).click();
    await page.getByText("CANCELLED").first().waitFor(WAIT);
  }, 120_000);

  it("creates every built-in environment kind from the form, showing each field's default", async () => {
    const { page } = await openPage(browser);
    await signIn(page, stack.url, stack.demo.email, stack.demo.password);
    await page.goto(`${stack.url}/environments`);
    await page.getByRole("heading", { name: "Environments", exact: true }).waitFor(WAIT);
    const create = async (name: string, builtin: string, fill: () => Promise<void> = async () => {}) => {
      await page.getByLabel("Name").fill(name);
      await page.getByLabel("Environment").selectOption(builtin);
      await fill();
      await page.getByRole("button", { name: "Create environment" }).click();
      await page.getByText(`Created environment ${name}.`).waitFor(WAIT);
    };
    await create("kind-arithmetic", "arithmetic", async () => {
      await page.getByText("default: 12").waitFor(WAIT);
    });
    await create("kind-guess", "guess-number");
    await create("kind-nim", "nim", async () => {
      await page.getByText("default: -3)").waitFor(WAIT);
      expect(await page.getByLabel("Opponent").locator("option").first().textContent()).toBe(
        "Default (Self-play)",
      );
      await page.getByLabel("Opponent").selectOption("optimal");
      await page.getByLabel("Lenient moves").selectOption("true");
    });
    await create("kind-shapes", "shapes", async () => {
      await page.getByText(/vision-language base model/).waitFor(WAIT);
      await page.getByLabel("Max tokens").fill("4");
    });
    await create("kind-calculator", "calculator", async () => {
      // A tool call is longer than an answer: this environment's own default, not the others' 8.
      await page.getByText(/Tokens the model may write per turn \(1 to 4096; default: 16\)/).waitFor(WAIT);
      await page.getByText("default: 0.1)").waitFor(WAIT);
      await page.getByLabel("Call cost").fill("0.05");
    });
    await screenshot(page, "environments-every-kind");
    const rows = await stack.t.db.environment.findMany({
      where: { name: { startsWith: "kind-" } },
      select: { name: true, builtin: true, config: true },
      orderBy: { name: "asc" },
    });
    expect(rows).toEqual([
      { name: "kind-arithmetic", builtin: "arithmetic", config: {} },
      { name: "kind-calculator", builtin: "calculator", config: { callCost: 0.05 } },
      { name: "kind-guess", builtin: "guess-number", config: {} },
      { name: "kind-nim", builtin: "nim", config: { opponent: "optimal", lenient: true } },
      { name: "kind-shapes", builtin: "shapes", config: { maxTokens: 4 } },
    ]);
  }, 120_000);

  it("shows a tool-using job's calls and the tool's replies apart from other tokens", async () => {
    const env = await post("/environments", { name: "tool-env", kind: "BUILTIN", builtin: "calculator" });
    const adapter = await post("/adapters", {
      name: "tool-adapter",
      baseModel: "opentinker-tool-tiny",
      rank: 2,
    });
    // One group of 16 attempts: the pretrained model calls the tool in about a third of them.
    const job = await post("/jobs", {
      kind: "RL",
      name: "tool-job",
      adapterId: adapter.id,
      environmentId: env.id,
      config: { steps: 1, groupsPerStep: 1, groupSize: 16, dropConstantGroups: false, seed: 3 },
    });
    const status = () =>
      stack.t.db.job
        .findUniqueOrThrow({ where: { id: job.id }, select: { status: true } })
        .then((j) => j.status);
    await expect.poll(status, { timeout: 120_000 }).toBe("SUCCEEDED");

    const { page, problems } = await openPage(browser);
    await signIn(page, stack.url, stack.demo.email, stack.demo.password);
    await page.goto(`${stack.url}/jobs/${job.id}/trajectories?step=0`);
    await page.locator('[data-kind="tool-call"]').first().waitFor(WAIT);
    const legend = page.getByRole("list", { name: "Legend" });
    await legend.getByText(/Tool calls \(model action tokens/).waitFor(WAIT);
    await legend.getByText(/Tool output \(observation tokens/).waitFor(WAIT);
    const text = async (kind: string) =>
      (await page.locator(`[data-kind="${kind}"]`).allTextContents()).join("");
    // A call is the model's `calc …`; the reply is the environment's tool turn holding a number.
    expect(await text("tool-call")).toMatch(/calc/);
    expect(await text("tool-output")).toMatch(/tool↵\n-?\d+/);
    expect(await text("action")).toMatch(/\d/);
    await screenshot(page, "trajectories-tool-use");
    expect(problems).toEqual([]);
  }, 180_000);

  it("overlays two jobs' curves on the comparison page, and titles, smooths and zooms a job's charts", async () => {
    const env = await post("/environments", { name: "compare-env", kind: "BUILTIN", builtin: "arithmetic" });
    const names = ["compare-one", "compare-two"];
    const jobs: { id: string }[] = [];
    for (const name of names) {
      const adapter = await post("/adapters", { name: `${name}-adapter`, baseModel: "tiny-random", rank: 2 });
      jobs.push(
        await post("/jobs", {
          kind: "RL",
          name,
          adapterId: adapter.id,
          environmentId: env.id,
          config: { steps: 6, groupsPerStep: 1, groupSize: 2, dropConstantGroups: false },
        }),
      );
    }
    const status = (id: string) =>
      stack.t.db.job.findUniqueOrThrow({ where: { id }, select: { status: true } }).then((j) => j.status);
    for (const job of jobs) await expect.poll(() => status(job.id), { timeout: 120_000 }).toBe("SUCCEEDED");

    const { page, problems } = await openPage(browser);
    await signIn(page, stack.url, stack.demo.email, stack.demo.password);
    await page.goto(`${stack.url}/jobs`);
    await page.getByRole("link", { name: "Compare runs" }).click();
    await page.getByRole("heading", { name: "Compare runs" }).waitFor(WAIT);
    for (const name of names) await page.getByRole("checkbox", { name, exact: true }).check();
    await page.waitForURL((url) => url.searchParams.get("ids") === jobs.map((j) => j.id).join(","), WAIT);
    const reward = page.getByTestId("compare-chart-reward/mean");
    const legend = reward.locator(".recharts-legend-item-text");
    await expect.poll(() => legend.allTextContents(), WAIT).toEqual(names);
    expect(await reward.locator(".recharts-line").count()).toBe(2);
    // Axis titles name the step and the metric.
    expect(await reward.locator(".recharts-label").allTextContents()).toEqual(
      expect.arrayContaining(["step", "reward/mean"]),
    );
    // A drag across the plot zooms every chart into those steps, until reset.
    const plot = await reward.getByRole("application").boundingBox();
    if (!plot) throw new Error("the reward chart has no plot");
    await page.mouse.move(plot.x + plot.width * 0.2, plot.y + plot.height / 2);
    await page.mouse.down();
    await page.mouse.move(plot.x + plot.width * 0.5, plot.y + plot.height / 2, { steps: 5 });
    await page.mouse.move(plot.x + plot.width * 0.8, plot.y + plot.height / 2, { steps: 5 });
    await page.mouse.up();
    await page.getByTestId("zoomed-range").waitFor(WAIT);
    expect(await page.getByTestId("zoomed-range").textContent()).toMatch(/Steps \d+–\d+/);
    await page.mouse.move(0, 0);
    await screenshot(page, "compare");
    await page.getByRole("button", { name: "Reset zoom" }).click();
    await page.getByText("Drag across a chart to zoom").waitFor(WAIT);

    // The job page: axis titles, and the smoothing control draws the recorded line faint behind the smoothed one.
    await page.goto(`${stack.url}/jobs/${jobs[0]?.id}`);
    const jobReward = page.getByTestId("reward-chart");
    // Attached, not visible: an untrained model's flat reward is a line of zero height.
    await jobReward
      .locator(".recharts-line")
      .first()
      .waitFor({ ...WAIT, state: "attached" });
    expect(await jobReward.locator(".recharts-label").allTextContents()).toEqual(
      expect.arrayContaining(["step", "reward (mean)"]),
    );
    expect(await jobReward.locator(".recharts-legend-item-text").allTextContents()).toEqual(
      expect.arrayContaining(["± 1 std over the step's samples", "mean reward"]),
    );
    expect(await jobReward.locator(".recharts-line").count()).toBe(1);
    // Six steps: a marker on each (past a few dozen, lines only).
    expect(await jobReward.locator(".recharts-line-dot").count()).toBe(6);
    await page.getByLabel("Smoothing").fill("0.6");
    await expect.poll(() => jobReward.locator(".recharts-line").count(), WAIT).toBe(2);
    expect(await jobReward.locator(".recharts-legend-item-text").allTextContents()).toContain(
      "mean reward (smoothed)",
    );
    await screenshot(page, "job-page");
    // "Compare with…" opens the comparison with this job picked.
    await page.getByRole("link", { name: "Compare with…" }).click();
    await page.getByRole("checkbox", { name: names[0], exact: true }).waitFor(WAIT);
    expect(await page.getByRole("checkbox", { name: names[0], exact: true }).isChecked()).toBe(true);
    // An id the team has no job by is named as not found (another team's answers the same, from the same query).
    const { page: other } = await openPage(browser);
    await signIn(other, stack.url, stack.demo.email, stack.demo.password);
    await other.goto(`${stack.url}/jobs/compare?ids=no-such-job,${jobs[1]?.id}`);
    const missing = other.getByRole("alert").filter({ hasText: "no-such-job" });
    await missing.waitFor(WAIT);
    expect(await missing.textContent()).toMatch(/not found/i);
    await other.getByTestId("compare-chart-reward/mean").waitFor(WAIT);
    expect(problems).toEqual([]);
  }, 240_000);

  it("samples from the base model in the playground and shows each token with its logprob", async () => {
    const { page, problems } = await openPage(browser);
    await signIn(page, stack.url, stack.demo.email, stack.demo.password);
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Playground" }).click();
    await page.getByRole("heading", { name: "Playground", exact: true }).waitFor(WAIT);
    await page.getByLabel("Model").selectOption({ label: "tiny-random" });
    const requests = () => stack.t.db.request.count({ where: { kind: "SAMPLE" } });
    const prompt = page.getByRole("textbox", { name: /^Prompt\b/ });
    const before = await requests();

    // A bad setting is refused next to its field, and so is a prompt the model's context cannot hold
    // (the API's own message); neither leaves a request behind.
    await prompt.fill("hello ".repeat(2_000));
    await page.getByLabel("Top-p").fill("0");
    await page.getByRole("button", { name: "Sample", exact: true }).click();
    await page.locator("#topP-error").waitFor(WAIT);
    expect(await page.locator("#topP-error").textContent()).toBe("Must be more than 0");
    await page.getByLabel("Top-p").fill("1");
    await page.getByRole("button", { name: "Sample", exact: true }).click();
    await page.locator("#text-error").waitFor(WAIT);
    expect(await page.locator("#text-error").textContent()).toMatch(/has \d+ positions; at most \d+ fit/);
    expect(await requests()).toBe(before);
    // The browser logs the refused call's 400; nothing else may go wrong.
    expect(problems.filter((p) => !/status of 400/.test(p))).toEqual([]);
    problems.length = 0;

    await prompt.fill("Once upon a time");
    await page.getByLabel("Max tokens").fill("8");
    await page.getByLabel("Seed").fill("3");
    await page.getByRole("button", { name: "Sample", exact: true }).click();
    const tokens = page.getByTestId("sample").locator("[data-logprob]");
    await tokens.first().waitFor(WAIT);
    const logprobs: number[] = [];
    for (const token of await tokens.all()) logprobs.push(Number(await token.getAttribute("data-logprob")));
    expect(logprobs.length).toBeGreaterThan(0);
    expect(logprobs.length).toBeLessThanOrEqual(8);
    for (const logprob of logprobs) {
      expect(Number.isFinite(logprob)).toBe(true);
      expect(logprob).toBeLessThanOrEqual(0);
    }
    expect(await tokens.first().getAttribute("title")).toMatch(/^token \d+ · logprob -?[\d.e-]+ · p /);
    expect(await page.getByTestId("stop-reason").first().textContent()).toMatch(/^(stop|length)$/);
    expect(await requests()).toBe(before + 1);
    await screenshot(page, "playground");
    expect(problems).toEqual([]);
  }, 120_000);

  it("lists jobs by name, default or given, with environment, progress and duration, sorted by a click on a heading", async () => {
    const env = await post("/environments", { name: "list-env", kind: "BUILTIN", builtin: "arithmetic" });
    // Every version kept: each job publishes one per step, which the overview must fold into one row.
    const config = {
      steps: 3,
      groupsPerStep: 1,
      groupSize: 2,
      dropConstantGroups: false,
      retention: "keep-all",
    };
    const jobs: { id: string; name: string }[] = [];
    for (const [adapterName, name] of [
      ["list-named", "  e2e named run "],
      ["list-plain", undefined],
    ] as const) {
      const adapter = await post("/adapters", { name: adapterName, baseModel: "tiny-random", rank: 2 });
      jobs.push(
        await post("/jobs", { kind: "RL", name, adapterId: adapter.id, environmentId: env.id, config }),
      );
    }
    // Trimmed when given; named after the environment and the adapter when not.
    const names = ["e2e named run", "list-env · list-plain"];
    expect(jobs.map((j) => j.name)).toEqual(names);
    const status = (id: string) =>
      stack.t.db.job.findUniqueOrThrow({ where: { id }, select: { status: true } }).then((j) => j.status);
    for (const job of jobs) await expect.poll(() => status(job.id), { timeout: 120_000 }).toBe("SUCCEEDED");

    const { page, problems } = await openPage(browser);
    await signIn(page, stack.url, stack.demo.email, stack.demo.password);
    await page
      .getByRole("navigation", { name: "Main" })
      .getByRole("link", { name: "Jobs", exact: true })
      .click();
    await page.getByRole("heading", { name: "Jobs", exact: true }).waitFor(WAIT);
    const row = (name: string) =>
      page.getByRole("row").filter({ has: page.getByRole("link", { name, exact: true }) });
    for (const name of names) await row(name).waitFor(WAIT);
    const heads = (await page.getByRole("columnheader").allTextContents()).map((h) =>
      h.replace(/[▲▼]/g, "").trim(),
    );
    expect(heads).toEqual([
      "Name",
      "Kind",
      "Environment",
      "Adapter",
      "Status",
      "Progress",
      "Duration",
      "Metric",
      "Created",
    ]);
    const cells = Object.fromEntries(
      await Promise.all(
        names.map(async (name) => [name, await row(name).getByRole("cell").allTextContents()]),
      ),
    ) as Record<string, string[]>;
    const plain = cells[names[1] as string] ?? [];
    expect(plain.slice(0, 6)).toEqual([
      "list-env · list-plain",
      "RL",
      "list-env",
      "list-plain",
      "SUCCEEDED",
      "3 of 3 done",
    ]);
    expect(cells[names[0] as string]?.slice(2, 6)).toEqual([
      "list-env",
      "list-named",
      "SUCCEEDED",
      "3 of 3 done",
    ]);
    expect(plain[6]).toMatch(/^\d+ (s|min \d+ s)$/);
    expect(plain[7]).toMatch(/^reward -?[\d.e-]+$/);

    // A click on "Name" sorts A to Z, another Z to A; the order is in the URL.
    const order = async () =>
      (await page.locator("tbody tr td:first-child a").allTextContents()).filter((n) => names.includes(n));
    const nameHead = page.getByRole("columnheader").filter({ hasText: "Name" });
    await page.getByRole("button", { name: "Sort by name" }).click();
    await page.waitForURL(
      (url) => url.searchParams.get("sort") === "name" && url.searchParams.get("dir") === "asc",
      WAIT,
    );
    await expect.poll(order, WAIT).toEqual(names);
    expect(await nameHead.getAttribute("aria-sort")).toBe("ascending");
    await page.getByRole("button", { name: "Sort by name" }).click();
    await page.waitForURL((url) => url.searchParams.get("dir") === "desc", WAIT);
    await expect.poll(order, WAIT).toEqual([...names].reverse());
    expect(await nameHead.getAttribute("aria-sort")).toBe("descending");
    // The view survives a reload.
    await page.reload();
    await expect.poll(order, WAIT).toEqual([...names].reverse());
    await screenshot(page, "jobs-list");

    // The overview's snapshots: one row per adapter, with how many versions it has.
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Overview" }).click();
    const snapshots = page
      .locator("section")
      .filter({ has: page.getByRole("heading", { name: "Recent snapshots" }) });
    for (const adapter of ["list-named", "list-plain"]) {
      const rows = snapshots
        .getByRole("row")
        .filter({ has: page.getByRole("link", { name: adapter, exact: true }) });
      await rows.first().waitFor(WAIT);
      expect(await rows.count()).toBe(1);
      const versions = await stack.t.db.snapshot.count({ where: { adapter: { name: adapter } } });
      expect(versions).toBeGreaterThan(1);
      expect((await rows.getByRole("cell").allTextContents()).map((c) => c.trim())).toEqual(
        expect.arrayContaining([`v${versions}`, `${versions} versions`]),
      );
    }
    expect(problems).toEqual([]);
  }, 240_000);

  it("creates a job from an environment's preset in the form, and its validation starts at step 0 and rises", async () => {
    const { page, problems } = await openPage(browser);
    await signIn(page, stack.url, stack.demo.email, stack.demo.password);
    // shapes on the vision-language model learns fastest on these CPUs (docs/results.md).
    await page.goto(`${stack.url}/adapters`);
    await page.getByLabel("Base model").selectOption("opentinker-vl-tiny");
    await page.getByLabel("Name").fill("preset-shapes");
    await page.getByLabel("Rank").fill("16");
    await page.getByRole("button", { name: "Create adapter" }).click();
    await page.getByRole("table").getByRole("link", { name: "preset-shapes" }).waitFor(WAIT);
    await page.goto(`${stack.url}/environments`);
    await page.getByLabel("Name").fill("preset-shapes-env");
    await page.getByLabel("Environment").selectOption("shapes");
    await page.getByRole("button", { name: "Create environment" }).click();
    await page.getByText("Created environment preset-shapes-env.").waitFor(WAIT);

    await page.goto(`${stack.url}/jobs/new`);
    await kindField(page).selectOption("RL");
    await page.locator("#adapterId").selectOption({ label: "preset-shapes (opentinker-vl-tiny)" });
    await page.locator("#environmentId").selectOption({ label: "preset-shapes-env (shapes)" });
    // The form's defaults are now the shapes preset, shown and editable.
    await page.getByTestId("preset-note").waitFor(WAIT);
    const preset = RL_PRESETS.shapes.config;
    for (const [field, expected] of [
      ["steps", preset.steps],
      ["groupsPerStep", preset.groupsPerStep],
      ["groupSize", preset.groupSize],
      ["learningRate", preset.adam.learningRate],
      ["gradClipNorm", preset.adam.gradClipNorm],
      ["validationEvery", preset.validation.every],
      ["validationGroups", preset.validation.groups],
      ["validationGroupSize", preset.validation.groupSize],
    ] as const)
      expect(await page.locator(`#${field}`).inputValue(), field).toBe(String(expected));
    // Fewer steps keep the test short; every learning setting stays the preset's.
    const steps = 40;
    await page.locator("#steps").fill(String(steps));
    await screenshot(page, "job-form-preset");
    await page.getByRole("button", { name: "Create job" }).click();
    await page.waitForURL(
      (url) => /\/jobs\/[^/]+$/.test(url.pathname) && !url.pathname.endsWith("/new"),
      WAIT,
    );

    // The validation chart's summary names its newest point: first the step-0 baseline, then the last step's.
    const validation = page.locator("figure", { hasText: "Validation reward" }).locator("figcaption");
    const pointAt = async (step: number) => {
      const text = (await validation.textContent({ timeout: 1_000 }).catch(() => "")) ?? "";
      const match = new RegExp(`step ${step}: (-?[\\d.]+)`).exec(text);
      return match ? Number(match[1]) : undefined;
    };
    const first = await until(() => pointAt(0), "the step-0 validation", 180_000);
    const last = await until(() => pointAt(steps - 1), "the final validation", 300_000);
    expect(last).toBeGreaterThan(first);
    await page.getByText("SUCCEEDED").first().waitFor(WAIT);
    // The best validated version is named on the job page.
    await expect.poll(() => page.getByTestId("best-version").count(), WAIT).toBe(1);
    await screenshot(page, "job-preset-validation");
    expect(problems).toEqual([]);
  }, 600_000);

  it("shows a diverging job FAILED with the step it diverged at", async () => {
    // The largest alpha and learning rate the schemas allow, over an environment
    // whose rewards overflow float32 from step EXPLODES_AT on: that step's loss is
    // non-finite. (Alpha and learning rate alone do not diverge.)
    const adapter = await post("/adapters", {
      name: "e2e-diverging",
      baseModel: "opentinker-text-tiny",
      rank: 8,
      alpha: 1024,
    });
    const env = await post("/environments", { name: "diverging-env", kind: "REMOTE", url: explodingUrl });
    const job = await post("/jobs", {
      kind: "RL",
      adapterId: adapter.id,
      environmentId: env.id,
      config: { steps: 6, groupsPerStep: 1, groupSize: GROUP, seed: 3, adam: { learningRate: 1 } },
    });
    const { page, problems } = await openPage(browser);
    await signIn(page, stack.url, stack.demo.email, stack.demo.password);
    await page.goto(`${stack.url}/jobs/${job.id}`);
    await page.getByText("FAILED").first().waitFor({ timeout: 180_000 });
    const alert = page.getByRole("alert").filter({ hasText: "diverged" });
    await alert.waitFor(WAIT);
    expect(await alert.textContent()).toMatch(/^diverged at step \d+: .*non-finite/);
    // Its own settings made it diverge: the page says whose fault it was.
    await page.getByRole("heading", { name: "Error (user error: the job's config or data)" }).waitFor(WAIT);
    await screenshot(page, "job-diverged");
    expect(problems).toEqual([]);
  }, 240_000);
});
