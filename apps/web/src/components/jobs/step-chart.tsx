"use client";
// One chart over the step axis, drawn from chart-data.ts's points: a line per
// series (faint as recorded behind the smoothed one while smoothing is on, as
// TensorBoard and W&B draw it), an optional shaded "± std" band, axis titles,
// and a drag across the plot to zoom into those steps. The charts of one page
// share a view (smoothing and zoom) and its controls (ChartControls).
import { useId, useState } from "react";
import {
  Area,
  CartesianGrid,
  ComposedChart,
  Legend,
  Line,
  ReferenceArea,
  Tooltip,
  XAxis,
  YAxis,
} from "recharts";
import { Button } from "../ui.tsx";
import {
  band as bandOf,
  type ChartPoint,
  chartPoints,
  dragRange,
  drawnValues,
  inRange,
  MAX_SMOOTHING,
  type StepRange,
  showMarkers,
  thin,
  xDomain,
  yDomain,
} from "./chart-data.ts";
import { formatNumber, type MetricRow } from "./metric-table.ts";

const CHART_STYLE = { width: "100%", height: 240 } as const;
/** The recorded line behind a smoothed one: visible, but clearly not the curve to read. */
const RAW_OPACITY = 0.25;

export interface ChartSeries {
  /** The metric's (or, comparing runs, the run's) key in each row's values. */
  key: string;
  label: string;
  colour: string;
}

/** A shaded spread around a series: `mean` ± `std`, both keys of the rows. */
export interface ChartBand {
  mean: string;
  std: string;
  label: string;
  colour: string;
}

/** What the charts of one page share: the smoothing weight and the zoomed steps. */
export interface ChartView {
  smoothing: number;
  range: StepRange | null;
  zoom: (range: StepRange) => void;
}

/** A page's chart view and the setters its controls use. */
export function useChartView() {
  const [smoothing, setSmoothing] = useState(0);
  const [range, setRange] = useState<StepRange | null>(null);
  const view: ChartView = { smoothing, range, zoom: setRange };
  return { view, setSmoothing, reset: () => setRange(null) };
}

/** The smoothing slider, and the zoomed range with its reset, above a page's charts. */
export function ChartControls({
  view,
  setSmoothing,
  reset,
}: {
  view: ChartView;
  setSmoothing: (weight: number) => void;
  reset: () => void;
}) {
  const id = useId();
  return (
    <div className="flex flex-wrap items-center gap-x-6 gap-y-2 text-sm">
      <label htmlFor={id} className="flex items-center gap-2">
        <span className="font-medium">Smoothing</span>
        <input
          id={id}
          type="range"
          min={0}
          max={MAX_SMOOTHING}
          step={0.01}
          value={view.smoothing}
          onChange={(e) => setSmoothing(Number(e.target.value))}
          className="w-36 accent-blue-600"
          aria-valuetext={view.smoothing === 0 ? "off" : `EMA weight ${view.smoothing}`}
        />
        <output htmlFor={id} className="w-8 tabular-nums text-gray-700">
          {view.smoothing === 0 ? "off" : view.smoothing.toFixed(2)}
        </output>
      </label>
      {view.range ? (
        <span className="flex items-center gap-2" data-testid="zoomed-range">
          <span className="tabular-nums">
            Steps {view.range.from}–{view.range.to}
          </span>
          <Button variant="secondary" className="py-1" onClick={reset}>
            Reset zoom
          </Button>
        </span>
      ) : (
        <span className="text-xs text-gray-500">Drag across a chart to zoom into those steps.</span>
      )}
    </div>
  );
}

/** A chart's frame: its title, a one-line summary and an optional note. */
export function ChartFigure({
  title,
  summary,
  note,
  testId,
  children,
}: {
  title: string;
  summary?: string | undefined;
  note?: string | undefined;
  testId?: string | undefined;
  children: React.ReactNode;
}) {
  const id = useId();
  return (
    <figure
      aria-labelledby={id}
      data-testid={testId}
      // The plot takes focus for recharts' keyboard tooltip: outlined for the keyboard, not after a drag.
      className="min-w-0 select-none rounded-lg border border-gray-200 bg-white p-3 shadow-sm [&_svg:focus:not(:focus-visible)]:outline-none"
    >
      <figcaption id={id} className="mb-2">
        <span className="font-medium">{title}</span>
        {summary && <span className="ml-2 text-sm text-gray-600">{summary}</span>}
        {note && <span className="block text-xs text-gray-500">{note}</span>}
      </figcaption>
      {children}
    </figure>
  );
}

const formatValue = (v: unknown): string =>
  Array.isArray(v) ? v.map(formatValue).join(" – ") : typeof v === "number" ? formatNumber(v) : String(v);

/** The step under the pointer, as recharts reports it (a number axis, but typed loosely). */
const stepAt = (state: { activeLabel?: string | number | undefined }): number | undefined =>
  state.activeLabel === undefined ? undefined : Number(state.activeLabel);

