"use client";

import { ServiceStatus } from "../../components/service-status.tsx";
import { PageHeader } from "../../components/ui.tsx";

export default function OverviewPage() {
  return (
    <div>
      <PageHeader title="Overview" />
      <ServiceStatus />
    </div>
  );
}
