// The examples' settings from the environment, zod-validated.
import { z } from "zod";

const ZExamplesEnv = z.object({
  /** The OpenTinker server the remote example talks to. */
  OPENTINKER_URL: z.string().min(1).default("http://127.0.0.1:3000"),
  /** A key of your team (npm start prints the demo team's key once). */
  OPENTINKER_API_KEY: z
    .string()
    .optional()
    .transform((value) => value || undefined),
});

export function readExamplesEnv(source: NodeJS.ProcessEnv = process.env) {
  return ZExamplesEnv.parse(source);
}
