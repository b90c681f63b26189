"use client";
// The frame of every dashboard page: its title with the page's actions beside
// it, an optional line under it, then the content; and the layout of the pages
// that list a kind of object next to the form that creates one.
import type { ReactNode } from "react";
import { Card } from "../ui.tsx";

export function Page({
  title,
  description,
  actions,
  className,
  wrapTitle = false,
  children,
}: {
  title: string;
  /** A line under the title: what the page is, or why it is empty. */
  description?: ReactNode;
  /** Buttons and links beside the title. */
  actions?: ReactNode;
  /** Classes of the page's box (the spacing between its parts). */
  className?: string;
  /** A title with an id in it is one long word: let it break anywhere rather than overflow a phone. */
  wrapTitle?: boolean;
  children?: ReactNode;
}) {
  return (
    <div className={className}>
      <div className="mb-6 flex flex-wrap items-center justify-between gap-3">
        <h1 className={wrapTitle ? "text-2xl font-semibold wrap-anywhere" : "text-2xl font-semibold"}>
          {title}
        </h1>
        {actions && <div className="flex gap-2">{actions}</div>}
      </div>
      {description && <p className="text-sm text-gray-600">{description}</p>}
      {children}
    </div>
  );
}

/** A list on two thirds of a wide screen, the form that adds to it beside it (below, on a phone). */
export function ListWithForm({
  list,
  form,
}: {
  list: { title: string; content: ReactNode };
  form: { title: string; content: ReactNode };
}) {
  return (
    <div className="grid gap-6 lg:grid-cols-3">
      <Card title={list.title} className="min-w-0 lg:col-span-2">
        {list.content}
      </Card>
      <Card title={form.title} className="min-w-0">
        {form.content}
      </Card>
    </div>
  );
}
