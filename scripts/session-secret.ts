import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";

/**
 * The secret that seals dashboard session cookies: made once per data
 * directory (mode 600), so sessions survive restarts without configuration.
 */
export async function sessionSecret(dataDir: string): Promise<string> {
  const file = path.join(dataDir, "session-secret");
  if (existsSync(file)) return (await readFile(file, "utf8")).trim();
  await mkdir(dataDir, { recursive: true });
  const secret = randomBytes(32).toString("base64url");
  await writeFile(file, `${secret}\n`, { mode: 0o600, flag: "wx" });
  return secret;
}
