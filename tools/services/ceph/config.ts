/**
 * What a cluster is made of: the Debian packages it needs, its fixed
 * addresses, the files and directories of its state directory, its daemons
 * and its ceph.conf.
 *
 * @module
 */

import { join, resolve } from "node:path";
import { CephError } from "./errors.ts";
import { logOf, pidFile } from "../service/daemon_files.ts";
import { readText } from "./_process.ts";

/** The Debian packages that hold everything the launcher runs. */
export const CEPH_PACKAGES: readonly string[] = [
  "ceph-mon",
  "ceph-mgr",
  "ceph-osd",
  "radosgw",
  "ceph-common",
  "ceph-mds",
  "ceph-fuse",
  "uuid-runtime",
];

/** The command that installs everything the launcher runs ({@linkcode CEPH_PACKAGES}). */
export const INSTALL_COMMAND = `apt-get install -y --no-install-recommends ${
  CEPH_PACKAGES.join(" ")
}`;

/** The state directory used when neither an option nor `$TIERBENCH_CEPH_DIR` names one. */
export const DEFAULT_CEPH_DIR = "/tmp/tierbench-ceph";

/** The monitor's addresses (messenger v2 and v1). */
export const MON_ADDRS = "[v2:127.0.0.1:3300,v1:127.0.0.1:6789]";
/** Where radosgw serves S3. */
export const S3_ENDPOINT = "http://127.0.0.1:7480";
/** The bucket created for tierbench. */
export const S3_BUCKET = "tierbench";
/** The region requests are signed for. */
export const S3_REGION = "us-east-1";
/** The radosgw user whose keys the cluster hands out. */
export const S3_USER = "tierbench";
/** Ports the cluster listens on (the OSD's 6800–7300 are picked at start). */
export const PORTS: readonly number[] = [3300, 6789, 7480];
/** The pools radosgw uses, created up front (the cluster has no mgr to autoscale). */
export const RGW_POOLS: readonly string[] = [
  ".rgw.root",
  "default.rgw.log",
  "default.rgw.control",
  "default.rgw.meta",
  "default.rgw.buckets.index",
  "default.rgw.buckets.data",
  "default.rgw.buckets.non-ec",
];
const BLOCK_BYTES = 20 * 1024 ** 3;
const OSD_MEMORY_TARGET = 1024 ** 3;
/** Longest path a UNIX socket address may hold (sun_path less its NUL). */
const MAX_SOCKET_PATH = 107;

/** The files and directories of one cluster. */
export interface Layout {
  dir: string;
  conf: string;
  state: string;
  run: string;
  log: string;
  keys: string;
  monmap: string;
  mnt: string;
}

/** The layout of the state directory `dir`; fails when its admin sockets' paths would not fit. */
export function layout(dir: string): Layout {
  const l: Layout = {
    dir,
    conf: join(dir, "ceph.conf"),
    state: join(dir, "state.json"),
    run: join(dir, "run"),
    log: join(dir, "log"),
    keys: join(dir, "keyring"),
    monmap: join(dir, "monmap"),
    mnt: join(dir, "mnt"),
  };
  const longest = join(l.run, "client.rgw.a.asok");
  if (longest.length > MAX_SOCKET_PATH) {
    throw new CephError(`state directory ${dir} is too long for admin sockets: pick a shorter one`);
  }
  return l;
}

/** The state directory: `dir`, else `$TIERBENCH_CEPH_DIR`, else {@linkcode DEFAULT_CEPH_DIR}. */
export function resolveDir(dir: string | undefined): string {
  return resolve(dir ?? Deno.env.get("TIERBENCH_CEPH_DIR") ?? DEFAULT_CEPH_DIR);
}

/** One daemon: its Ceph name (which names its pid, log and keyring files) and how to start it. */
export interface Daemon {
  name: string;
  bin: string;
  args: (l: Layout) => string[];
}

