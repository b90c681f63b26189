"use client";
// API keys: what the SDK and the REST API authenticate with.
import { ApiKeyList } from "../../../components/api-keys/api-key-list.tsx";
import { CreateApiKeyForm } from "../../../components/api-keys/create-api-key-form.tsx";
import { Card, PageHeader } from "../../../components/ui.tsx";

export default function ApiKeysPage() {
  return (
    <div>
      <PageHeader title="API keys" />
      <div className="grid gap-6 lg:grid-cols-3">
        <Card title="All keys" className="min-w-0 lg:col-span-2">
          <ApiKeyList />
        </Card>
        <Card title="New key" className="min-w-0">
          <CreateApiKeyForm />
        </Card>
      </div>
    </div>
  );
}
