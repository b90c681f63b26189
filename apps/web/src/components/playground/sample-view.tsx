"use client";
// What a playground call produced: the prompt as the model saw it, then each
// sample as text and token by token, every token coloured by its probability
// (its id and logprob on hover), with the reason it stopped.
import type { PlaygroundSample, PlaygroundSequence } from "@opentinker/protocol";
import { visibleSegments } from "../jobs/tokens.ts";
import { Card } from "../ui.tsx";
import { type ProbabilityBand, probabilityBand, tokenTitle } from "./playground-model.ts";

const BAND: Record<ProbabilityBand, { className: string; label: string }> = {
  likely: { className: "bg-green-100 text-green-900", label: "p ≥ 0.5" },
  plausible: { className: "bg-lime-100 text-lime-900", label: "0.2 ≤ p < 0.5" },
  unlikely: { className: "bg-amber-100 text-amber-900", label: "0.05 ≤ p < 0.2" },
  rare: { className: "bg-red-100 text-red-900", label: "p < 0.05" },
};

const STOP: Record<PlaygroundSequence["stopReason"], string> = {
  stop: "stopped (end of sequence or a stop token)",
  length: "reached max tokens",
};

/** A token's text with its whitespace made visible (as on the trajectory page). */
function Piece({ piece }: { piece: string }) {
  return visibleSegments(piece).map((s, i) => (
    // biome-ignore lint/suspicious/noArrayIndexKey: a token's segments never reorder
    <span key={i} className={s.mark ? "opacity-40" : undefined}>
      {s.text}
    </span>
  ));
}

export function SampleView({ sample }: { sample: PlaygroundSample }) {
  const { outcome } = sample;
  if (outcome.status !== "SUCCEEDED") return null;
  const version = outcome.policyVersion;
  return (
    <div className="space-y-4">
      <Card title="Prompt">
        <p className="text-xs text-gray-500">
          {sample.prompt.length} tokens as the model saw them
          {version !== null ? `, sampled from version ${version}` : ", sampled from the base model"}.
        </p>
        <p data-testid="prompt-tokens" className="mt-2 font-mono text-sm whitespace-pre-wrap wrap-anywhere">
          {sample.prompt.map((t, i) => (
            <span
              // biome-ignore lint/suspicious/noArrayIndexKey: positions in a fixed sequence
              key={i}
              title={`token ${t.id}`}
              className="rounded-sm px-px text-gray-600 hover:bg-gray-100"
            >
              <Piece piece={t.piece} />
            </span>
          ))}
        </p>
      </Card>
      <Legend />
      {outcome.sequences.map((s, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: samples are numbered by their place
        <SequenceCard key={i} index={i} sequence={s} />
      ))}
    </div>
  );
}

function SequenceCard({ index, sequence }: { index: number; sequence: PlaygroundSequence }) {
  return (
    <Card title={`Sample ${index + 1}`}>
      <div data-testid="sample" className="space-y-3">
        <pre className="rounded bg-gray-50 p-3 text-sm whitespace-pre-wrap wrap-anywhere">
          {sequence.text || <span className="text-gray-400">(no text)</span>}
        </pre>
        <p className="font-mono text-sm leading-7 whitespace-pre-wrap wrap-anywhere">
          {sequence.tokens.map((t, i) => (
            <span
              // biome-ignore lint/suspicious/noArrayIndexKey: positions in a fixed sequence
              key={i}
              data-token-id={t.id}
              data-logprob={t.logprob}
              title={tokenTitle(t)}
              className={`mr-px rounded-sm px-0.5 ${BAND[probabilityBand(t.logprob)].className}`}
            >
              <Piece piece={t.piece} />
            </span>
          ))}
        </p>
        <p className="text-xs text-gray-600">
          {sequence.tokens.length} tokens · stop reason{" "}
          <code data-testid="stop-reason">{sequence.stopReason}</code> ({STOP[sequence.stopReason]})
        </p>
      </div>
    </Card>
  );
}

function Legend() {
  return (
    <p className="flex flex-wrap items-center gap-2 text-xs text-gray-600">
      Tokens by probability (hover one for its id and logprob):
      {Object.values(BAND).map((b) => (
        <span key={b.label} className={`rounded-sm px-1 ${b.className}`}>
          {b.label}
        </span>
      ))}
    </p>
  );
}
