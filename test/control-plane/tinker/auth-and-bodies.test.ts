// How the Tinker front is called: JWTs minted for a key (what the SDK sends
// once the config turns the exchange on), which end with the key; and
// zstd-compressed forward/backward bodies, whose frames are checked before
// anything is decompressed.
import { revokeApiKey } from "@opentinker/db";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { derivedKey } from "../../../apps/web/src/server/tinker/auth.ts";
import { BASE, ControlPlane, SESSION_SECRET, type Team } from "../harness.ts";
import {
  bindTinker,
  createModel,
  createSession,
  decodeFwdBwd,
  fwdBwdProto,
  keyOf,
  sftDatum,
} from "./client.ts";

let cp: ControlPlane;
let team: Team;
let modelId = "";
const { tinker, result } = bindTinker(() => cp);

beforeAll(async () => {
  cp = await ControlPlane.start();
  team = await cp.team("tinker-auth");
  await cp.startWorker();
  modelId = await createModel(cp, keyOf(team), BASE, await createSession(cp, keyOf(team)));
}, 60_000);
afterAll(() => cp?.stop());

const claims = (jwt: string) => JSON.parse(Buffer.from(jwt.split(".")[1] ?? "", "base64url").toString());

describe("Tinker front: JWTs", () => {
  it("mints a JWT for the key whose claims name the team and key, and takes it as X-API-Key", async () => {
    const minted = await tinker<{ jwt: string }>(keyOf(team), "auth/token", {});
    expect(minted.status).toBe(200);
    const c = claims(minted.body.jwt);
    expect(c.sub).toMatch(new RegExp(`^urn:opentinker:team:${team.slug}:key:`));
    expect(c.exp - c.iat).toBe(3600);
    const info = await tinker(minted.body.jwt, "get_info", { model_id: modelId });
    expect(info.status).toBe(200);
    expect(info.body).toMatchObject({ model_id: modelId });
  });

  it("refuses a JWT that is forged, expired or signed with another secret", async () => {
    const sign = (secret: string, exp: string) =>
      new SignJWT({ key: "anything", team: team.slug })
        .setProtectedHeader({ alg: "HS256" })
        .setIssuer("opentinker")
        .setSubject("x")
        .setIssuedAt()
        .setExpirationTime(exp)
        .sign(derivedKey(secret, "tinker-jwt"));
    const minted = (await tinker<{ jwt: string }>(keyOf(team), "auth/token", {})).body.jwt;
    const [head, , sig] = minted.split(".");
    const widened = Buffer.from(JSON.stringify({ ...claims(minted), team: "someone-else" })).toString(
      "base64url",
    );
    const expired = await new SignJWT({ key: claims(minted).key })
      .setProtectedHeader({ alg: "HS256" })
      .setIssuer("opentinker")
      .setIssuedAt(Math.floor(Date.now() / 1000) - 7200)
      .setExpirationTime(Math.floor(Date.now() / 1000) - 3600)
      .sign(derivedKey(SESSION_SECRET, "tinker-jwt"));
    for (const jwt of [
      `${head}.${widened}.${sig}`,
      expired,
      await sign("another-secret-another-secret-another-secret", "1h"),
      "eyJnot.a.jwt",
    ]) {
      const refused = await tinker<{ detail: string }>(jwt, "get_info", { model_id: modelId });
      expect(refused.status, jwt).toBe(401);
    }
  });

  it("ends a key's JWTs when the key is revoked", async () => {
    const other = await cp.team("tinker-auth-revoked");
    const jwt = (await tinker<{ jwt: string }>(keyOf(other), "auth/token", {})).body.jwt;
    expect((await tinker(jwt, "get_server_capabilities")).status).toBe(200);
    await revokeApiKey(cp.t.db, other.id, claims(jwt).key);
    await expect
      .poll(async () => (await tinker(jwt, "get_server_capabilities")).status, { timeout: 10_000 })
      .toBe(401);
  });
});

/** A zstd frame (RFC 8878) of raw blocks: what a compressor may write for incompressible input. */
function rawZstd(payload: Uint8Array): Buffer {
  const header = Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x20 | 0x80, 0, 0, 0, 0]); // single segment, 4-byte size
  header.writeUInt32LE(payload.length, 5);
  const blocks: Buffer[] = [];
  for (let at = 0; at < payload.length || blocks.length === 0; at += 65536) {
    const part = payload.subarray(at, at + 65536);
    const last = at + 65536 >= payload.length ? 1 : 0;
    const block = Buffer.alloc(3);
    block.writeUIntLE(last | (0 << 1) | (part.length << 3), 0, 3);
    blocks.push(block, Buffer.from(part));
  }
  return Buffer.concat([header, ...blocks]);
}

