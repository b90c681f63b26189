"use client";
// The stored trajectories of one step and group: reward, advantage, the policy
// version that sampled them and how stale it was, and every token, the model's
// (mask 1) told apart from the environment's, and tool calls and the tool's
// replies told apart from both. The step and group live in the URL
// (?step=&group=), so a view can be linked to.
//
// Vision-language trajectories: their images are not stored with the
// trajectory yet, so only the tokens are shown.
import { useQuery } from "@tanstack/react-query";
import { usePathname, useRouter, useSearchParams } from "next/navigation";
import { useEffect, useId, useState } from "react";
import { useTRPC } from "../../lib/trpc.ts";
import { INPUT } from "../shared/fields.tsx";
import { Page } from "../shared/page.tsx";
import { ButtonLink, Card, Empty, ErrorState, Loading, Stat, StatusBadge } from "../ui.tsx";
import { isActive, type Job, type Trajectory } from "./api.ts";
import { formatNumber } from "./metric-table.ts";
import { latestStep } from "./steps.ts";
import { type TokenKind, tokenKinds, turnAdvantages, visibleSegments } from "./tokens.ts";

const REFRESH_MS = 5_000;

export function TrajectoryViewer({ jobId }: { jobId: string }) {
  const trpc = useTRPC();
  // While the job runs, newer steps become selectable.
  const job = useQuery({
    ...trpc.jobs.get.queryOptions({ jobId }),
    refetchInterval: (query) => (query.state.data && isActive(query.state.data.status) ? REFRESH_MS : false),
  });
  const title = job.data ? `Trajectories of ${job.data.kind} job ${jobId}` : `Trajectories of job ${jobId}`;
  return (
    <Page
      title={title}
      className="space-y-4"
      wrapTitle
      actions={
        <ButtonLink href={`/jobs/${jobId}`} variant="secondary">
          Back to the job
        </ButtonLink>
      }
    >
      {job.isPending ? (
        <Loading what="the job" />
      ) : job.error ? (
        <ErrorState error={job.error} />
      ) : job.data.kind === "SFT" ? (
        <Empty>SFT jobs train on the conversations they were given; they store no trajectories.</Empty>
      ) : job.data.step === 0 ? (
        <Empty>No step has been stored yet; trajectories appear once the first step is done.</Empty>
      ) : (
        <StepView job={job.data} />
      )}
    </Page>
  );
}

/** An integer from the URL, or undefined. */
function intParam(text: string | null): number | undefined {
  if (text === null || !/^\d+$/.test(text)) return undefined;
  return Number(text);
}

function StepView({ job }: { job: Job }) {
  const trpc = useTRPC();
  const router = useRouter();
  const pathname = usePathname();
  const search = useSearchParams();
  // Only rendered once a step is stored (see above), so there is a newest step.
  const lastStep = latestStep(job.step) ?? 0;
  const step = Math.min(intParam(search.get("step")) ?? lastStep, lastStep);
  const trajectories = useQuery(trpc.jobs.trajectories.queryOptions({ jobId: job.id, step, decode: true }));

  const groups = [...new Set((trajectories.data ?? []).map((t) => t.groupIndex))].sort((a, b) => a - b);
  const wanted = intParam(search.get("group"));
  const group = wanted !== undefined && groups.includes(wanted) ? wanted : groups[0];

  const show = (next: { step: number; group?: number }) => {
    const params = new URLSearchParams({ step: String(next.step) });
    if (next.group !== undefined) params.set("group", String(next.group));
    router.replace(`${pathname}?${params}`, { scroll: false });
  };
  // Without ?step= the newest step is shown; pin it, so the view does not move as the job advances.
  const pinned = search.has("step");
  // biome-ignore lint/correctness/useExhaustiveDependencies: pin once, on arrival
  useEffect(() => {
    if (!pinned) show({ step });
  }, [pinned]);

  const members = (trajectories.data ?? [])
    .filter((t) => t.groupIndex === group)
    .sort((a, b) => a.sampleIndex - b.sampleIndex || a.player - b.player);

  return (
    <>
      <Card>
        <div className="flex flex-wrap items-end gap-4">
          <StepPicker step={step} last={lastStep} onChange={(s) => show({ step: s })} />
          <div>
            <label htmlFor="group" className="block text-sm font-medium">
              Group
            </label>
            <select
              id="group"
              className={`${INPUT} w-auto min-w-40`}
              value={group ?? ""}
              disabled={groups.length === 0}
              onChange={(e) => show({ step, group: Number(e.target.value) })}
            >
              {groups.length === 0 && <option value="">none</option>}
              {groups.map((g) => (
                <option key={g} value={g}>
                  {groupLabel(g, trajectories.data ?? [])}
                </option>
              ))}
            </select>
          </div>
        </div>
        <TokenLegend tools={members.some(usesTools)} />
      </Card>
      {trajectories.isPending ? (
        <Loading what={`the trajectories of step ${step}`} />
      ) : trajectories.error ? (
        <ErrorState error={trajectories.error} />
      ) : members.length === 0 ? (
        <Empty>Step {step} stored no trajectories.</Empty>
      ) : (
        // No aria-label here: "Group … of step …" would shadow the Step and Group fields for getByLabel.
        <div className="space-y-4">
          {members.map((t) => (
            <TrajectoryCard key={t.id} trajectory={t} />
          ))}
        </div>
      )}
    </>
  );
}

