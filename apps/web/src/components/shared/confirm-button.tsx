"use client";
// A destructive action behind a second, explicit click: "Delete" becomes
// "<question> Confirm / Cancel" in place, with focus moved along so keyboard
// users never lose their spot.
import { useEffect, useRef, useState } from "react";
import { Button } from "../ui.tsx";
import { errorMessage } from "./api.ts";

export function ConfirmButton({
  label,
  question,
  onConfirm,
  pending,
  error,
}: {
  /** The button's text: "Delete", "Revoke". */
  label: string;
  /** What the second step asks: "Delete adapter demo?". */
  question: string;
  onConfirm: () => void;
  pending: boolean;
  error?: unknown;
}) {
  const [confirming, setConfirming] = useState(false);
  const touched = useRef(false);
  const box = useRef<HTMLDivElement>(null);
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
          <span className="text-sm">{question}</span>
          <Button variant="danger" onClick={onConfirm} disabled={pending}>
            {pending ? "Working…" : "Confirm"}
          </Button>
          <Button data-cancel variant="secondary" onClick={() => toggle(false)} disabled={pending}>
            Cancel
          </Button>
        </>
      ) : (
        <Button data-open variant="secondary" onClick={() => toggle(true)}>
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
