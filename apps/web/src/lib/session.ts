"use client";
// The signed-in user and the team they act for (GET /api/auth/session).
import { useQuery, useQueryClient } from "@tanstack/react-query";

export interface Session {
  user: { id: string; email: string; name: string };
  team: { id: string; slug: string; name: string };
  teams: { id: string; slug: string; name: string; role: string }[];
}

export const SESSION_KEY = ["session"] as const;

export async function authRequest<T>(
  path: string,
  body?: unknown,
): Promise<{ ok: boolean; status: number; data: T }> {
  const response = await fetch(`/api/auth/${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: "no-store",
  });
  return { ok: response.ok, status: response.status, data: (await response.json()) as T };
}

export function useSession() {
  return useQuery({
    queryKey: SESSION_KEY,
    queryFn: async () => {
      const result = await authRequest<Session & { signedIn: boolean }>("session");
      return result.ok && result.data.signedIn ? result.data : null;
    },
    staleTime: 30_000,
  });
}

/** After sign-in, sign-out or a team switch: everything cached belonged to the old session. */
export function useResetAfterSessionChange() {
  const queryClient = useQueryClient();
  return () => queryClient.resetQueries();
}
