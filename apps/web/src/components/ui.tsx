"use client";
// Shared building blocks, so every page has the same cards, buttons, tables and
// empty, loading and error states. Form fields are in shared/fields.tsx, the
// page frame in shared/page.tsx.
import Link from "next/link";
import type { ReactNode } from "react";

export function Card({
  title,
  children,
  className = "",
}: {
  title?: string;
  children: ReactNode;
  className?: string;
}) {
  return (
    <section className={`rounded-lg border border-gray-200 bg-white p-4 shadow-sm ${className}`}>
      {title && <h2 className="mb-3 text-lg font-medium">{title}</h2>}
      {children}
    </section>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p role="status" className="text-sm text-gray-500">
      Loading {what}…
    </p>
  );
}

export function ErrorState({ error }: { error: unknown }) {
  const message = error instanceof Error ? error.message : String(error);
  return (
    <p role="alert" className="rounded border border-red-200 bg-red-50 p-3 text-sm text-red-800">
      {message}
    </p>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return (
    <p className="rounded border border-dashed border-gray-300 p-6 text-center text-sm text-gray-500">
      {children}
    </p>
  );
}

/** Renders a query's loading and error states, or its data. */
export function QueryView<T>({
  query,
  what,
  children,
}: {
  query: { isPending: boolean; error: unknown; data: T | undefined };
  what: string;
  children: (data: T) => ReactNode;
}) {
  if (query.isPending) return <Loading what={what} />;
  if (query.error) return <ErrorState error={query.error} />;
  return <>{children(query.data as T)}</>;
}

const BUTTON = {
  primary: "bg-blue-600 text-white hover:bg-blue-700",
  secondary: "border border-gray-300 bg-white hover:bg-gray-50",
  danger: "bg-red-600 text-white hover:bg-red-700",
} as const;

export function Button({
  children,
  variant = "primary",
  ...props
}: React.ButtonHTMLAttributes<HTMLButtonElement> & { variant?: keyof typeof BUTTON }) {
  return (
    <button
      type="button"
      {...props}
      className={`rounded px-3 py-2 text-sm font-medium disabled:opacity-60 ${BUTTON[variant]} ${props.className ?? ""}`}
    >
      {children}
    </button>
  );
}

/** A link that looks like a button. */
export function ButtonLink({
  href,
  variant = "primary",
  children,
}: {
  href: string;
  variant?: "primary" | "secondary";
  children: ReactNode;
}) {
  return (
    <Link href={href} className={`rounded px-3 py-2 text-sm font-medium ${BUTTON[variant]}`}>
      {children}
    </Link>
  );
}

const STATUS: Record<string, string> = {
  QUEUED: "bg-gray-100 text-gray-700",
  RUNNING: "bg-blue-100 text-blue-800",
  SUCCEEDED: "bg-green-100 text-green-800",
  FAILED: "bg-red-100 text-red-800",
  CANCELLED: "bg-yellow-100 text-yellow-800",
  ONLINE: "bg-green-100 text-green-800",
  DRAINING: "bg-yellow-100 text-yellow-800",
};

export function StatusBadge({ status }: { status: string }) {
  return (
    <span className={`rounded px-2 py-0.5 text-xs font-medium ${STATUS[status] ?? "bg-gray-100"}`}>
      {status}
    </span>
  );
}

interface Heading {
  key: string;
  content: ReactNode;
  sort?: Column<unknown>["sort"];
}

function Table({ head, children }: { head: readonly Heading[]; children: ReactNode }) {
  return (
    <div className="overflow-x-auto">
      <table className="w-full text-left text-sm">
        <thead className="border-b border-gray-200 text-xs uppercase text-gray-500">
          <tr>
            {head.map((h) => (
              <th key={h.key} aria-sort={h.sort} className="px-2 py-2 font-medium">
                {h.content}
              </th>
            ))}
          </tr>
        </thead>
        <tbody className="divide-y divide-gray-100">{children}</tbody>
      </table>
    </div>
  );
}

/** A query's list: its loading and error states, a note when it is empty, else the list. */
export function QueryList<T>({
  query,
  what,
  empty,
  children,
}: {
  query: { isPending: boolean; error: unknown; data: readonly T[] | undefined };
  what: string;
  /** What an empty list says. */
  empty: ReactNode;
  children: (list: readonly T[]) => ReactNode;
}) {
  return (
    <QueryView query={query} what={what}>
      {(list) => (list.length === 0 ? <Empty>{empty}</Empty> : children(list))}
    </QueryView>
  );
}

/** A table column: its heading and each row's cell. */
export interface Column<T> {
  head: string;
  /** Shown in the heading instead of `head` (a sort button). */
  headCell?: ReactNode;
  /** A sortable column's state, for assistive technology. */
  sort?: "ascending" | "descending" | "none";
  cell: (item: T) => ReactNode;
  /** Classes added to the cell's padding (tabular-nums, whitespace-nowrap). */
  className?: string;
}

/** A query's list as a table, a row per item and a cell per column. */
export function QueryTable<T>({
  columns,
  rowKey,
  ...list
}: {
  query: { isPending: boolean; error: unknown; data: readonly T[] | undefined };
  what: string;
  empty: ReactNode;
  columns: readonly Column<T>[];
  rowKey: (item: T) => string;
}) {
  return (
    <QueryList {...list}>
      {(items) => (
        <Table head={columns.map((c) => ({ key: c.head, content: c.headCell ?? c.head, sort: c.sort }))}>
          {items.map((item) => (
            <tr key={rowKey(item)}>
              {columns.map((c) => (
                <td key={c.head} className={c.className ? `px-2 py-2 ${c.className}` : "px-2 py-2"}>
                  {c.cell(item)}
                </td>
              ))}
            </tr>
          ))}
        </Table>
      )}
    </QueryList>
  );
}

/** One term of a summary: a small uppercase label over its value. */
export function Stat({
  label,
  valueClassName = "mt-0.5",
  children,
}: {
  label: string;
  valueClassName?: string;
  children: ReactNode;
}) {
  return (
    <div>
      <dt className="text-xs font-medium uppercase text-gray-500">{label}</dt>
      <dd className={valueClassName}>{children}</dd>
    </div>
  );
}

export const timeAgo = (iso: string) => new Date(iso).toLocaleString();
