"use client";

import { JobForm } from "../../../../components/jobs/job-form.tsx";
import { PageHeader } from "../../../../components/ui.tsx";

export default function NewJobPage() {
  return (
    <div>
      <PageHeader title="New job" />
      <JobForm />
    </div>
  );
}
