"use client";
// A job's charts, drawn from the live step table (lib/realtime.ts) through
// step-chart.tsx: each chart shows the steps that recorded one of its metrics,
// and all of them share one smoothing weight and one zoomed range of steps.
import { Empty } from "../ui.tsx";
import { formatNumber, listedMetrics, type MetricRow, metricNames } from "./metric-table.ts";
import { ChartControls, ChartFigure, type ChartView, StepChart, useChartView } from "./step-chart.tsx";

const BLUE = "#2563eb";
const COLOURS = [BLUE, "#ea580c", "#16a34a", "#9333ea"];

interface Series {
  key: string;
  label: string;
}

interface ChartSpec {
  title: string;
  note?: string;
  /** The y axis's title: what is counted, and in what. */
  yTitle: string;
  series: Series[];
  stepped?: boolean;
}

const value = (row: MetricRow, key: string) => row.values[key];

/** The charts after reward and loss, in the order they are drawn. */
const TRAINING_CHARTS: ChartSpec[] = [
  {
    title: "Importance ratio and clip fraction",
    yTitle: "ratio · fraction clipped",
    series: [
      { key: "ratio/mean", label: "ratio (mean)" },
      { key: "clipfrac/mean", label: "clip fraction" },
    ],
  },
  {
    title: "Staleness",
    note: "Policy versions the oldest sample lagged the trainer by, and samples dropped for it.",
    yTitle: "versions · trajectories",
    series: [
      { key: "staleness/max", label: "max staleness" },
      { key: "trajectories/dropped_stale", label: "dropped as stale" },
    ],
  },
  {
    title: "Tokens per step",
    note: "Tokens trained on in each step's update (tokens/sum), not a throughput.",
    yTitle: "tokens",
    series: [{ key: "tokens/sum", label: "tokens per step" }],
  },
  {
    title: "Policy version",
    note: "The sampler's weights version each step sampled with.",
    yTitle: "policy version",
    series: [{ key: "policy/version", label: "policy version" }],
    stepped: true,
  },
];

export function JobCharts({ rows }: { rows: readonly MetricRow[] }) {
  const { view, setSmoothing, reset } = useChartView();
  if (rows.length === 0) return <Empty>Waiting for the first step…</Empty>;
  const names = new Set(metricNames(rows));
  const loss: ChartSpec = names.has("loss/mean")
    ? {
        title: "Loss",
        yTitle: "loss (mean per token)",
        series: [
          { key: "loss/mean", label: "loss" },
          { key: "val/loss/mean", label: "validation loss" },
        ],
      }
    : { title: "Loss", yTitle: "loss (sum over the step)", series: [{ key: "loss/sum", label: "loss" }] };
  return (
    <div className="space-y-3">
      <ChartControls view={view} setSmoothing={setSmoothing} reset={reset} />
      <div className="grid gap-4 lg:grid-cols-2">
        <RewardChart rows={rows} view={view} prefix="" title="Reward" testId="reward-chart" />
        <RewardChart rows={rows} view={view} prefix="val/" title="Validation reward" />
        <MetricChart rows={rows} view={view} spec={loss} />
        {TRAINING_CHARTS.map((spec) => (
          <MetricChart key={spec.title} rows={rows} view={view} spec={spec} />
        ))}
      </div>
    </div>
  );
}

/** The newest step that recorded `key`, for a chart's summary line. */
function latestRow(rows: readonly MetricRow[], keys: readonly string[]): MetricRow | undefined {
  for (let i = rows.length - 1; i >= 0; i--) {
    const row = rows[i] as MetricRow;
    if (keys.some((k) => value(row, k) !== undefined)) return row;
  }
  return undefined;
}

/** Mean reward (a line) with the spread of the step's rewards (a shaded ± std band). */
function RewardChart({
  rows,
  view,
  prefix,
  title,
  testId,
}: {
  rows: readonly MetricRow[];
  view: ChartView;
  prefix: string;
  title: string;
  testId?: string;
}) {
  const mean = `${prefix}reward/mean`;
  const std = `${prefix}reward/std`;
  const last = latestRow(rows, [mean]);
  if (!last) return null;
  const lastStd = value(last, std);
  const summary = `step ${last.step}: ${formatNumber(value(last, mean) as number)}${lastStd === undefined ? "" : ` ± ${formatNumber(lastStd)}`}`;
  return (
    <ChartFigure title={title} summary={summary} testId={testId}>
      <StepChart
        rows={rows}
        view={view}
        yTitle={`${prefix ? "validation " : ""}reward (mean)`}
        series={[{ key: mean, label: "mean reward", colour: BLUE }]}
        band={{ mean, std, label: "± 1 std over the step's samples", colour: BLUE }}
      />
    </ChartFigure>
  );
}

/** Lines for a few related metrics; hidden when the job recorded none of them. */
function MetricChart({ rows, view, spec }: { rows: readonly MetricRow[]; view: ChartView; spec: ChartSpec }) {
  const series = spec.series.filter((s) => rows.some((row) => value(row, s.key) !== undefined));
  const last = latestRow(
    rows,
    series.map((s) => s.key),
  );
  if (!last) return null;
  const summary = `step ${last.step}: ${series
    .filter((s) => value(last, s.key) !== undefined)
    .map((s) => `${s.label} ${formatNumber(value(last, s.key) as number)}`)
    .join(", ")}`;
  return (
    <ChartFigure title={spec.title} summary={summary} note={spec.note}>
      <StepChart
        rows={rows}
        view={view}
        yTitle={spec.yTitle}
        series={series.map((s, i) => ({ ...s, colour: COLOURS[i % COLOURS.length] as string }))}
        stepped={spec.stepped}
        allowDecimals={!spec.stepped}
      />
    </ChartFigure>
  );
}

/** Every metric of the newest step, for kinds whose names the charts do not know. */
export function LatestMetrics({ rows }: { rows: readonly MetricRow[] }) {
  const last = rows.at(-1);
  if (!last) return null;
  return (
    <details className="rounded-lg border border-gray-200 bg-white p-3 text-sm shadow-sm">
      <summary className="cursor-pointer font-medium">All metrics at step {last.step}</summary>
      <dl className="mt-2 grid grid-cols-[auto_1fr] gap-x-4 gap-y-1 sm:grid-cols-[auto_1fr_auto_1fr]">
        {listedMetrics(last.values).map(([name, v]) => (
          <div key={name} className="contents">
            <dt className="font-mono text-xs text-gray-600">{name}</dt>
            <dd className="tabular-nums">{formatNumber(v)}</dd>
          </div>
        ))}
      </dl>
    </details>
  );
}
