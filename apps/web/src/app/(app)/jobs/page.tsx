"use client";

import { JobList } from "../../../components/jobs/job-list.tsx";
import { ButtonLink, Card, PageHeader } from "../../../components/ui.tsx";

export default function JobsPage() {
  return (
    <div>
      <PageHeader title="Jobs" actions={<ButtonLink href="/jobs/new">New job</ButtonLink>} />
      <Card>
        <JobList />
      </Card>
    </div>
  );
}
