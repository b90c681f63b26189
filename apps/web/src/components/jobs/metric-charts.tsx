"use client";
// A job's charts, drawn from the live step table (lib/realtime.ts). Each chart
// shows the steps that recorded one of its metrics, one dot per step, without
// animation (points arrive one at a time).
import { useId } from "react";
import { Area, CartesianGrid, ComposedChart, Legend, Line, LineChart, Tooltip, XAxis, YAxis } from "recharts";
import { Empty } from "../ui.tsx";
import { formatNumber, listedMetrics, type MetricRow, metricNames } from "./metric-table.ts";

const BLUE = "#2563eb";
const COLORS = [BLUE, "#ea580c", "#16a34a", "#9333ea"];
const CHART_STYLE = { width: "100%", height: 220 } as const;
/** Beyond this many steps the secondary charts draw lines only (dots would hide them, and cost). */
const MAX_DOTS = 300;

interface Series {
  key: string;
  label: string;
}

const value = (row: MetricRow, key: string) => row.values[key];
const hasAny = (row: MetricRow, keys: readonly string[]) => keys.some((k) => value(row, k) !== undefined);

/**
 * The y range: recharts' own ("auto", rounded to nice ticks) unless the values
 * are all equal (a reward stuck at -0.1, a zero loss), which gets a band of
 * one order of magnitude around them instead of a zero-height axis.
 */
function yDomain(values: readonly number[]): [number, number] | ["auto", "auto"] {
  if (values.length === 0) return ["auto", "auto"];
  // A loop rather than Math.min(...values): a long job has more values than a call takes arguments.
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const v of values) {
    if (v < min) min = v;
    if (v > max) max = v;
  }
  if (max - min > 1e-9 * Math.max(1, Math.abs(max))) return ["auto", "auto"];
  const pad = max === 0 ? 1 : 10 ** Math.floor(Math.log10(Math.abs(max)));
  // Counts and rates that cannot go negative keep their axis at or above zero.
  return [min >= 0 ? Math.max(0, min - pad) : min - pad, max + pad];
}

const seriesValues = (rows: readonly MetricRow[], keys: readonly string[]) =>
  rows.flatMap((row) => keys.map((k) => value(row, k)).filter((v) => v !== undefined));

const formatValue = (v: unknown): string =>
  Array.isArray(v) ? v.map(formatValue).join(" – ") : typeof v === "number" ? formatNumber(v) : String(v);

/** The charts after reward and loss, in the order they are drawn. */
const TRAINING_CHARTS: { title: string; note?: string; series: Series[]; stepped?: boolean }[] = [
  {
    title: "Importance ratio and clip fraction",
    series: [
      { key: "ratio/mean", label: "ratio (mean)" },
      { key: "clipfrac/mean", label: "clip fraction" },
    ],
  },
  {
    title: "Staleness",
    note: "Policy versions the oldest sample lagged the trainer by, and samples dropped for it.",
    series: [
      { key: "staleness/max", label: "max staleness" },
      { key: "trajectories/dropped_stale", label: "dropped as stale" },
    ],
  },
  {
    title: "Tokens per step",
    note: "Tokens trained on in each step's update (tokens/sum), not a throughput.",
    series: [{ key: "tokens/sum", label: "tokens per step" }],
  },
  {
    title: "Policy version",
    note: "The sampler's weights version each step sampled with.",
    series: [{ key: "policy/version", label: "policy version" }],
    stepped: true,
  },
];

export function JobCharts({ rows }: { rows: readonly MetricRow[] }) {
  if (rows.length === 0) return <Empty>Waiting for the first step…</Empty>;
  const names = new Set(metricNames(rows));
  const lossSeries: Series[] = names.has("loss/mean")
    ? [
        { key: "loss/mean", label: "loss (mean per token)" },
        { key: "val/loss/mean", label: "validation loss (mean)" },
      ]
    : [{ key: "loss/sum", label: "loss (sum over the step)" }];
  return (
    <div className="grid gap-4 lg:grid-cols-2">
      <RewardChart rows={rows} prefix="" title="Reward" testId="reward-chart" />
      <RewardChart rows={rows} prefix="val/" title="Validation reward" />
      <MetricChart rows={rows} title="Loss" series={lossSeries} />
      {TRAINING_CHARTS.map((chart) => (
        <MetricChart key={chart.title} rows={rows} {...chart} />
      ))}
    </div>
  );
}

function ChartFigure({
  title,
  summary,
  note,
  testId,
  children,
}: {
  title: string;
  summary: string;
  note?: string;
  testId?: string;
  children: React.ReactNode;
}) {
  const id = useId();
  return (
    <figure
      aria-labelledby={id}
      data-testid={testId}
      className="min-w-0 rounded-lg border border-gray-200 bg-white p-3 shadow-sm"
    >
      <figcaption id={id} className="mb-2">
        <span className="font-medium">{title}</span>
        <span className="ml-2 text-sm text-gray-600">{summary}</span>
        {note && <span className="block text-xs text-gray-500">{note}</span>}
      </figcaption>
      {children}
    </figure>
  );
}

