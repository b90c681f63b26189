"use client";
import { sinceNow } from "./format.ts";

/** A past moment, short ("5 min ago"), with the full date on hover and for machines. */
export function When({ iso }: { iso: string }) {
  return (
    <time dateTime={iso} title={new Date(iso).toLocaleString()} className="whitespace-nowrap">
      {sinceNow(iso)}
    </time>
  );
}