/** The monitor. */
export const MON: Daemon = { name: "mon.a", bin: "ceph-mon", args: () => ["-i", "a"] };
/** The manager (optional). */
export const MGR: Daemon = { name: "mgr.x", bin: "ceph-mgr", args: () => ["-i", "x"] };
/** The one OSD. */
export const OSD: Daemon = { name: "osd.0", bin: "ceph-osd", args: () => ["-i", "0"] };
/** radosgw, the S3 endpoint. */
export const RGW: Daemon = {
  name: "client.rgw.a",
  bin: "radosgw",
  args: () => ["-n", "client.rgw.a"],
};
/** The metadata server of CephFS. */
export const MDS: Daemon = { name: "mds.a", bin: "ceph-mds", args: () => ["-i", "a"] };
/** The CephFS client that mounts it at `DIR/mnt`. */
export const FUSE: Daemon = {
  name: "client.admin",
  bin: "ceph-fuse",
  args: (l) => ["-n", "client.admin", "--client_mount_timeout=90", l.mnt],
};
/** Every daemon a cluster may run. */
export const ALL_DAEMONS: readonly Daemon[] = [MON, MGR, OSD, RGW, MDS, FUSE];

/** What `up` records once the cluster serves; `env` and a repeated `up` read it back. */
export interface State {
  accessKeyId: string;
  secretAccessKey: string;
  mgr: boolean;
  fs: boolean;
}

/** The state `up` recorded, if there is one. */
export async function readState(l: Layout): Promise<State | undefined> {
  const text = await readText(l.state);
  if (text === "") return undefined;
  try {
    const s = JSON.parse(text) as Partial<State>;
    if (typeof s.accessKeyId !== "string" || typeof s.secretAccessKey !== "string") {
      return undefined;
    }
    return {
      accessKeyId: s.accessKeyId,
      secretAccessKey: s.secretAccessKey,
      mgr: s.mgr === true,
      fs: s.fs === true,
    };
  } catch {
    return undefined;
  }
}

/** The daemons a cluster started with these choices runs. */
export function daemonsOf(s: { mgr: boolean; fs: boolean }): Daemon[] {
  return [MON, ...(s.mgr ? [MGR] : []), OSD, RGW, ...(s.fs ? [MDS, FUSE] : [])];
}

export { logOf, pidFile };

/** The cluster's ceph.conf: every path inside the state directory, one replica, loopback only. */
export function configText(l: Layout, fsid: string): string {
  const keyring = join(l.keys, "$name.keyring");
  const sock = join(l.run, "$name.asok");
  const daemon = (data: string, extra: string[] = []) =>
    [data, `keyring = ${keyring}`, `admin socket = ${sock}`, ...extra].join("\n");
  return `# Written by tierbench tools/services/ceph; removed by \`tools/services/ceph/main.ts down\`.
[global]
fsid = ${fsid}
mon host = ${MON_ADDRS}
public network = 127.0.0.0/8
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon warn on insecure global id reclaim = false
mon warn on insecure global id reclaim allowed = false
paxos propose interval = 0.05
run dir = ${l.run}
pid file = ${join(l.run, "$name.pid")}
log file = ${join(l.log, "$name.log")}
keyring = ${keyring}

[mon]
mon data = ${join(l.dir, "mon", "ceph-$id")}
keyring = ${join(l.dir, "mon", "ceph-$id", "keyring")}
admin socket = ${sock}

[mgr]
${daemon(`mgr data = ${join(l.dir, "mgr", "ceph-$id")}`)}

[osd]
${
    daemon(`osd data = ${join(l.dir, "osd", "ceph-$id")}`, [
      "osd objectstore = bluestore",
      `bluestore block path = ${join(l.dir, "osd", "ceph-$id.block")}`,
      "bluestore block create = true",
      "bluestore fsck on mkfs = false",
      `bluestore block size = ${BLOCK_BYTES}`,
      `osd memory target = ${OSD_MEMORY_TARGET}`,
    ])
  }

[mds]
${daemon(`mds data = ${join(l.dir, "mds", "ceph-$id")}`)}

[client.rgw.a]
${
    daemon("rgw frontends = beast endpoint=127.0.0.1:7480 tcp_nodelay=1", [
      "rgw gc obj min wait = 5",
      "rgw gc processor period = 15",
    ])
  }

[client.admin]
keyring = ${keyring}
`;
}
