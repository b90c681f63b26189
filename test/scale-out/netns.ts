// Test hosts: each a network namespace joined to this one by a veth pair, so a
// process started in it reaches Postgres and the S3 server only over its veth
// link (the namespace has its own loopback). Those servers listen on loopback
// here, so a TCP forwarder on this side's veth address relays to them. Needs
// root and `ip netns`; where that is not allowed, `netnsUnavailable` says why
// and the tests that need hosts are skipped.
import { execFileSync, spawnSync } from "node:child_process";
import { type Endpoint, TcpForwarder } from "@opentinker/store/testing";

export interface TestHost {
  name: string;
  namespace: string;
  /** This side's address on the host's link (where its forwarders listen). */
  gateway: string;
  /** The host's own address. */
  address: string;
  /** argv prefix running a command inside the host's namespace. */
  exec: string[];
  /** A forwarder on the gateway to a server listening on loopback here: its address as the host sees it. */
  reach(target: Endpoint): Promise<Endpoint>;
  remove(): Promise<void>;
}

function ip(args: string[]): void {
  execFileSync("ip", args, { stdio: ["ignore", "ignore", "pipe"] });
}

/** Why test hosts cannot be made here, or null when they can. */
export function netnsUnavailable(): string | null {
  if (process.getuid?.() !== 0) return "network namespaces need root";
  const probe = `ot-probe-${process.pid}`;
  const added = spawnSync("ip", ["netns", "add", probe], { encoding: "utf8" });
  if (added.error) return `\`ip\` is not available: ${added.error.message}`;
  if (added.status !== 0) return `\`ip netns add\` is not allowed here: ${added.stderr.trim()}`;
  spawnSync("ip", ["netns", "del", probe]);
  return null;
}

/**
 * Makes host `index` of this test run. Names and the /30 subnet come from the
 * process id, so parallel runs on one machine do not collide.
 */
export async function createHost(name: string, index: number): Promise<TestHost> {
  const tag = `${process.pid % 100_000}${index}`;
  const namespace = `ot-${tag}`;
  const outside = `otv${tag}`;
  const inside = `oth${tag}`;
  const slot = (process.pid * 4 + index) % 16_384;
  const net = `10.${200 + (Math.floor(slot / 256) % 50)}.${slot % 256}`;
  const gateway = `${net}.1`;
  const address = `${net}.2`;
  ip(["netns", "add", namespace]);
  const forwarders: TcpForwarder[] = [];
  const remove = async () => {
    for (const forwarder of forwarders.splice(0)) await forwarder.close();
    // Deleting the namespace deletes its end of the pair, and with it ours.
    spawnSync("ip", ["netns", "del", namespace]);
    spawnSync("ip", ["link", "del", outside]);
  };
  try {
    ip(["link", "add", outside, "type", "veth", "peer", "name", inside]);
    ip(["link", "set", inside, "netns", namespace]);
    ip(["addr", "add", `${gateway}/30`, "dev", outside]);
    ip(["link", "set", outside, "up"]);
    ip(["-n", namespace, "addr", "add", `${address}/30`, "dev", inside]);
    ip(["-n", namespace, "link", "set", inside, "up"]);
    ip(["-n", namespace, "link", "set", "lo", "up"]);
  } catch (error) {
    await remove();
    throw error;
  }
  return {
    name,
    namespace,
    gateway,
    address,
    exec: ["ip", "netns", "exec", namespace],
    reach: async (target) => {
      const forwarder = await TcpForwarder.start({ host: gateway, port: 0 }, target);
      forwarders.push(forwarder);
      return forwarder.address;
    },
    remove,
  };
}
