"use client";
// Overview: what runs now (jobs, workers), what was published lately, and
// whether the service itself is healthy.
import { ActiveJobs } from "../../components/overview/active-jobs.tsx";
import { RecentSnapshots } from "../../components/overview/recent-snapshots.tsx";
import { Workers } from "../../components/overview/workers.tsx";
import { ServiceStatus } from "../../components/service-status.tsx";
import { Page } from "../../components/shared/page.tsx";
import { Card } from "../../components/ui.tsx";

export default function OverviewPage() {
  return (
    <Page title="Overview">
      <div className="grid gap-6 lg:grid-cols-3">
        <div className="min-w-0 space-y-6 lg:col-span-2">
          <ActiveJobs />
          <RecentSnapshots />
        </div>
        <div className="min-w-0 space-y-6">
          <Card title="Service">
            <ServiceStatus />
          </Card>
          <Workers />
        </div>
      </div>
    </Page>
  );
}
