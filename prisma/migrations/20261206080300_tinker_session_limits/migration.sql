-- A team's live Tinker sessions count against a quota (issue 44): a session is
-- live while the SDK heartbeats it; the quota is counted under the team's
-- advisory lock (packages/db/src/tinker-sessions.ts), by heartbeat time.
ALTER TABLE "Team" ADD COLUMN "maxTinkerSessions" INTEGER NOT NULL DEFAULT 100;

CREATE INDEX "TinkerSession_teamId_heartbeatAt_idx" ON "TinkerSession"("teamId", "heartbeatAt");
