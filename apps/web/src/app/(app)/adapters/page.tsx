"use client";
// Adapters: the team's list and the form that creates one.
import { AdapterList } from "../../../components/adapters/adapter-list.tsx";
import { CreateAdapterForm } from "../../../components/adapters/create-adapter-form.tsx";
import { Card, PageHeader } from "../../../components/ui.tsx";

export default function AdaptersPage() {
  return (
    <div>
      <PageHeader title="Adapters" />
      <div className="grid gap-6 lg:grid-cols-3">
        <Card title="All adapters" className="min-w-0 lg:col-span-2">
          <AdapterList />
        </Card>
        <Card title="New adapter" className="min-w-0">
          <CreateAdapterForm />
        </Card>
      </div>
    </div>
  );
}
