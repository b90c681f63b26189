// The dashboard's session: sign in with email and password, act for one of the
// user's teams through a sealed cookie, and nothing of other teams.
import { addMember, createUser, setUserPassword } from "@opentinker/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE, ControlPlane, type Team } from "./harness.ts";

let cp: ControlPlane;
let a: Team;
let b: Team;
let other: Team;
beforeAll(async () => {
  cp = await ControlPlane.start();
  a = await cp.team("sa");
  b = await cp.team("sb");
  other = await cp.team("so");
  const user = await createUser(cp.t.db, { email: "ada@example.com", name: "Ada" });
  await setUserPassword(cp.t.db, user.id, "correct horse battery");
  await addMember(cp.t.db, a.id, user.id, "OWNER");
  await addMember(cp.t.db, b.id, user.id);
  await cp.api(other.key, "POST", "/v1/adapters", { name: "secret", baseModel: BASE, rank: 2 });
  await cp.api(a.key, "POST", "/v1/adapters", { name: "mine", baseModel: BASE, rank: 2 });
}, 60_000);
afterAll(() => cp?.stop());

async function post(path: string, body: unknown, cookie?: string) {
  return fetch(`${cp.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(cookie ? { cookie } : {}) },
    body: JSON.stringify(body),
  });
}

const get = (path: string, cookie: string) => fetch(`${cp.url}${path}`, { headers: { cookie } });

describe("dashboard session", () => {
  it("refuses a wrong password with one message for both unknown users and wrong passwords", async () => {
    const wrong = await post("/api/auth/sign-in", { email: "ada@example.com", password: "nope" });
    const unknown = await post("/api/auth/sign-in", { email: "bob@example.com", password: "nope" });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(await wrong.json()).toEqual(await unknown.json());
  });

  it("signs in, acts for the chosen team only, switches teams it belongs to, and signs out", async () => {
    const signed = await post("/api/auth/sign-in", {
      email: "ada@example.com",
      password: "correct horse battery",
    });
    expect(signed.status).toBe(200);
    const setCookie = signed.headers.get("set-cookie") ?? "";
    expect(setCookie).toMatch(/ot_session=.*HttpOnly/i);
    expect(setCookie).toMatch(/SameSite=Strict/i);
    const cookie = setCookie.split(";")[0] as string;
    const session = (await signed.json()) as { team: { slug: string }; teams: { slug: string }[] };
    expect(session.team.slug).toBe("sa");
    expect(session.teams.map((t) => t.slug).sort()).toEqual(["sa", "sb"]);

    const adapters = (await (await get("/api/v1/adapters", cookie)).json()) as { name: string }[];
    expect(adapters.map((x) => x.name)).toEqual(["mine"]);

    const toOther = await post("/api/auth/team", { teamId: other.id }, cookie);
    expect(toOther.status).toBe(404);
    // The session itself acts for the new team: the same cookie now sees team B's objects.
    const toB = await post("/api/auth/team", { teamId: b.id }, cookie);
    expect(toB.status).toBe(200);
    expect((await (await get("/api/v1/adapters", cookie)).json()) as unknown[]).toEqual([]);

    const out = await post("/api/auth/sign-out", {}, cookie);
    const cleared = (out.headers.get("set-cookie") ?? "").split(";")[0] as string;
    expect((await get("/api/v1/adapters", cleared)).status).toBe(401);
    expect(await (await get("/api/auth/session", cleared)).json()).toEqual({ signedIn: false });
  });

  it("ends the session on the server at sign-out: a copy of the old cookie is refused everywhere", async () => {
    const signed = await post("/api/auth/sign-in", {
      email: "ada@example.com",
      password: "correct horse battery",
    });
    const cookie = (signed.headers.get("set-cookie") ?? "").split(";")[0] as string;
    expect((await get("/api/v1/adapters", cookie)).status).toBe(200);
    const sessions = () =>
      cp.t.db.session.count({ where: { membership: { user: { email: "ada@example.com" } } } });
    const before = await sessions();
    expect((await post("/api/auth/sign-out", {}, cookie)).status).toBe(200);
    expect(await sessions()).toBe(before - 1);
    expect((await get("/api/v1/adapters", cookie)).status).toBe(401);
    expect(
      (await fetch(`${cp.url}/api/trpc/adapters.list?input=%7B%7D`, { headers: { cookie } })).status,
    ).toBe(401);
    expect(await (await get("/api/auth/session", cookie)).json()).toEqual({ signedIn: false });
    expect((await post("/api/auth/team", { teamId: b.id }, cookie)).status).toBe(401);
  });

  it("refuses a valid cookie with anything appended or cut, and auth bodies that are not strict JSON", async () => {
    const signed = await post("/api/auth/sign-in", {
      email: "ada@example.com",
      password: "correct horse battery",
    });
    const cookie = (signed.headers.get("set-cookie") ?? "").split(";")[0] as string;
    expect((await get("/api/v1/adapters", cookie)).status).toBe(200);
    for (const bad of [
      `${cookie}junk`,
      `${cookie}0`,
      `${cookie}~2`,
      cookie.slice(0, -1),
      `${cookie}; ${cookie}`,
    ]) {
      expect((await get("/api/v1/adapters", bad)).status, bad.slice(-12)).toBe(401);
      expect(await (await get("/api/auth/session", bad)).json()).toEqual({ signedIn: false });
    }
    const plain = await fetch(`${cp.url}/api/auth/sign-in`, {
      method: "POST",
      headers: { "content-type": "text/plain" },
      body: JSON.stringify({ email: "ada@example.com", password: "correct horse battery" }),
    });
    expect(plain.status).toBe(415);
    const extra = await post("/api/auth/sign-in", {
      email: "ada@example.com",
      password: "correct horse battery",
      admin: true,
    });
    expect(extra.status).toBe(400);
    expect(((await extra.json()) as { message: string }).message).toMatch(/admin|Unrecognized/);
    const typed = await post("/api/auth/sign-in", { email: ["ada@example.com"], password: "x" });
    expect(typed.status).toBe(400);
    expect(((await typed.json()) as { message: string }).message).toMatch(/^email: /);
  });

  it("ends access when the membership is removed, and ignores a tampered cookie", async () => {
    const signed = await post("/api/auth/sign-in", {
      email: "ada@example.com",
      password: "correct horse battery",
      teamSlug: "sb",
    });
    const cookie = (signed.headers.get("set-cookie") ?? "").split(";")[0] as string;
    expect((await get("/api/v1/adapters", cookie)).status).toBe(200);
    const tampered = `${cookie.slice(0, -4)}AAAA`;
    expect((await get("/api/v1/adapters", tampered)).status).toBe(401);
    await cp.t.db.membership.deleteMany({ where: { teamId: b.id } });
    expect((await get("/api/v1/adapters", cookie)).status).toBe(401);
  });
});
