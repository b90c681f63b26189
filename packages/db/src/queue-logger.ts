import { Logger } from "graphile-worker";

/**
 * The queue library logs every job at info level; we keep its warnings and errors
 * (a lost connection, a job that threw) and drop the chatter.
 */
export const quietQueueLogger = new Logger(() => (level, message) => {
  if (level === "error" || level === "warning") console.error(`queue: ${message}`);
});