function latestSummary(rows: readonly MetricRow[], series: readonly Series[]): string {
  const last = rows.at(-1);
  if (!last) return "";
  const parts = series
    .filter((s) => value(last, s.key) !== undefined)
    .map((s) => `${s.label} ${formatNumber(value(last, s.key) as number)}`);
  return `step ${last.step}: ${parts.join(", ")}`;
}

/** The x axis of every chart (a function, not a component: recharts reads its children's props). */
function stepAxis(rows: readonly MetricRow[]) {
  const only = rows.length === 1 ? rows[0]?.step : undefined;
  return (
    <XAxis
      dataKey="step"
      type="number"
      allowDecimals={false}
      // A single step still gets an axis around it.
      domain={only === undefined ? ["dataMin", "dataMax"] : [Math.max(0, only - 1), only + 1]}
      padding={{ left: 8, right: 8 }}
      tick={{ fontSize: 11 }}
    />
  );
}

/** Mean reward with a ±std band; one dot per step that recorded a mean. */
function RewardChart({
  rows: all,
  prefix,
  title,
  testId,
}: {
  rows: readonly MetricRow[];
  prefix: string;
  title: string;
  testId?: string;
}) {
  const mean = `${prefix}reward/mean`;
  const std = `${prefix}reward/std`;
  const rows = all.filter((row) => value(row, mean) !== undefined);
  if (rows.length === 0) return null;
  const band = (row: MetricRow) => {
    const m = value(row, mean);
    const s = value(row, std);
    return m === undefined || s === undefined ? null : [m - s, m + s];
  };
  const last = rows.at(-1) as MetricRow;
  const lastStd = value(last, std);
  const summary = `step ${last.step}: ${formatNumber(value(last, mean) as number)}${lastStd === undefined ? "" : ` ± ${formatNumber(lastStd)}`}`;
  return (
    <ChartFigure title={title} summary={summary} {...(testId ? { testId } : {})}>
      <ComposedChart
        data={rows as MetricRow[]}
        responsive
        style={CHART_STYLE}
        margin={{ left: -12, right: 8 }}
      >
        <CartesianGrid strokeDasharray="3 3" stroke="#e5e7eb" />
        {stepAxis(rows)}
        <YAxis
          tick={{ fontSize: 11 }}
          tickFormatter={formatNumber}
          domain={yDomain(rows.flatMap((row) => band(row) ?? seriesValues([row], [mean])))}
        />
        <Tooltip formatter={formatValue} labelFormatter={(step) => `step ${step}`} />
        <Legend wrapperStyle={{ fontSize: 12 }} />
        <Area
          dataKey={band}
          name="± std"
          stroke="none"
          fill={BLUE}
          fillOpacity={0.15}
          dot={false}
          activeDot={false}
          isAnimationActive={false}
        />
        <Line
          dataKey={(row: MetricRow) => value(row, mean) ?? null}
          name="mean"
          stroke={BLUE}
          strokeWidth={2}
          dot={{ r: 2.5 }}
          isAnimationActive={false}
        />
      </ComposedChart>
    </ChartFigure>
  );
}

/** Lines for a few related metrics; hidden when the job recorded none of them. */
function MetricChart({
  rows: all,
  title,
  series: wanted,
  note,
  stepped = false,
}: {
  rows: readonly MetricRow[];
  title: string;
  series: Series[];
  note?: string;
  stepped?: boolean;
}) {
  const series = wanted.filter((s) => all.some((row) => value(row, s.key) !== undefined));
  const rows = all.filter((row) =>
    hasAny(
      row,
      series.map((s) => s.key),
    ),
  );
  if (rows.length === 0) return null;
  return (
    <ChartFigure title={title} summary={latestSummary(rows, series)} {...(note ? { note } : {})}>
      <LineChart data={rows as MetricRow[]} responsive style={CHART_STYLE} margin={{ left: -12, right: 8 }}>
        <CartesianGrid strokeDasharray="3 3" stroke="#e5e7eb" />
        {stepAxis(rows)}
        <YAxis
          tick={{ fontSize: 11 }}
          tickFormatter={formatNumber}
          domain={yDomain(
            seriesValues(
              rows,
              series.map((s) => s.key),
            ),
          )}
          allowDecimals={!stepped}
        />
        <Tooltip formatter={formatValue} labelFormatter={(step) => `step ${step}`} />
        {series.length > 1 && <Legend wrapperStyle={{ fontSize: 12 }} />}
        {series.map((s, i) => (
          <Line
            key={s.key}
            type={stepped ? "stepAfter" : "linear"}
            dataKey={(row: MetricRow) => value(row, s.key) ?? null}
            name={s.label}
            stroke={COLORS[i % COLORS.length]}
            strokeWidth={2}
            dot={rows.length <= MAX_DOTS ? { r: 2 } : false}
            connectNulls
            isAnimationActive={false}
          />
        ))}
      </LineChart>
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
