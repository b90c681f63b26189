"use client";
// Adapters: the team's list and the form that creates one.
import { AdapterList } from "../../../components/adapters/adapter-list.tsx";
import { CreateAdapterForm } from "../../../components/adapters/create-adapter-form.tsx";
import { ListWithForm, Page } from "../../../components/shared/page.tsx";

export default function AdaptersPage() {
  return (
    <Page title="Adapters">
      <ListWithForm
        list={{ title: "All adapters", content: <AdapterList /> }}
        form={{ title: "New adapter", content: <CreateAdapterForm /> }}
      />
    </Page>
  );
}
