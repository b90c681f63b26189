// The dashboard end to end, in Debian's chromium against `npm start`'s stack:
// a user trains an RL job from the browser and watches it live; another team's
// user sees none of it; forms refuse bad input next to the field.
import { addMember, createTeam, createUser, setUserPassword } from "@opentinker/db";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchBrowser, openPage, type Stack, screenshot, signIn, startStack } from "./stack.ts";

let stack: Stack;
let browser: Browser;
beforeAll(async () => {
  stack = await startStack();
  browser = await launchBrowser();
}, 360_000);
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

const WAIT = { timeout: 60_000 };

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
    await page.getByLabel("Kind").selectOption("RL");
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
    for (const section of ["Overview", "Adapters", "Environments", "Jobs", "API keys"])
      expect(await nav.getByRole("link", { name: section, exact: true }).count()).toBe(1);
    await screenshot(page, "404");
    await page.getByRole("link", { name: "Back to the overview" }).click();
    await page.getByRole("heading", { name: "Overview" }).waitFor(WAIT);

    const post = async (route: string, body: unknown) => {
      const response = await fetch(`${stack.url}/api/v1${route}`, {
        method: "POST",
        headers: { authorization: `Bearer ${stack.demo.apiKey}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      return (await response.json()) as { id: string };
    };
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
      await page.getByText("default: -1.5").waitFor(WAIT);
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
    await screenshot(page, "environments-every-kind");
    const rows = await stack.t.db.environment.findMany({
      where: { name: { startsWith: "kind-" } },
      select: { name: true, builtin: true, config: true },
      orderBy: { name: "asc" },
    });
    expect(rows).toEqual([
      { name: "kind-arithmetic", builtin: "arithmetic", config: {} },
      { name: "kind-guess", builtin: "guess-number", config: {} },
      { name: "kind-nim", builtin: "nim", config: { opponent: "optimal", lenient: true } },
      { name: "kind-shapes", builtin: "shapes", config: { maxTokens: 4 } },
    ]);
  }, 120_000);
});
