-- Hand-written: the table @socket.io/postgres-adapter keeps payloads in that do
-- not fit a NOTIFY (over 8000 bytes, or binary), in a schema of its own so that
-- it stays outside the Prisma schema (as graphile-worker's tables do).
CREATE SCHEMA IF NOT EXISTS "socket_io";

CREATE TABLE "socket_io"."attachments" (
    "id" BIGSERIAL UNIQUE,
    "created_at" TIMESTAMPTZ DEFAULT NOW(),
    "payload" BYTEA
);
