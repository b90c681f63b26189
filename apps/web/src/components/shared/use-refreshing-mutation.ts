"use client";
// A mutation that changes a list the page shows (revoke a key, delete an
// environment): once it succeeds the list is fetched again, and the mutation
// stays pending until then, so its button never shows a row that is gone.
import { type QueryKey, type UseMutationOptions, useMutation, useQueryClient } from "@tanstack/react-query";

export function useRefreshingMutation<TData, TError, TVariables, TContext>(
  /** The procedure's mutationOptions(), without an onSuccess of their own. */
  options: UseMutationOptions<TData, TError, TVariables, TContext>,
  refresh: QueryKey,
) {
  const queryClient = useQueryClient();
  return useMutation({ ...options, onSuccess: () => queryClient.invalidateQueries({ queryKey: refresh }) });
}