/** Series over the steps; nothing is drawn for rows that recorded none of them. */
export function StepChart({
  rows,
  series,
  band,
  yTitle,
  view,
  stepped = false,
  allowDecimals = true,
}: {
  rows: readonly MetricRow[];
  series: readonly ChartSeries[];
  band?: ChartBand | undefined;
  /** The y axis's title: the metric's name and unit. */
  yTitle: string;
  view: ChartView;
  /** A value that holds until the next step (a version): drawn as steps, not slopes. */
  stepped?: boolean;
  allowDecimals?: boolean;
}) {
  const [drag, setDrag] = useState<{ from: number; to: number } | null>(null);
  // Recomputed on each render: linear in the steps, and a new step or a smoothing change needs it anyway.
  const keys = [...series.map((s) => s.key), ...(band ? [band.std] : [])];
  // A value that holds until the next step (a version) has nothing to smooth: an average of versions is none.
  const smoothing = stepped ? 0 : view.smoothing;
  const points = thin(inRange(chartPoints(rows, keys, smoothing), view.range), keys);
  const smoothed = smoothing > 0;
  const markers = showMarkers(points.length);
  const lineValues = drawnValues(
    points,
    series.map((s) => s.key),
  );
  const yValues = band
    ? lineValues.concat(points.flatMap((p) => bandOf(p, band.mean, band.std) ?? []))
    : lineValues;
  const curve = stepped ? "stepAfter" : "linear";

  const endDrag = () => {
    const range = drag && dragRange(drag.from, drag.to);
    setDrag(null);
    if (range) view.zoom(range);
  };

  return (
    <ComposedChart
      data={points as ChartPoint[]}
      responsive
      style={CHART_STYLE}
      margin={{ top: 4, left: 8, right: 8, bottom: 16 }}
      onMouseDown={(state) => {
        const step = stepAt(state);
        if (step !== undefined) setDrag({ from: step, to: step });
      }}
      onMouseMove={(state) => {
        const step = stepAt(state);
        if (drag && step !== undefined && step !== drag.to) setDrag({ ...drag, to: step });
      }}
      onMouseUp={endDrag}
      onMouseLeave={() => setDrag(null)}
    >
      <CartesianGrid strokeDasharray="3 3" stroke="#e5e7eb" />
      <XAxis
        dataKey="step"
        type="number"
        allowDecimals={false}
        allowDataOverflow
        domain={xDomain(points, view.range)}
        padding={{ left: 8, right: 8 }}
        tick={{ fontSize: 11 }}
        label={{ value: "step", position: "insideBottom", offset: -10, fontSize: 12, fill: "#4b5563" }}
      />
      <YAxis
        tick={{ fontSize: 11 }}
        tickFormatter={formatNumber}
        domain={yDomain(yValues)}
        allowDecimals={allowDecimals}
        label={{
          value: yTitle,
          angle: -90,
          position: "insideLeft",
          offset: 0,
          fontSize: 12,
          fill: "#4b5563",
          style: { textAnchor: "middle" },
        }}
      />
      <Tooltip formatter={formatValue} labelFormatter={(step) => `step ${step}`} />
      <Legend wrapperStyle={{ fontSize: 12, paddingTop: 12 }} />
      {band && (
        <Area
          dataKey={(p: ChartPoint) => bandOf(p, band.mean, band.std)}
          name={band.label}
          legendType="square"
          stroke="none"
          fill={band.colour}
          fillOpacity={0.15}
          dot={false}
          activeDot={false}
          connectNulls
          isAnimationActive={false}
        />
      )}
      {smoothed &&
        series.map((s) => (
          <Line
            key={`${s.key} recorded`}
            type={curve}
            dataKey={(p: ChartPoint) => p.raw[s.key] ?? null}
            name={`${s.label} (recorded)`}
            legendType="none"
            stroke={s.colour}
            strokeOpacity={RAW_OPACITY}
            strokeWidth={1.5}
            dot={markers ? { r: 2, fillOpacity: RAW_OPACITY, strokeOpacity: RAW_OPACITY } : false}
            activeDot={false}
            connectNulls
            isAnimationActive={false}
          />
        ))}
      {series.map((s) => (
        <Line
          key={s.key}
          type={curve}
          dataKey={(p: ChartPoint) => (smoothed ? p.smooth : p.raw)[s.key] ?? null}
          name={smoothed ? `${s.label} (smoothed)` : s.label}
          legendType="line"
          stroke={s.colour}
          strokeWidth={2}
          dot={markers && !smoothed ? { r: 2.5 } : false}
          connectNulls
          isAnimationActive={false}
        />
      ))}
      {drag && drag.from !== drag.to && (
        <ReferenceArea x1={drag.from} x2={drag.to} fill="#2563eb" fillOpacity={0.1} stroke="#2563eb" />
      )}
    </ComposedChart>
  );
}
