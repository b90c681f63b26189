import { describe, expect, it } from "vitest";
import { duration } from "../shared/format.ts";
import {
  DEFAULT_VIEW,
  metricLabel,
  pageCount,
  runTime,
  searchOfView,
  sortedBy,
  viewFromSearch,
} from "./job-list-model.ts";

const search = (query: string) => new URLSearchParams(query);

describe("the jobs list's view in the URL", () => {
  it("reads sort, direction and page back from the query it writes", () => {
    const view = { sort: "name", direction: "asc", page: 3 } as const;
    expect(searchOfView(view)).toBe("?sort=name&dir=asc&page=3");
    expect(viewFromSearch(search(searchOfView(view).slice(1)))).toEqual(view);
    expect(searchOfView(DEFAULT_VIEW)).toBe("");
  });

  it("reads an unknown sort key, direction or a malformed page as the default", () => {
    expect(viewFromSearch(search("sort=id&dir=up&page=0"))).toEqual(DEFAULT_VIEW);
    expect(viewFromSearch(search("page=2.5"))).toEqual(DEFAULT_VIEW);
    expect(viewFromSearch(search("sort=duration"))).toEqual({ ...DEFAULT_VIEW, sort: "duration" });
  });

  it("a click on the sorted column flips its order; another column starts in its natural order, on page 1", () => {
    const byName = sortedBy({ ...DEFAULT_VIEW, page: 4 }, "name");
    expect(byName).toEqual({ sort: "name", direction: "asc", page: 1 });
    expect(sortedBy(byName, "name")).toEqual({ sort: "name", direction: "desc", page: 1 });
    expect(sortedBy(byName, "duration")).toEqual({ sort: "duration", direction: "desc", page: 1 });
    expect(sortedBy(DEFAULT_VIEW, "createdAt")).toEqual({ sort: "createdAt", direction: "asc", page: 1 });
  });

  it("counts pages, one when there are no jobs", () => {
    expect([pageCount(0, 20), pageCount(20, 20), pageCount(21, 20)]).toEqual([1, 1, 2]);
  });
});

describe("the jobs list's cells", () => {
  const start = "2026-01-01T00:00:00.000Z";

  it("a duration runs to the job's end, or to now while it runs; none before it starts", () => {
    const now = Date.parse("2026-01-01T00:10:00.000Z");
    expect(runTime({ startedAt: start, finishedAt: "2026-01-01T00:00:42.000Z" }, now)).toBe(42_000);
    expect(runTime({ startedAt: start, finishedAt: null }, now)).toBe(600_000);
    expect(runTime({ startedAt: null, finishedAt: null }, now)).toBeNull();
  });

  it("writes durations to the second under an hour", () => {
    expect([42_000, 200_000, 7_500_000, 3 * 86_400_000 + 4 * 3_600_000].map(duration)).toEqual([
      "42 s",
      "3 min 20 s",
      "2 h 5 min",
      "3 d 4 h",
    ]);
  });

  it("labels the headline metric by what it measures", () => {
    expect(metricLabel("val/reward/mean")).toBe("validation reward");
    expect(metricLabel("reward/mean")).toBe("reward");
    expect(metricLabel("loss/mean")).toBe("loss");
    expect(metricLabel("val/loss/mean")).toBe("validation loss");
  });
});
