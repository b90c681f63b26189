"use client";
// /jobs/compare?ids=a,b,…: several jobs' curves on the same axes.
import { Suspense } from "react";
import { RunsComparison } from "../../../../components/jobs/compare-page.tsx";
import { Loading } from "../../../../components/ui.tsx";

export default function ComparePage() {
  // The page reads ?ids= (useSearchParams), which needs a Suspense boundary.
  return (
    <Suspense fallback={<Loading what="the comparison" />}>
      <RunsComparison />
    </Suspense>
  );
}
