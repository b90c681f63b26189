"use client";
// Jobs: the team's RL, SFT and evaluation jobs, and the way to start one.
import { JobList } from "../../../components/jobs/job-list.tsx";
import { Page } from "../../../components/shared/page.tsx";
import { ButtonLink, Card } from "../../../components/ui.tsx";

export default function JobsPage() {
  return (
    <Page
      title="Jobs"
      actions={
        <>
          <ButtonLink href="/jobs/compare" variant="secondary">
            Compare runs
          </ButtonLink>
          <ButtonLink href="/jobs/new">New job</ButtonLink>
        </>
      }
    >
      <Card>
        <JobList />
      </Card>
    </Page>
  );
}
