"use client";
// API keys: what the SDK and the REST API authenticate with.
import { ApiKeyList } from "../../../components/api-keys/api-key-list.tsx";
import { CreateApiKeyForm } from "../../../components/api-keys/create-api-key-form.tsx";
import { ListWithForm, Page } from "../../../components/shared/page.tsx";

export default function ApiKeysPage() {
  return (
    <Page title="API keys">
      <ListWithForm
        list={{ title: "All keys", content: <ApiKeyList /> }}
        form={{ title: "New key", content: <CreateApiKeyForm /> }}
      />
    </Page>
  );
}
