// The jobs list's view (sort, direction, page) as the URL holds it, and how
// its cells read: pure, so tested without a browser.
import { JOB_SORT_KEYS, type JobListRequest, type JobSortKey } from "@opentinker/protocol";

export type ListView = Pick<JobListRequest, "sort" | "direction" | "page">;

export const DEFAULT_VIEW: ListView = { sort: "createdAt", direction: "desc", page: 1 };

const isSortKey = (text: string | null): text is JobSortKey =>
  text !== null && (JOB_SORT_KEYS as readonly string[]).includes(text);

/** The view `?sort=&dir=&page=` asks for; a value the list does not know reads as the default. */
export function viewFromSearch(search: { get(name: string): string | null }): ListView {
  const sort = search.get("sort");
  const direction = search.get("dir");
  const page = search.get("page");
  return {
    sort: isSortKey(sort) ? sort : DEFAULT_VIEW.sort,
    direction: direction === "asc" || direction === "desc" ? direction : DEFAULT_VIEW.direction,
    page: page !== null && /^[1-9][0-9]{0,5}$/.test(page) ? Number(page) : DEFAULT_VIEW.page,
  };
}

/** The URL query of a view, without the parts that are the default ("" for the default view). */
export function searchOfView(view: ListView): string {
  const params = new URLSearchParams();
  if (view.sort !== DEFAULT_VIEW.sort || view.direction !== DEFAULT_VIEW.direction) {
    params.set("sort", view.sort);
    params.set("dir", view.direction);
  }
  if (view.page !== DEFAULT_VIEW.page) params.set("page", String(view.page));
  const query = params.toString();
  return query ? `?${query}` : "";
}

/**
 * The view after a click on a column's heading: the sorted column flips its
 * order; another starts A to Z (names, statuses in the order a job goes
 * through them) or newest and longest first. Either way back to page 1.
 */
export function sortedBy(view: ListView, sort: JobSortKey): ListView {
  if (view.sort === sort) return { sort, direction: view.direction === "asc" ? "desc" : "asc", page: 1 };
  return { sort, direction: sort === "name" || sort === "status" ? "asc" : "desc", page: 1 };
}

/** How many pages `total` jobs fill (one, empty, when there are none). */
export const pageCount = (total: number, pageSize: number): number =>
  Math.max(1, Math.ceil(total / pageSize));

/** How long a job has run: to its end, or to `now` while it runs; null before it starts. */
export function runTime(
  job: { startedAt: string | null; finishedAt: string | null },
  now: number,
): number | null {
  if (!job.startedAt) return null;
  const end = job.finishedAt ? Date.parse(job.finishedAt) : now;
  return Math.max(0, end - Date.parse(job.startedAt));
}

/** A headline metric's name as the list labels it: "val/reward/mean" → "validation reward". */
export function metricLabel(name: string): string {
  const base = name.replace(/\/mean$/, "");
  return base.startsWith("val/") ? `validation ${base.slice("val/".length)}` : base;
}
