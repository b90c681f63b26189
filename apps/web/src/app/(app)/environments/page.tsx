"use client";
// Environments: what the team's RL and evaluation jobs run against.
import { CreateEnvironmentForm } from "../../../components/environments/create-environment-form.tsx";
import { EnvironmentList } from "../../../components/environments/environment-list.tsx";
import { ListWithForm, Page } from "../../../components/shared/page.tsx";

export default function EnvironmentsPage() {
  return (
    <Page title="Environments">
      <ListWithForm
        list={{ title: "All environments", content: <EnvironmentList /> }}
        form={{ title: "New environment", content: <CreateEnvironmentForm /> }}
      />
    </Page>
  );
}
