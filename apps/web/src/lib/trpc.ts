"use client";
import type { AppRouter } from "@opentinker/api";
// The dashboard's typed API client: tRPC over /api/trpc with TanStack Query.
// Only the router's type is imported; no server code reaches the browser.
import { createTRPCContext } from "@trpc/tanstack-react-query";

export const { TRPCProvider, useTRPC, useTRPCClient } = createTRPCContext<AppRouter>();
