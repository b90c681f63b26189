"use client";

import { useParams } from "next/navigation";
import { Suspense } from "react";
import { TrajectoryViewer } from "../../../../../components/jobs/trajectory-viewer.tsx";
import { Loading } from "../../../../../components/ui.tsx";

export default function TrajectoriesPage() {
  const { id } = useParams<{ id: string }>();
  // The viewer reads ?step= and ?group= (useSearchParams), which needs a Suspense boundary.
  return (
    <Suspense fallback={<Loading what="trajectories" />}>
      <TrajectoryViewer jobId={id} />
    </Suspense>
  );
}
