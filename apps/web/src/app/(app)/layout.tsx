"use client";
// Every signed-in page: the navigation, the team switcher, sign-out; signed-out
// visitors go to /sign-in.
import { usePathname, useRouter } from "next/navigation";
import { type ReactNode, useEffect } from "react";
import { ChoiceOptions } from "../../components/shared/fields.tsx";
import { AppFrame } from "../../components/shared/nav.tsx";
import { ErrorState, Loading } from "../../components/ui.tsx";
import { authRequest, useResetAfterSessionChange, useSession } from "../../lib/session.ts";

export default function AppLayout({ children }: { children: ReactNode }) {
  const session = useSession();
  const router = useRouter();
  const pathname = usePathname();
  const reset = useResetAfterSessionChange();
  useEffect(() => {
    if (session.data === null) router.replace("/sign-in");
  }, [session.data, router]);
  if (session.isPending || session.data === null) return <Loading what="your session" />;
  if (session.error || !session.data) return <ErrorState error={session.error} />;
  const { team, teams, user } = session.data;

  async function switchTeam(teamId: string) {
    await authRequest("team", { teamId });
    await reset();
    router.push("/");
  }
  async function signOut() {
    await authRequest("sign-out", {});
    await reset();
    router.replace("/sign-in");
  }

  return (
    <AppFrame
      pathname={pathname}
      aside={
        <>
          {teams.length > 1 ? (
            <label className="flex items-center gap-1">
              <span className="sr-only">Team</span>
              <select
                aria-label="Team"
                value={team.id}
                onChange={(e) => void switchTeam(e.target.value)}
                className="rounded border border-gray-300 bg-white px-2 py-1"
              >
                <ChoiceOptions choices={teams.map((t) => ({ value: t.id, label: t.name }))} />
              </select>
            </label>
          ) : (
            <span className="text-gray-600">{team.name}</span>
          )}
          <span className="hidden text-gray-500 sm:inline">{user.email}</span>
          <button
            type="button"
            onClick={() => void signOut()}
            className="rounded px-2 py-1 hover:bg-gray-100"
          >
            Sign out
          </button>
        </>
      }
    >
      {children}
    </AppFrame>
  );
}
