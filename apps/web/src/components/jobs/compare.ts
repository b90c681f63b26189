// The pure side of the runs comparison (compare-page.tsx draws it): which jobs
// the page's URL names, each job's legend label and colour, the metrics to
// offer, and the rows that put one metric of every job on one step axis.
import { isListedMetric, type MetricRow, metricNames } from "./metric-table.ts";

/** As many runs as one chart keeps apart by colour. */
export const MAX_COMPARED = 8;

/** One colour per compared job, in the order they were picked (Tableau 10, told apart in print too). */
export const JOB_COLOURS = [
  "#4e79a7",
  "#f28e2b",
  "#59a14f",
  "#e15759",
  "#b07aa1",
  "#76b7b2",
  "#edc948",
  "#9c755f",
] as const;

export const jobColour = (index: number): string => JOB_COLOURS[index % JOB_COLOURS.length] as string;

/** The charts every comparison draws when any compared job recorded their metric, in this order. */
export const STANDARD_METRICS: readonly { metric: string; title: string }[] = [
  { metric: "reward/mean", title: "Reward (mean)" },
  { metric: "val/reward/mean", title: "Validation reward (mean)" },
  { metric: "loss/mean", title: "Loss (mean per token)" },
  { metric: "loss/sum", title: "Loss (sum over the step)" },
  { metric: "kl/mean", title: "KL to the reference" },
];

/** The job ids of `?ids=a,b,…`: trimmed, without repeats or blanks, at most MAX_COMPARED. */
export function parseJobIds(param: string | null): string[] {
  if (!param) return [];
  const ids = param
    .split(",")
    .map((id) => id.trim())
    .filter((id) => id.length > 0);
  return [...new Set(ids)].slice(0, MAX_COMPARED);
}

/** The ids with `id` added at the end, or taken out when already there; unchanged when full. */
export function toggleJob(ids: readonly string[], id: string): string[] {
  if (ids.includes(id)) return ids.filter((x) => x !== id);
  return ids.length >= MAX_COMPARED ? [...ids] : [...ids, id];
}

/** The page's URL for comparing these jobs. */
export const compareHref = (ids: readonly string[]): string =>
  ids.length === 0 ? "/jobs/compare" : `/jobs/compare?ids=${ids.map(encodeURIComponent).join(",")}`;

/** A cuid's last characters: its random part (the first ones are a timestamp that jobs made together share). */
export const shortId = (id: string): string => id.slice(-6);

/** A job as people read it: its name when it has one, else a short form of its id. */
export function jobLabel(job: { id: string; name?: string | null | undefined }): string {
  const name = job.name?.trim();
  return name ? name : `job …${shortId(job.id)}`;
}

/** Legend labels for the jobs, in their order; jobs that share a name are told apart by their short id. */
export function legendLabels(jobs: readonly { id: string; name?: string | null | undefined }[]): string[] {
  const labels = jobs.map(jobLabel);
  const count = new Map<string, number>();
  for (const label of labels) count.set(label, (count.get(label) ?? 0) + 1);
  return labels.map((label, i) =>
    (count.get(label) ?? 0) > 1 ? `${label} · ${shortId(jobs[i]?.id ?? "")}` : label,
  );
}

/** One run's rows, under the key its series is drawn by. */
export interface Run {
  key: string;
  rows: readonly MetricRow[];
}

/**
 * One row per step that any run recorded `metric` at, holding each run's value
 * under the run's key: the rows a chart with one series per run draws.
 */
export function overlay(runs: readonly Run[], metric: string): MetricRow[] {
  const byStep = new Map<number, Record<string, number>>();
  for (const run of runs)
    for (const row of run.rows) {
      const v = row.values[metric];
      if (v === undefined) continue;
      const values = byStep.get(row.step) ?? {};
      values[run.key] = v;
      byStep.set(row.step, values);
    }
  return [...byStep.entries()].sort(([a], [b]) => a - b).map(([step, values]) => ({ step, values }));
}

/** The metrics every run recorded (leaving out the step's own number), sorted; none without runs. */
export function sharedMetrics(runs: readonly Run[]): string[] {
  const [first, ...rest] = runs.map((run) => new Set(metricNames(run.rows)));
  if (!first) return [];
  return [...first].filter((name) => isListedMetric(name) && rest.every((names) => names.has(name))).sort();
}

/** The standard charts that at least one run has data for. */
export const standardCharts = (runs: readonly Run[]) =>
  STANDARD_METRICS.filter(({ metric }) =>
    runs.some((run) => run.rows.some((row) => row.values[metric] !== undefined)),
  );
