"use client";
// /jobs/compare?ids=a,b,…: the team's jobs to pick from, and the picked jobs'
// curves overlaid, one colour per job and a legend by job name; reward,
// validation, loss and KL when any picked job recorded them, and any metric
// they all share. Each job is read with the team's own queries (jobs.get and
// jobs.metrics), so another team's id answers "not found" like a missing one.
import { useQueries, useQuery, useQueryClient } from "@tanstack/react-query";
import { useRouter, useSearchParams } from "next/navigation";
import { startTransition, useEffect, useId, useOptimistic, useRef, useState } from "react";
import { useTRPC } from "../../lib/trpc.ts";
import { errorMessage } from "../shared/api.ts";
import { INPUT } from "../shared/fields.tsx";
import { Page } from "../shared/page.tsx";
import { Button, Card, Empty, ErrorState, Loading, StatusBadge } from "../ui.tsx";
import { isActive, type Job } from "./api.ts";
import { axisTitle } from "./chart-data.ts";
import {
  compareHref,
  jobColour,
  jobLabel,
  legendLabels,
  MAX_COMPARED,
  overlay,
  parseJobIds,
  type Run,
  sharedMetrics,
  standardCharts,
  toggleJob,
} from "./compare.ts";
import { EMPTY_TABLE, mergePoints, tableRows } from "./metric-table.ts";
import {
  ChartControls,
  ChartFigure,
  type ChartSeries,
  type ChartView,
  StepChart,
  useChartView,
} from "./step-chart.tsx";
import { stepsDone, totalSteps } from "./steps.ts";

/** How often a running job's curves are read again. */
const REFRESH_MS = 5_000;

export function RunsComparison() {
  const trpc = useTRPC();
  const router = useRouter();
  const search = useSearchParams();
  // The URL holds the picked jobs; a pick shows at once, before the navigation that records it ends.
  const [ids, setIds] = useOptimistic(parseJobIds(search.get("ids")));
  const pick = (id: string) =>
    startTransition(() => {
      const next = toggleJob(ids, id);
      setIds(next);
      router.replace(compareHref(next), { scroll: false });
    });

  const jobs = useQueries({
    queries: ids.map((jobId) => ({
      ...trpc.jobs.get.queryOptions({ jobId }),
      refetchInterval: (query: { state: { data?: { status: Job["status"] } | undefined } }) =>
        query.state.data && isActive(query.state.data.status) ? REFRESH_MS : false,
    })),
  });
  const metrics = useQueries({
    queries: ids.map((jobId, i) => {
      const job = jobs[i]?.data;
      return {
        ...trpc.jobs.metrics.queryOptions({ jobId }),
        refetchInterval: job && isActive(job.status) ? REFRESH_MS : (false as const),
      };
    }),
  });

  // A job that just ended may have stored steps since the last read: read its metrics once more.
  const queryClient = useQueryClient();
  const wasActive = useRef(new Map<string, boolean>());
  const statuses = jobs.map((query) => query.data?.status ?? "").join(",");
  // biome-ignore lint/correctness/useExhaustiveDependencies: runs when a status changes (statuses says which)
  useEffect(() => {
    jobs.forEach(({ data: job }) => {
      if (!job) return;
      const active = isActive(job.status);
      if (wasActive.current.get(job.id) && !active)
        void queryClient.invalidateQueries({ queryKey: trpc.jobs.metrics.queryKey({ jobId: job.id }) });
      wasActive.current.set(job.id, active);
    });
  }, [statuses]);

  const found = jobs.flatMap(({ data: job }, index) => (job ? [{ job, index }] : []));
  const labels = legendLabels(found.map(({ job }) => job));
  const series: ChartSeries[] = found.map(({ job, index }, k) => ({
    key: job.id,
    label: labels[k] as string,
    colour: jobColour(index),
  }));
  const runs: Run[] = found.flatMap(({ job, index }) => {
    const points = metrics[index]?.data;
    return points ? [{ key: job.id, rows: tableRows(mergePoints(EMPTY_TABLE, points)) }] : [];
  });
  const pending = [...jobs, ...metrics].some((query) => query.isPending);
  const { view, setSmoothing, reset } = useChartView();

  return (
    <Page
      title="Compare runs"
      className="space-y-6"
      description={`Pick up to ${MAX_COMPARED} of your team's jobs to overlay their curves.`}
    >
      <div className="grid gap-6 lg:grid-cols-[20rem_minmax(0,1fr)]">
        <Card title="Jobs" className="min-w-0">
          <JobPicker selected={ids} onToggle={pick} />
        </Card>
        <section aria-label="Compared curves" className="min-w-0 space-y-4">
          {ids.map((id, i) => {
            const error = jobs[i]?.error ?? metrics[i]?.error;
            const message = error ? errorMessage(error) : "";
            return error ? (
              <div key={id} className="flex items-start gap-2">
                <div className="flex-1">
                  <ErrorState error={message.includes(id) ? message : `Job ${id}: ${message}`} />
                </div>
                <Button variant="secondary" onClick={() => pick(id)}>
                  Remove
                </Button>
              </div>
            ) : null;
          })}
          {ids.length === 0 ? (
            <Empty>Pick jobs on the left to overlay their curves.</Empty>
          ) : runs.length > 0 ? (
            <>
              <ChartControls view={view} setSmoothing={setSmoothing} reset={reset} />
              <Curves runs={runs} series={series} view={view} />
            </>
          ) : (
            pending && <Loading what="the jobs' metrics" />
          )}
        </section>
      </div>
    </Page>
  );
}

