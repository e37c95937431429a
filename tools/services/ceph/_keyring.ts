/**
 * Cephx keys and keyrings, written before the monitor first starts, and the
 * random S3 keys of the radosgw user.
 *
 * @module
 */

import { join } from "node:path";
import type { Layout } from "./config.ts";

/** Cephx capabilities of every entity the cluster starts with. */
const CAPS: Record<string, Record<string, string>> = {
  "mon.": { mon: "allow *" },
  "client.admin": { mds: "allow *", mgr: "allow *", mon: "allow *", osd: "allow *" },
  "osd.0": { mgr: "allow profile osd", mon: "allow profile osd", osd: "allow *" },
  "mgr.x": { mds: "allow *", mon: "allow profile mgr", osd: "allow *" },
  "mds.a": { mds: "allow *", mgr: "allow profile mds", mon: "allow profile mds", osd: "allow rwx" },
  "client.rgw.a": { mgr: "allow rw", mon: "allow rw", osd: "allow rwx" },
};

/**
 * Writes one keyring per entity, and the monitor's mkfs keyring holding them
 * all, so that every key exists from the monitor's first start.
 */
export async function writeKeyrings(
  l: Layout,
  want: { mgr: boolean; fs: boolean },
): Promise<void> {
  const names = ["mon.", "client.admin", "osd.0", "client.rgw.a"];
  if (want.mgr) names.push("mgr.x");
  if (want.fs) names.push("mds.a");
  const entries = names.map((name) => keyringEntry(name, cephxKey(), CAPS[name] ?? {}));
  for (const [i, name] of names.entries()) {
    if (name === "mon.") continue;
    await Deno.writeTextFile(join(l.keys, `${name}.keyring`), entries[i] ?? "", { mode: 0o600 });
  }
  await Deno.writeTextFile(join(l.keys, "mon.keyring"), entries.join(""), { mode: 0o600 });
}

function keyringEntry(name: string, key: string, caps: Record<string, string>): string {
  const lines = [`[${name}]`, `\tkey = ${key}`];
  for (const [service, cap] of Object.entries(caps)) lines.push(`\tcaps ${service} = "${cap}"`);
  return lines.join("\n") + "\n";
}

/**
 * A fresh cephx secret as ceph-authtool prints it: base64 of the encoded
 * CryptoKey (type AES = 1, creation time, 16-byte length-prefixed secret).
 */
function cephxKey(): string {
  const bytes = new Uint8Array(28);
  const view = new DataView(bytes.buffer);
  const now = Date.now();
  view.setUint16(0, 1, true);
  view.setUint32(2, Math.floor(now / 1000), true);
  view.setUint32(6, (now % 1000) * 1_000_000, true);
  view.setUint16(10, 16, true);
  crypto.getRandomValues(bytes.subarray(12));
  return btoa(String.fromCharCode(...bytes));
}

/** `length` characters drawn uniformly from `alphabet` (whose size must divide 256). */
export function randomKey(alphabet: string, length: number): string {
  const bytes = crypto.getRandomValues(new Uint8Array(length));
  return Array.from(bytes, (b) => alphabet[b % alphabet.length]).join("");
}
