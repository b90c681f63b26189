"use client";
// Links to an adapter's or a job's page, as the overview's tables show them.
import Link from "next/link";

/** An adapter, by its name (or its id while the names load). */
export function AdapterLink({ id, name }: { id: string; name: string }) {
  return (
    <Link href={`/adapters/${id}`} className="text-blue-700 hover:underline">
      {name}
    </Link>
  );
}

/** A job, by its id: one long word, so it may break anywhere. */
export function JobIdLink({ id }: { id: string }) {
  return (
    <Link href={`/jobs/${id}`} className="font-mono text-xs break-all text-blue-700 hover:underline">
      {id}
    </Link>
  );
}
