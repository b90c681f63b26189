// Any path no page answers: the dashboard's frame with its sections, so a
// mistyped or stale link is one click from where the visitor meant to go.
// (Outside the signed-in layout: it renders for signed-out visitors too, whose
// clicks then go through sign-in.)
import type { Metadata } from "next";
import { AppFrame } from "../components/shared/nav.tsx";
import { Page } from "../components/shared/page.tsx";
import { ButtonLink, Card } from "../components/ui.tsx";

export const metadata: Metadata = { title: "Page not found · OpenTinker" };

export default function NotFound() {
  return (
    <AppFrame pathname={null}>
      <Page title="Page not found">
        <Card>
          <p className="text-sm text-gray-700">
            No page lives at this address. It may have been mistyped, or what it showed was deleted.
          </p>
          <p className="mt-1 text-sm text-gray-700">Pick a section above, or start from the overview.</p>
          <p className="mt-4">
            <ButtonLink href="/">Back to the overview</ButtonLink>
          </p>
        </Card>
      </Page>
    </AppFrame>
  );
}
