"use client";
// Environments: what the team's RL and evaluation jobs run against.
import { CreateEnvironmentForm } from "../../../components/environments/create-environment-form.tsx";
import { EnvironmentList } from "../../../components/environments/environment-list.tsx";
import { Card, PageHeader } from "../../../components/ui.tsx";

export default function EnvironmentsPage() {
  return (
    <div>
      <PageHeader title="Environments" />
      <div className="grid gap-6 lg:grid-cols-3">
        <Card title="All environments" className="min-w-0 lg:col-span-2">
          <EnvironmentList />
        </Card>
        <Card title="New environment" className="min-w-0">
          <CreateEnvironmentForm />
        </Card>
      </div>
    </div>
  );
}