/** A zstd frame that declares no size and inflates to `bytes` zeros through RLE blocks of 128 KiB. */
function zeroBomb(bytes: number): Buffer {
  const header = Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38]); // no size; window 2^17 bytes
  const blocks: Buffer[] = [];
  for (let left = bytes; left > 0; left -= 131072) {
    const size = Math.min(left, 131072);
    const block = Buffer.alloc(4);
    block.writeUIntLE((left <= 131072 ? 1 : 0) | (1 << 1) | (size << 3), 0, 3);
    blocks.push(block);
  }
  return Buffer.concat([header, ...blocks]);
}

describe("Tinker front: zstd bodies", () => {
  const send = (body: Buffer) =>
    tinker<{ request_id: string; detail: string }>(keyOf(team), "forward_backward", undefined, {
      protobufBody: body,
      headers: { "content-encoding": "zstd" },
    });

  it("trains on a zstd-compressed protobuf forward_backward", async () => {
    const proto = fwdBwdProto({ model_id: modelId, seq_id: 0, data: [sftDatum([1, 2, 3, 4])] });
    const accepted = await send(rawZstd(proto));
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    const out = decodeFwdBwd((await result(keyOf(team), accepted.body.request_id, true)).bytes);
    expect(out.field("logprobs")[0]).toHaveLength(3);
  });

  it("refuses bodies that are not zstd, declare a huge window, or inflate past the limit, writing nothing", async () => {
    const before = await cp.t.db.request.count();
    const hugeWindow = Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 0xf8, 0x01, 0x00, 0x00]);
    const cases: [Buffer, number, RegExp][] = [
      [Buffer.from("not zstd at all"), 400, /zstd body: not a zstd frame/],
      [hugeWindow, 400, /window of \d+ bytes is over the limit/],
      [zeroBomb(40 * 1024 * 1024), 413, /decompresses past the limit/],
    ];
    for (const [body, status, detail] of cases) {
      const refused = await send(body);
      expect(refused.status, refused.body.detail).toBe(status);
      expect(refused.body.detail).toMatch(detail);
    }
    const gzip = await tinker<{ detail: string }>(keyOf(team), "forward_backward", undefined, {
      protobufBody: Buffer.from([1]),
      headers: { "content-encoding": "gzip" },
    });
    expect(gzip.status).toBe(415);
    expect(await cp.t.db.request.count()).toBe(before);
  });
});

/** A ~150-byte forward_backward whose one datum declares a sparse `target_tokens` of shape [1, cols]. */
function declaring(cols: number) {
  return fwdBwdProto({
    model_id: modelId,
    seq_id: 0,
    data: [
      {
        model_input: [{ encoded_text: { tokens: new Uint8Array(new Int32Array([1, 2]).buffer) } }],
        loss_fn_inputs: {
          target_tokens: {
            sparse_csr: {
              values: new Uint8Array(new BigInt64Array([3n]).buffer),
              crow_indices: new Uint8Array(new BigInt64Array([0n, 1n]).buffer),
              col_indices: new Uint8Array(new BigInt64Array([0n]).buffer),
            },
            dtype: 2,
            shape: [1, cols],
          },
        },
      },
    ],
  });
}

describe("Tinker front: declared tensor sizes", () => {
  it("refuses a tiny body declaring a huge tensor before allocating it, naming the field and the model's bound", async () => {
    const model = await cp.t.db.baseModel.findUniqueOrThrow({ where: { name: BASE } });
    const before = await cp.t.db.request.count();
    for (const cols of [2 ** 40, 2 ** 32, 8 * 1024 * 1024]) {
      const body = declaring(cols);
      expect(body.byteLength).toBeLessThan(200);
      const refused = await tinker<{ detail: string }>(keyOf(team), "forward_backward", undefined, {
        protobufBody: body,
      });
      expect(refused.status, refused.body.detail).toBe(400);
      expect(refused.body.detail).toBe(
        `forward_backward_input.data.0.loss_fn_inputs.target_tokens: shape [1, ${cols}] declares ${cols} values; that exceeds the ${model.contextLength} a loss input may hold (one per position of ${BASE}'s context)`,
      );
    }
    expect(await cp.t.db.request.count()).toBe(before);
  });
});