/** The team's jobs, newest first, each with a checkbox; a picked one shows its colour. */
function JobPicker({ selected, onToggle }: { selected: readonly string[]; onToggle: (id: string) => void }) {
  const trpc = useTRPC();
  const jobs = useQuery(trpc.jobs.list.queryOptions({}));
  if (jobs.isPending) return <Loading what="jobs" />;
  if (jobs.error) return <ErrorState error={jobs.error} />;
  if (jobs.data.length === 0) return <Empty>No jobs yet.</Empty>;
  const full = selected.length >= MAX_COMPARED;
  return (
    <ul className="max-h-[32rem] space-y-1 overflow-y-auto text-sm">
      {jobs.data.map((job) => (
        <PickerRow
          key={job.id}
          job={job}
          index={selected.indexOf(job.id)}
          disabled={full && !selected.includes(job.id)}
          onToggle={() => onToggle(job.id)}
        />
      ))}
    </ul>
  );
}

function PickerRow({
  job,
  index,
  disabled,
  onToggle,
}: {
  job: Job;
  index: number;
  disabled: boolean;
  onToggle: () => void;
}) {
  const id = useId();
  const picked = index >= 0;
  return (
    <li className="flex items-start gap-2 rounded px-1 py-1 hover:bg-gray-50">
      <input
        id={id}
        type="checkbox"
        className="mt-1"
        checked={picked}
        disabled={disabled}
        onChange={onToggle}
        aria-describedby={`${id}-about`}
      />
      <div className="min-w-0 flex-1">
        <label htmlFor={id} className="flex items-center gap-2 font-medium">
          {picked && (
            <span
              aria-hidden="true"
              className="inline-block h-2.5 w-2.5 shrink-0 rounded-full"
              style={{ background: jobColour(index) }}
            />
          )}
          <span className="truncate" title={job.id}>
            {jobLabel(job)}
          </span>
        </label>
        <p id={`${id}-about`} className="flex flex-wrap items-center gap-x-2 text-xs text-gray-500">
          <span>{job.kind}</span>
          <StatusBadge status={job.status} />
          <span className="tabular-nums">{stepsDone(job.step, totalSteps(job))}</span>
        </p>
      </div>
    </li>
  );
}

/** The standard charts the runs have data for, then one chart of any metric they all share. */
function Curves({
  runs,
  series,
  view,
}: {
  runs: readonly Run[];
  series: readonly ChartSeries[];
  view: ChartView;
}) {
  const shared = sharedMetrics(runs);
  const standard = standardCharts(runs);
  const offered = shared.filter((m) => !standard.some((c) => c.metric === m));
  const [chosen, setChosen] = useState<string | null>(null);
  const metric = chosen && shared.includes(chosen) ? chosen : (offered[0] ?? shared[0]);
  const selectId = useId();
  return (
    <>
      <div className="grid gap-4 xl:grid-cols-2">
        {standard.map((c) => (
          <CompareChart
            key={c.metric}
            title={c.title}
            metric={c.metric}
            runs={runs}
            series={series}
            view={view}
          />
        ))}
      </div>
      <div className="space-y-2">
        <label htmlFor={selectId} className="block text-sm font-medium">
          Metric
          <select
            id={selectId}
            className={`${INPUT} block max-w-md`}
            value={metric ?? ""}
            disabled={shared.length === 0}
            onChange={(e) => setChosen(e.target.value)}
          >
            {shared.length === 0 && <option value="">no metric shared by every job</option>}
            {shared.map((name) => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
          </select>
        </label>
        {metric && <CompareChart title={metric} metric={metric} runs={runs} series={series} view={view} />}
      </div>
    </>
  );
}

/** One metric of every run, a line per job; jobs that did not record it are named under the chart. */
function CompareChart({
  title,
  metric,
  runs,
  series,
  view,
}: {
  title: string;
  metric: string;
  runs: readonly Run[];
  series: readonly ChartSeries[];
  view: ChartView;
}) {
  const rows = overlay(runs, metric);
  const drawn = series.filter((s) => rows.some((row) => row.values[s.key] !== undefined));
  const missing = series.filter((s) => !drawn.includes(s) && runs.some((run) => run.key === s.key));
  return (
    <ChartFigure
      title={title}
      summary={metric === title ? undefined : metric}
      note={missing.length ? `Not recorded by ${missing.map((s) => s.label).join(", ")}.` : undefined}
      testId={`compare-chart-${metric}`}
    >
      <StepChart rows={rows} series={drawn} yTitle={axisTitle(metric)} view={view} />
    </ChartFigure>
  );
}