function groupLabel(group: number, all: readonly Trajectory[]): string {
  const rewards = all.filter((t) => t.groupIndex === group).map((t) => t.reward);
  const mean = rewards.reduce((a, b) => a + b, 0) / Math.max(1, rewards.length);
  return `Group ${group} · ${rewards.length} sample${rewards.length === 1 ? "" : "s"} · mean reward ${formatNumber(mean)}`;
}

/** A number box with previous/next buttons; only a step that exists is taken. */
function StepPicker({
  step,
  last,
  onChange,
}: {
  step: number;
  last: number;
  onChange: (step: number) => void;
}) {
  const [draft, setDraft] = useState(String(step));
  useEffect(() => setDraft(String(step)), [step]);
  const accept = (text: string) => {
    setDraft(text);
    if (!/^\d+$/.test(text.trim())) return;
    const next = Number(text);
    if (next <= last) onChange(next);
  };
  const invalid = draft.trim() !== String(step);
  return (
    <div>
      <label htmlFor="step" className="block text-sm font-medium">
        Step
      </label>
      <div className="mt-1 flex items-center gap-1">
        <button
          type="button"
          className="rounded border border-gray-300 bg-white px-2 py-2 text-sm hover:bg-gray-50 disabled:opacity-50"
          disabled={step <= 0}
          onClick={() => onChange(step - 1)}
        >
          <span aria-hidden="true">◀ </span>Previous
        </button>
        <input
          id="step"
          type="number"
          inputMode="numeric"
          min={0}
          max={last}
          value={draft}
          aria-invalid={invalid || undefined}
          aria-describedby="step-range"
          onChange={(e) => accept(e.target.value)}
          onBlur={() => setDraft(String(step))}
          className="w-24 rounded border border-gray-300 bg-white px-3 py-2 text-sm"
        />
        <button
          type="button"
          className="rounded border border-gray-300 bg-white px-2 py-2 text-sm hover:bg-gray-50 disabled:opacity-50"
          disabled={step >= last}
          onClick={() => onChange(step + 1)}
        >
          Next<span aria-hidden="true"> ▶</span>
        </button>
      </div>
      <p id="step-range" className="mt-1 text-xs text-gray-500">
        0 to {last}
      </p>
    </div>
  );
}

const STYLE: Record<TokenKind, string> = {
  action: "bg-blue-100 text-blue-950 shadow-[inset_0_-2px_0_var(--color-action)]",
  observation: "bg-gray-100 text-gray-600",
  "tool-call": "bg-amber-100 text-amber-950 shadow-[inset_0_-2px_0_#d97706]",
  "tool-output": "bg-emerald-50 text-emerald-900 outline outline-1 -outline-offset-1 outline-emerald-300",
};

const usesTools = (t: Trajectory) =>
  tokenKinds(t.mask, t.pieces).some((k) => k === "tool-call" || k === "tool-output");

function LegendEntry({ kind, children }: { kind: TokenKind; children: string }) {
  return (
    <li className="flex items-center gap-2">
      <span className={`rounded-sm px-1.5 font-mono text-xs ${STYLE[kind]}`}>abc</span>
      {children}
    </li>
  );
}

