"use client";
// One job: its state, a cancel (asked twice) while it runs, and its metrics live
// (Socket.IO: history on subscribe, then a `metrics` event per step and a
// `status` event when it ends).
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { type Connection, useJobMetrics } from "../../lib/realtime.ts";
import { useTRPC } from "../../lib/trpc.ts";
import { JobBestVersion } from "../adapters/best-version.tsx";
import { ConfirmButton } from "../shared/confirm-button.tsx";
import { Page } from "../shared/page.tsx";
import { ButtonLink, Card, ErrorState, Loading, Stat, StatusBadge, timeAgo } from "../ui.tsx";
import { isActive, type Job, useAdapterNames } from "./api.ts";
import { compareHref } from "./compare.ts";
import { canResume, failureClass, faultsNote, waitingNote } from "./job-faults.ts";
import { JobCharts, LatestMetrics } from "./metric-charts.tsx";
import { formatNumber, latestValue, type MetricRow } from "./metric-table.ts";
import { type LiveState, latestStep, liveState, stepsDone, totalSteps } from "./steps.ts";

/** Without a live connection, keep the page roughly current (with one, a worker taking the job is pushed). */
const OFFLINE_POLL_MS = 5_000;

export function JobDetail({ jobId }: { jobId: string }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const jobKey = trpc.jobs.get.queryKey({ jobId });
  const refreshList = () => queryClient.invalidateQueries({ queryKey: trpc.jobs.list.queryKey() });

  const { rows, connection } = useJobMetrics(jobId, {
    onStatus: (status) => {
      queryClient.setQueryData(jobKey, (old) => (old ? { ...old, status } : old));
      // The final state also brings the error and finish time.
      void queryClient.invalidateQueries({ queryKey: jobKey });
      void refreshList();
    },
    onStep: (step) =>
      queryClient.setQueryData(jobKey, (old) =>
        old
          ? {
              ...old,
              step: Math.max(old.step, step + 1),
              // A stored step means a worker has the job.
              status: old.status === "QUEUED" ? "RUNNING" : old.status,
            }
          : old,
      ),
  });
  const job = useQuery({
    ...trpc.jobs.get.queryOptions({ jobId }),
    refetchInterval: (query) => {
      const status = query.state.data?.status;
      return status && isActive(status) && connection.state !== "live" ? OFFLINE_POLL_MS : false;
    },
  });

  if (job.isPending)
    return (
      <Page title={`Job ${jobId}`} wrapTitle>
        <Loading what="the job" />
      </Page>
    );
  if (job.error)
    return (
      <Page title={`Job ${jobId}`} wrapTitle>
        <ErrorState error={job.error} />
        <p className="mt-4 text-sm">
          <Link href="/jobs" className="text-blue-700 underline">
            Back to jobs
          </Link>
        </p>
      </Page>
    );

  const data = job.data;
  return (
    <Page
      title={data.name}
      description={
        <>
          {data.kind} job <span className="font-mono text-xs break-all">{data.id}</span>
        </>
      }
      className="space-y-6"
      wrapTitle
      actions={
        data.kind !== "SFT" && (
          <ButtonLink href={`/jobs/${data.id}/trajectories`} variant="secondary">
            View trajectories
          </ButtonLink>
        )
      }
    >
      <JobSummary job={data} rows={rows} />
      <section aria-labelledby="metrics-heading" className="space-y-3">
        <div className="flex flex-wrap items-baseline justify-between gap-2">
          <h2 id="metrics-heading" className="text-lg font-medium">
            Metrics
          </h2>
          <div className="flex flex-wrap items-center gap-4">
            <LiveIndicator connection={connection} jobActive={isActive(data.status)} />
            <ButtonLink href={compareHref([data.id])} variant="secondary">
              Compare with…
            </ButtonLink>
          </div>
        </div>
        <JobCharts rows={rows} />
        <LatestMetrics rows={rows} />
      </section>
      <details className="rounded-lg border border-gray-200 bg-white p-3 text-sm shadow-sm">
        <summary className="cursor-pointer font-medium">Configuration</summary>
        <pre className="mt-2 overflow-x-auto text-xs">{JSON.stringify(data.config, null, 2)}</pre>
      </details>
    </Page>
  );
}

