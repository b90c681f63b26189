"use client";
// /jobs/new: the form that starts a job.
import { JobForm } from "../../../../components/jobs/job-form.tsx";
import { Page } from "../../../../components/shared/page.tsx";

export default function NewJobPage() {
  return (
    <Page title="New job">
      <JobForm />
    </Page>
  );
}
