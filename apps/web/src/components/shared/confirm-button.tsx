"use client";
// A destructive action behind a second, explicit click: "Delete" becomes
// "<question> Confirm / Cancel" in place, with focus moved along so keyboard
// users never lose their spot (onto the safe answer, so a second Enter keeps
// things as they are).
import { useEffect, useId, useRef, useState } from "react";
import { Button } from "../ui.tsx";
import { errorMessage } from "./api.ts";

export function ConfirmButton({
  label,
  question,
  onConfirm,
  pending,
  error,
  confirmLabel = "Confirm",
  keepLabel = "Cancel",
  variant = "secondary",
}: {
  /** The button's text: "Delete", "Revoke". */
  label: string;
  /** What the second step asks: "Delete adapter demo?". */
  question: string;
  /** The second step's buttons, where "Confirm / Cancel" would be ambiguous ("Cancel job / Keep running"). */
  confirmLabel?: string;
  keepLabel?: string;
  /** The first button's look. */
  variant?: "secondary" | "danger";
  onConfirm: () => void;
  pending: boolean;
  error?: unknown;
}) {
  const [confirming, setConfirming] = useState(false);
  const touched = useRef(false);
  const box = useRef<HTMLDivElement>(null);
  const questionId = useId();
  // After either step, focus the button that replaced the one just pressed.
  useEffect(() => {
    if (!touched.current) return;
    const next = confirming ? "button[data-cancel]" : "button[data-open]";
    box.current?.querySelector<HTMLButtonElement>(next)?.focus();
  }, [confirming]);

  const toggle = (open: boolean) => {
    touched.current = true;
    setConfirming(open);
  };

  return (
    <div ref={box} className="flex flex-wrap items-center gap-2">
      {confirming ? (
        <>
          <span id={questionId} className="text-sm">
            {question}
          </span>
          {/* The question describes both answers, so focus landing on one reads it out. */}
          <Button variant="danger" onClick={onConfirm} disabled={pending} aria-describedby={questionId}>
            {pending ? "Working…" : confirmLabel}
          </Button>
          <Button
            data-cancel
            variant="secondary"
            onClick={() => toggle(false)}
            disabled={pending}
            aria-describedby={questionId}
          >
            {keepLabel}
          </Button>
        </>
      ) : (
        <Button data-open variant={variant} onClick={() => toggle(true)}>
          {label}
        </Button>
      )}
      {error != null && (
        <span role="alert" className="text-sm text-red-700">
          {errorMessage(error)}
        </span>
      )}
    </div>
  );
}