function JobSummary({ job, rows }: { job: Job; rows: readonly MetricRow[] }) {
  const trpc = useTRPC();
  const adapterNames = useAdapterNames();
  const environments = useQuery({ ...trpc.environments.list.queryOptions({}), enabled: !!job.environmentId });
  const environment = environments.data?.find((e) => e.id === job.environmentId);
  const policyVersion = latestValue(rows, "policy/version");
  const newest = latestStep(job.step);

  return (
    <Card>
      <dl className="grid grid-cols-1 gap-x-6 gap-y-3 text-sm sm:grid-cols-2 lg:grid-cols-4">
        <Stat label="Status">
          <span aria-live="polite">
            <StatusBadge status={job.status} />
          </span>
        </Stat>
        <Stat label="Kind">{job.kind}</Stat>
        <Stat label="Adapter">
          <Link href={`/adapters/${job.adapterId}`} className="text-blue-700 underline">
            {adapterNames.get(job.adapterId) ?? job.adapterId}
          </Link>
        </Stat>
        <Stat label="Environment">{job.environmentId ? (environment?.name ?? job.environmentId) : "—"}</Stat>
        <Stat label="Latest step">
          <span data-testid="latest-step" className="tabular-nums">
            {newest === undefined ? "—" : newest}
          </span>
          <span className="ml-2 text-xs tabular-nums text-gray-500">
            {stepsDone(job.step, totalSteps(job))}
          </span>
        </Stat>
        <Stat label="Policy version">
          <span data-testid="policy-version" className="tabular-nums">
            {policyVersion === undefined ? "—" : formatNumber(policyVersion)}
          </span>
        </Stat>
        <Stat label="Best version">
          <JobBestVersion adapterId={job.adapterId} jobId={job.id} active={isActive(job.status)} />
        </Stat>
        <Stat label="Created">{timeAgo(job.createdAt)}</Stat>
        <Stat label={job.finishedAt ? "Finished" : "Started"}>
          {job.finishedAt ? timeAgo(job.finishedAt) : job.startedAt ? timeAgo(job.startedAt) : "not yet"}
        </Stat>
      </dl>
      {waitingNote(job) && (
        <p role="status" className="mt-4 text-xs text-gray-600">
          {waitingNote(job)}
        </p>
      )}
      {faultsNote(job) && (
        <p role="note" className="mt-4 text-xs text-gray-600">
          {faultsNote(job)}
        </p>
      )}
      {job.error && (
        <div className="mt-4">
          <h2 className="text-sm font-medium text-red-800">
            Error{failureClass(job) ? ` (${failureClass(job)})` : ""}
          </h2>
          <pre
            role="alert"
            className="mt-1 whitespace-pre-wrap break-words rounded border border-red-200 bg-red-50 p-3 text-xs text-red-800"
          >
            {job.error}
          </pre>
        </div>
      )}
      {isActive(job.status) && <CancelJob job={job} />}
      {canResume(job) && <ResumeJob job={job} />}
    </Card>
  );
}

/** A failed or cancelled job goes on from its last checkpoint. */
function ResumeJob({ job }: { job: Job }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const resume = useMutation(
    trpc.jobs.resume.mutationOptions({
      onSuccess: (updated) => {
        queryClient.setQueryData(trpc.jobs.get.queryKey({ jobId: job.id }), updated);
        void queryClient.invalidateQueries({ queryKey: trpc.jobs.list.queryKey() });
      },
    }),
  );
  return (
    <div className="mt-4 border-t border-gray-100 pt-4">
      <ConfirmButton
        label="Resume job"
        question="Resume this job from its last checkpoint? Steps after it run again."
        confirmLabel="Resume job"
        keepLabel="Leave it"
        onConfirm={() => resume.mutate({ jobId: job.id })}
        pending={resume.isPending}
        error={resume.error}
      />
    </div>
  );
}

function CancelJob({ job }: { job: Job }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const cancel = useMutation(
    trpc.jobs.cancel.mutationOptions({
      onSuccess: (updated) => {
        queryClient.setQueryData(trpc.jobs.get.queryKey({ jobId: job.id }), updated);
        void queryClient.invalidateQueries({ queryKey: trpc.jobs.list.queryKey() });
      },
    }),
  );
  return (
    <div className="mt-4 border-t border-gray-100 pt-4">
      {job.cancelRequested ? (
        <p role="status" className="text-sm text-gray-700">
          Cancellation requested: the job stops after its current step.
        </p>
      ) : (
        <ConfirmButton
          label="Cancel job"
          variant="danger"
          question="Cancel this job? It stops after its current step."
          confirmLabel="Cancel job"
          keepLabel="Keep running"
          onConfirm={() => cancel.mutate({ jobId: job.id })}
          pending={cancel.isPending}
          error={cancel.error}
        />
      )}
    </div>
  );
}

const LIVE_TEXT: Record<LiveState, string> = {
  connecting: "Connecting…",
  live: "Live",
  reconnecting: "Reconnecting…",
  failed: "Live updates unavailable",
  ended: "Ended: no more steps will arrive",
};

const LIVE_COLOUR: Record<LiveState, string> = {
  connecting: "bg-yellow-400",
  live: "bg-green-500",
  reconnecting: "bg-yellow-400",
  failed: "bg-red-500",
  ended: "bg-gray-400",
};

/** Green only while the job can still send steps (RUNNING or QUEUED) and the socket is up. */
function LiveIndicator({ connection, jobActive }: { connection: Connection; jobActive: boolean }) {
  const state = liveState(connection.state, jobActive);
  return (
    <p role="status" className="flex items-center gap-2 text-sm text-gray-600" data-connection={state}>
      <span aria-hidden="true" className={`inline-block h-2 w-2 rounded-full ${LIVE_COLOUR[state]}`} />
      {LIVE_TEXT[state]}
      {state === "failed" && connection.state === "failed" && `: ${connection.error}`}
    </p>
  );
}
