"use client";

import { useParams } from "next/navigation";
import { JobDetail } from "../../../../components/jobs/job-detail.tsx";

export default function JobPage() {
  const { id } = useParams<{ id: string }>();
  return <JobDetail jobId={id} />;
}
