// Dashboard passwords: scrypt with a random salt, compared in constant time.
import { randomBytes, scrypt, timingSafeEqual } from "node:crypto";
import { promisify } from "node:util";
import type { DbTx } from "./client.ts";

const derive = promisify(scrypt) as (
  password: string,
  salt: Buffer,
  keylen: number,
  options: object,
) => Promise<Buffer>;
const PARAMS = { N: 16384, r: 8, p: 1 };
const KEY_LENGTH = 32;

export async function hashPassword(password: string): Promise<string> {
  if (password.length < 8) throw new RangeError("password: must be at least 8 characters");
  const salt = randomBytes(16);
  const key = await derive(password, salt, KEY_LENGTH, PARAMS);
  return `scrypt$${PARAMS.N}$${PARAMS.r}$${PARAMS.p}$${salt.toString("base64")}$${key.toString("base64")}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, key] = stored.split("$");
  if (scheme !== "scrypt" || !salt || !key) return false;
  const expected = Buffer.from(key, "base64");
  const actual = await derive(password, Buffer.from(salt, "base64"), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
  });
  return timingSafeEqual(actual, expected);
}

export async function setUserPassword(db: DbTx, userId: string, password: string): Promise<void> {
  await db.user.update({ where: { id: userId }, data: { passwordHash: await hashPassword(password) } });
}

/** The user with this email and password, with their teams; null otherwise (same answer either way). */
export async function signIn(db: DbTx, email: string, password: string) {
  const user = await db.user.findUnique({
    where: { email: email.toLowerCase() },
    select: {
      id: true,
      email: true,
      name: true,
      passwordHash: true,
      memberships: { select: { role: true, team: { select: { id: true, slug: true, name: true } } } },
    },
  });
  if (!user?.passwordHash || !(await verifyPassword(password, user.passwordHash))) return null;
  const { passwordHash: _hash, ...rest } = user;
  return rest;
}