function TokenLegend({ tools }: { tools: boolean }) {
  return (
    <ul aria-label="Legend" className="mt-4 flex flex-wrap gap-x-6 gap-y-2 text-sm text-gray-700">
      <LegendEntry kind="action">Model action tokens (mask 1: sampled by the policy, trained on)</LegendEntry>
      <LegendEntry kind="observation">
        Observation tokens (prompt and environment replies, not trained on)
      </LegendEntry>
      {tools && (
        <>
          <LegendEntry kind="tool-call">Tool calls (model action tokens, trained on)</LegendEntry>
          <LegendEntry kind="tool-output">Tool output (observation tokens, not trained on)</LegendEntry>
        </>
      )}
      <li className="flex items-center gap-2">
        <span className="font-mono text-xs text-gray-400">· ↵ → ∅</span>
        space, newline, tab, empty token
      </li>
    </ul>
  );
}

function TrajectoryCard({ trajectory: t }: { trajectory: Trajectory }) {
  const headingId = useId();
  const advantages = turnAdvantages(t.mask, t.advantages);
  const actionCount = t.mask.filter((m) => m === 1).length;
  return (
    <article aria-labelledby={headingId} className="rounded-lg border border-gray-200 bg-white p-4 shadow-sm">
      <div className="mb-3 flex flex-wrap items-center gap-x-3 gap-y-1">
        <h2 id={headingId} className="font-medium">
          Sample {t.sampleIndex}
          {t.player > 0 && `, player ${t.player}`}
        </h2>
        {t.status === "FAILED" && <StatusBadge status="FAILED" />}
      </div>
      <dl className="mb-3 grid grid-cols-2 gap-x-6 gap-y-2 text-sm sm:grid-cols-5">
        <Stat label="Reward" valueClassName="tabular-nums">
          {formatNumber(t.reward)}
        </Stat>
        <Stat
          label={advantages.length > 1 ? "Advantage per turn" : "Advantage"}
          valueClassName="tabular-nums"
        >
          {advantages.length ? advantages.map(formatNumber).join(" / ") : "— (no action tokens)"}
        </Stat>
        <Stat label="Policy version" valueClassName="tabular-nums">
          {String(t.snapshotVersion)}
        </Stat>
        <Stat label="Staleness" valueClassName="tabular-nums">
          {String(t.staleness)}
        </Stat>
        <Stat
          label="Tokens"
          valueClassName="tabular-nums"
        >{`${t.tokens.length} (${actionCount} action)`}</Stat>
      </dl>
      {t.failureReason && (
        <p role="note" className="mb-3 rounded border border-red-200 bg-red-50 p-2 text-sm text-red-800">
          Failed: {t.failureReason}
        </p>
      )}
      <TokenSequence trajectory={t} />
    </article>
  );
}

function TokenSequence({ trajectory: t }: { trajectory: Trajectory }) {
  const kinds = tokenKinds(t.mask, t.pieces);
  return (
    <div className="max-h-[32rem] overflow-y-auto rounded border border-gray-200 bg-white p-2 font-mono text-xs leading-6 whitespace-pre-wrap break-words">
      {t.tokens.map((token, i) => {
        const kind = kinds[i] ?? "observation";
        const piece = t.pieces?.[i] ?? `⟨${token}⟩`;
        const label = kind === "tool-call" ? "tool call · " : kind === "tool-output" ? "tool output · " : "";
        const detail =
          label +
          (t.mask[i] === 1
            ? `token ${token} · logprob ${formatNumber(t.logprobs[i] ?? 0)} · advantage ${formatNumber(t.advantages[i] ?? 0)}`
            : `token ${token}`);
        return (
          <span
            // Tokens never move within a stored trajectory, so the position is a stable key.
            // biome-ignore lint/suspicious/noArrayIndexKey: see above
            key={i}
            data-kind={kind}
            title={detail}
            className={`rounded-sm border-r border-white ${STYLE[kind]}`}
          >
            {visibleSegments(piece).map((segment, j) =>
              segment.mark ? (
                // biome-ignore lint/suspicious/noArrayIndexKey: segments of a fixed string
                <span key={j} className="opacity-40">
                  {segment.text}
                </span>
              ) : (
                segment.text
              ),
            )}
          </span>
        );
      })}
    </div>
  );
}
