import { describe, expect, it } from "vitest";
import { assertDatabaseReachable, describeDatabaseUrl } from "./database-url.ts";
import { findFreePort } from "./free-port.ts";

describe("DATABASE_URL checks", () => {
  it("an unreachable server gives one line naming its host, without the password", async () => {
    const port = await findFreePort();
    const url = `postgresql://user:s3cret@127.0.0.1:${port}/app`;
    const error = await assertDatabaseReachable(url, 2000).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    const message = (error as Error).message;
    expect(message).toContain(`cannot reach database at 127.0.0.1:${port}/app`);
    expect(message).not.toContain("s3cret");
    expect(message).not.toContain("\n");
  });

  it("a URL that is not postgresql:// is refused by name", async () => {
    await expect(assertDatabaseReachable("mysql://db.example:3306/x")).rejects.toThrow(
      /must start with postgresql:\/\//,
    );
    await expect(assertDatabaseReachable("not a url")).rejects.toThrow(/not a valid URL/);
  });

  it("describes URLs by host, port and database only", () => {
    expect(describeDatabaseUrl("postgresql://a:b@db.internal:6543/prod")).toBe("db.internal:6543/prod");
  });
});
