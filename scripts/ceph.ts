/**
 * Starts and stops a real single-node Ceph 16.2 cluster on loopback for tests
 * and demos: S3 through RGW on `http://127.0.0.1:7480` and a POSIX file system
 * (CephFS mounted with ceph-fuse). Everything (config, keyrings, daemon data,
 * pid files, logs, the sparse OSD block file, the mount point) lives in one
 * state directory, `/tmp/tierbench-ceph` unless `--dir` or
 * `$TIERBENCH_CEPH_DIR` says otherwise. Needs root and the Debian packages
 * named in {@linkcode INSTALL_COMMAND}.
 *
 * ```sh
 * eval "$(deno run -A scripts/ceph.ts up)"   # prints only `export …` lines
 * deno run -A scripts/ceph.ts status
 * deno run -A scripts/ceph.ts env
 * deno run -A scripts/ceph.ts down           # stops everything, removes the directory
 * ```
 *
 * Ports are fixed (3300, 6789, 6800–7300, 7480): one cluster per machine.
 *
 * @module
 */

import { basename, join, resolve } from "node:path";

/** The command that installs everything this script runs. */
export const INSTALL_COMMAND =
  "apt-get install -y --no-install-recommends ceph-mon ceph-mgr ceph-osd radosgw ceph-common " +
  "ceph-mds ceph-fuse uuid-runtime";

/** The state directory used when neither an option nor `$TIERBENCH_CEPH_DIR` names one. */
export const DEFAULT_CEPH_DIR = "/tmp/tierbench-ceph";

const MON_ADDRS = "[v2:127.0.0.1:3300,v1:127.0.0.1:6789]";
const S3_ENDPOINT = "http://127.0.0.1:7480";
const S3_BUCKET = "tierbench";
const S3_REGION = "us-east-1";
const S3_USER = "tierbench";
const PORTS = [3300, 6789, 7480];
const RGW_POOLS = [
  ".rgw.root",
  "default.rgw.log",
  "default.rgw.control",
  "default.rgw.meta",
  "default.rgw.buckets.index",
  "default.rgw.buckets.data",
  "default.rgw.buckets.non-ec",
];
/** SHA-256 of an empty body, the payload hash of a bodiless S3 request. */
const EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const BLOCK_BYTES = 20 * 1024 ** 3;
const OSD_MEMORY_TARGET = 1024 ** 3;
/**
 * How long a daemon may take to exit on SIGTERM before it gets SIGKILL. Its
 * data is deleted right after, so a clean exit buys nothing. radosgw, the OSD
 * and the monitor exit within 0.5 s; the MDS often takes 3 to 10 s, and is
 * killed.
 */
const STOP_GRACE_MS = 5_000;
/** Longest path a UNIX socket address may hold (sun_path less its NUL). */
const MAX_SOCKET_PATH = 107;

/** What a client needs to reach the cluster; {@linkcode cephUp} returns it. */
export interface CephEnv {
  /** S3 endpoint, `http://127.0.0.1:7480`. */
  endpoint: string;
  /** The bucket created for tierbench, `tierbench`. */
  bucket: string;
  /** S3 access key of the generated user. */
  accessKeyId: string;
  /** S3 secret key of the generated user. */
  secretAccessKey: string;
  /** Where CephFS is mounted (`DIR/mnt`); empty when started without a file system. */
  pfsDir: string;
  /** The region to sign requests for, `us-east-1`. */
  region: string;
}

/** Options of {@linkcode cephUp}. */
export interface CephUpOptions {
  /** State directory; default `$TIERBENCH_CEPH_DIR`, else {@linkcode DEFAULT_CEPH_DIR}. */
  dir?: string;
  /** Also run a ceph-mgr (about 300 MB more memory; S3 and CephFS work without). Default false. */
  mgr?: boolean;
  /** Run an MDS, create CephFS and mount it with ceph-fuse at `DIR/mnt`. Default true. */
  fs?: boolean;
  /** Receives progress lines; by default they go to stderr. */
  progress?: (line: string) => void;
}

/** Options of {@linkcode cephDown}. */
export interface CephDownOptions {
  /** State directory; default `$TIERBENCH_CEPH_DIR`, else {@linkcode DEFAULT_CEPH_DIR}. */
  dir?: string;
  /** Receives progress lines; by default they go to stderr. */
  progress?: (line: string) => void;
}

/** Something about the local cluster failed; the message is one line and names a log to read. */
export class CephError extends Error {
  override name = "CephError";
}

/** The files and directories of one cluster. */
interface Layout {
  dir: string;
  conf: string;
  state: string;
  run: string;
  log: string;
  keys: string;
  monmap: string;
  mnt: string;
}

/** One daemon: its Ceph name (which names its pid, log and keyring files) and how to start it. */
interface Daemon {
  name: string;
  bin: string;
  args: (l: Layout) => string[];
}

const MON: Daemon = { name: "mon.a", bin: "ceph-mon", args: () => ["-i", "a"] };
const MGR: Daemon = { name: "mgr.x", bin: "ceph-mgr", args: () => ["-i", "x"] };
const OSD: Daemon = { name: "osd.0", bin: "ceph-osd", args: () => ["-i", "0"] };
const RGW: Daemon = { name: "client.rgw.a", bin: "radosgw", args: () => ["-n", "client.rgw.a"] };
const MDS: Daemon = { name: "mds.a", bin: "ceph-mds", args: () => ["-i", "a"] };
const FUSE: Daemon = {
  name: "client.admin",
  bin: "ceph-fuse",
  args: (l) => ["-n", "client.admin", "--client_mount_timeout=90", l.mnt],
};
const ALL_DAEMONS = [MON, MGR, OSD, RGW, MDS, FUSE];
const DAEMON_BINS = new Set(ALL_DAEMONS.map((d) => d.bin));

/** What `up` records once the cluster serves; `env` and a repeated `up` read it back. */
interface State {
  accessKeyId: string;
  secretAccessKey: string;
  mgr: boolean;
  fs: boolean;
}

/** Cephx capabilities of every entity the cluster starts with. */
const CAPS: Record<string, Record<string, string>> = {
  "mon.": { mon: "allow *" },
  "client.admin": { mds: "allow *", mgr: "allow *", mon: "allow *", osd: "allow *" },
  "osd.0": { mgr: "allow profile osd", mon: "allow profile osd", osd: "allow *" },
  "mgr.x": { mds: "allow *", mon: "allow profile mgr", osd: "allow *" },
  "mds.a": { mds: "allow *", mgr: "allow profile mds", mon: "allow profile mds", osd: "allow rwx" },
  "client.rgw.a": { mgr: "allow rw", mon: "allow rw", osd: "allow rwx" },
};

// ---------------------------------------------------------------------------
// Public API

/**
 * Starts the cluster (or finds it already serving) and returns how to reach it.
 * A directory left by a crash or a failed start is cleaned up first. Progress
 * goes to `options.progress` (stderr by default), never to stdout.
 *
 * @example
 * ```ts ignore
 * import { cephDown, cephUp } from "./ceph.ts";
 * const env = await cephUp({ dir: "/tmp/my-ceph" });
 * console.log(env.endpoint, env.bucket, env.pfsDir);
 * await cephDown({ dir: "/tmp/my-ceph" });
 * ```
 */
export async function cephUp(options: CephUpOptions = {}): Promise<CephEnv> {
  const l = layout(resolveDir(options.dir));
  const say = options.progress ?? toStderr;
  const want = { mgr: options.mgr ?? false, fs: options.fs ?? true };
  await requireBinaries(want);
  const running = await servingState(l);
  if (running && (running.mgr || !want.mgr) && (running.fs || !want.fs)) {
    say(`cluster in ${l.dir} is already up`);
    return envOf(l, running);
  }
  if (await exists(l.dir) || (await clusterProcesses(l)).length > 0) {
    say(`cleaning up the previous cluster in ${l.dir}`);
    await teardown(l, say);
  }
  await requirePortsFree(l);
  const t0 = performance.now();
  try {
    const state = await bootstrap(l, want, (line) => say(`${line} (${seconds(t0)} s)`));
    say(`cluster up in ${seconds(t0)} s; logs in ${l.log}`);
    return envOf(l, state);
  } catch (error) {
    // Keep the directory (and its logs) for a look; `down` or the next `up` removes it.
    await stopDaemons(l, () => {}).catch(() => {});
    await unmountAll(l).catch(() => {});
    throw error;
  }
}

/**
 * Unmounts CephFS, stops every daemon of the cluster in the state directory
 * (SIGTERM, then SIGKILL after a bounded wait) and removes the directory. Does
 * nothing, successfully, when no cluster is there.
 */
export async function cephDown(options: CephDownOptions = {}): Promise<void> {
  const l = layout(resolveDir(options.dir));
  await teardown(l, options.progress ?? toStderr);
}

/** Options of the functions that stop or start one service of a running cluster. */
export interface CephServiceOptions {
  /** State directory; default `$TIERBENCH_CEPH_DIR`, else {@linkcode DEFAULT_CEPH_DIR}. */
  dir?: string;
  /** The signal that stops it: SIGTERM (default) or SIGKILL, as a crash would. */
  signal?: "SIGTERM" | "SIGKILL";
}

/** Whether a cluster in the state directory is up and serving (all daemons, S3, the mount). */
export async function cephServing(options: { dir?: string } = {}): Promise<boolean> {
  return (await servingState(layout(resolveDir(options.dir)))) !== undefined;
}

/**
 * Stops radosgw (the S3 endpoint) and nothing else; the objects stay in the
 * OSD. For fault tests: {@linkcode startRgw} brings it back.
 *
 * @example
 * ```ts ignore
 * import { startRgw, stopRgw } from "./ceph.ts";
 * await stopRgw({ signal: "SIGKILL" }); // S3 requests now fail with ECONNREFUSED
 * await startRgw();
 * ```
 */
export async function stopRgw(options: CephServiceOptions = {}): Promise<void> {
  const l = layout(resolveDir(options.dir));
  await stopOne(l, RGW, options.signal ?? "SIGTERM");
  for (let i = 0; i < 200 && await rgwAnswers(); i++) await sleep(50);
}

/** Starts radosgw again after {@linkcode stopRgw} and waits until S3 answers. */
export async function startRgw(options: { dir?: string } = {}): Promise<void> {
  const l = layout(resolveDir(options.dir));
  if (await pidOf(l, RGW) === undefined) {
    await Deno.remove(pidFile(l, RGW)).catch(() => {});
    await startDaemon(l, RGW);
  }
  await waitUntil(l, `radosgw (${S3_ENDPOINT})`, RGW, [MON, OSD, RGW], 120_000, rgwAnswers);
}

/**
 * Stops ceph-fuse without unmounting: with SIGKILL, as a client crash would,
 * the mount point is left dead (every access fails with ENOTCONN). For fault
 * tests: {@linkcode remountFs} brings the mount back.
 */
export async function stopFuse(options: CephServiceOptions = {}): Promise<void> {
  const l = layout(resolveDir(options.dir));
  await stopOne(l, FUSE, options.signal ?? "SIGKILL");
}

/**
 * Mounts CephFS again after {@linkcode stopFuse} (or any loss of the mount):
 * removes the dead mount, evicts the dead client's session from the MDS (so
 * that the new client is not kept waiting on its capabilities), starts
 * ceph-fuse and waits for the mount.
 */
export async function remountFs(options: { dir?: string } = {}): Promise<void> {
  const l = layout(resolveDir(options.dir));
  const s = await readState(l);
  if (!s?.fs) throw new CephError(`no cluster with a file system in ${l.dir}`);
  if (await pidOf(l, FUSE) !== undefined && (await mountsUnder(l)).includes(l.mnt)) return;
  await stopOne(l, FUSE, "SIGKILL");
  await unmountAll(l);
  await run("ceph", ["-c", l.conf, "--connect-timeout", "10", "tell", "mds.a", "client", "evict"], {
    timeoutMs: 30_000,
  });
  await Deno.remove(pidFile(l, FUSE)).catch(() => {});
  await mountFs(l, () => {});
}

/** The `export NAME=value` lines for `env`, ready for a POSIX shell's `eval`. */
export function exportLines(env: CephEnv): string {
  const vars: [string, string][] = [
    ["AWS_ACCESS_KEY_ID", env.accessKeyId],
    ["AWS_SECRET_ACCESS_KEY", env.secretAccessKey],
    ["TIERBENCH_S3_ENDPOINT", env.endpoint],
    ["TIERBENCH_S3_BUCKET", env.bucket],
    ["TIERBENCH_PFS_DIR", env.pfsDir],
    ["AWS_REGION", env.region],
  ];
  return vars.map(([k, v]) => `export ${k}=${shellQuote(v)}`).join("\n");
}

// ---------------------------------------------------------------------------
// Bringing the cluster up

async function bootstrap(
  l: Layout,
  want: { mgr: boolean; fs: boolean },
  say: (line: string) => void,
): Promise<State> {
  const fsid = crypto.randomUUID();
  const osdUuid = crypto.randomUUID();
  const data = ["mon/ceph-a", "osd/ceph-0", "mgr/ceph-x", "mds/ceph-a"].map((d) => join(l.dir, d));
  for (const d of [l.run, l.log, l.keys, l.mnt, ...data]) {
    await Deno.mkdir(d, { recursive: true });
  }
  await Deno.writeTextFile(l.conf, configText(l, fsid));
  await writeKeyrings(l, want);
  await exec("monmaptool", ["--create", "--fsid", fsid, "--addv", "a", MON_ADDRS, l.monmap]);
  await exec(MON.bin, [
    ...["-c", l.conf, "--mkfs", "-i", "a"],
    ...["--monmap", l.monmap, "--keyring", join(l.keys, "mon.keyring")],
  ], "ceph-mon --mkfs");
  await startDaemon(l, MON);
  say("mon.a started");

  // The OSD's mkfs (the slowest step) only needs the monitor: it runs while
  // the pools are created and the mgr starts.
  const mkfsArgs = ["-c", l.conf, "--mkfs", "-i", "0", "--osd-uuid", osdUuid];
  const osdMkfs = exec(OSD.bin, mkfsArgs, "ceph-osd --mkfs").catch((e) => {
    throw new CephError(`${message(e)}; see ${logOf(l, OSD)}`, { cause: e });
  });
  const rgwPools = RGW_POOLS.flatMap((p) => [
    `osd pool create ${p} 8 8`,
    `osd pool application enable ${p} rgw`,
  ]);
  const fsPools = [
    "osd pool create cephfs_metadata 8 8",
    "osd pool create cephfs_data 8 8",
    "fs new cephfs cephfs_metadata cephfs_data",
  ];
  await Promise.all([
    cephBatch(l, [`osd new ${osdUuid} 0`, ...rgwPools, ...(want.fs ? fsPools : [])])
      .then(() => say("pools created")),
    osdMkfs,
    want.mgr ? startDaemon(l, MGR).then(() => say("mgr.x started")) : undefined,
  ]);
  await startDaemon(l, OSD);
  say("osd.0 started");
  await Promise.all([startDaemon(l, RGW), want.fs ? startDaemon(l, MDS) : undefined]);
  say(want.fs ? "radosgw and mds.a started" : "radosgw started");

  const [state] = await Promise.all([
    startS3(l, want, say),
    want.fs ? mountFs(l, say) : Promise.resolve(),
  ]);
  await Deno.writeTextFile(l.state, JSON.stringify(state, null, 2) + "\n", { mode: 0o600 });
  return state;
}

/** Waits for RGW, creates the S3 user and the bucket. */
async function startS3(
  l: Layout,
  want: { mgr: boolean; fs: boolean },
  say: (line: string) => void,
): Promise<State> {
  await waitUntil(l, `radosgw (${S3_ENDPOINT})`, RGW, [MON, OSD, RGW], 180_000, rgwAnswers);
  say("radosgw answers");
  const state: State = {
    accessKeyId: randomKey("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 20),
    secretAccessKey: randomKey(
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
      40,
    ),
    mgr: want.mgr,
    fs: want.fs,
  };
  await exec("radosgw-admin", [
    ...["-c", l.conf, "user", "create", `--uid=${S3_USER}`, `--display-name=${S3_USER}`],
    `--access-key=${state.accessKeyId}`,
    `--secret-key=${state.secretAccessKey}`,
  ], "radosgw-admin user create");
  await createBucket(l, state);
  say(`S3 user and bucket ${S3_BUCKET} created`);
  return state;
}

/** Starts ceph-fuse once the MDS is active (it gives up at once otherwise) and waits for the mount. */
async function mountFs(l: Layout, say: (line: string) => void): Promise<void> {
  await waitUntil(l, "mds.a to become active", MDS, [MON, OSD, MDS], 90_000, async () => {
    const r = await run("ceph", ["-c", l.conf, "--connect-timeout", "10", "mds", "stat"], {
      timeoutMs: 30_000,
    });
    return r.code === 0 && r.stdout.includes("up:active");
  });
  say("mds.a active");
  await startDaemon(l, FUSE, 120_000);
  await waitUntil(l, `ceph-fuse mount at ${l.mnt}`, FUSE, [MON, OSD, MDS], 30_000, async () => {
    return (await mountsUnder(l)).includes(l.mnt);
  });
  say(`CephFS mounted at ${l.mnt}`);
}

function configText(l: Layout, fsid: string): string {
  const keyring = join(l.keys, "$name.keyring");
  const sock = join(l.run, "$name.asok");
  const daemon = (data: string, extra: string[] = []) =>
    [data, `keyring = ${keyring}`, `admin socket = ${sock}`, ...extra].join("\n");
  return `# Written by tierbench scripts/ceph.ts; removed by \`ceph.ts down\`.
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

/**
 * Writes one keyring per entity, and the monitor's mkfs keyring holding them
 * all, so that every key exists from the monitor's first start.
 */
async function writeKeyrings(l: Layout, want: { mgr: boolean; fs: boolean }): Promise<void> {
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
function randomKey(alphabet: string, length: number): string {
  const bytes = crypto.getRandomValues(new Uint8Array(length));
  return Array.from(bytes, (b) => alphabet[b % alphabet.length]).join("");
}

/**
 * Runs many monitor commands through one `ceph` process (its interactive
 * mode reads commands from a non-terminal stdin), which saves a Python start
 * per command. Any `Error …` line fails the batch.
 */
async function cephBatch(l: Layout, commands: string[]): Promise<void> {
  const r = await run("ceph", ["-c", l.conf, "--connect-timeout", "30"], {
    stdin: commands.join("\n") + "\n",
    timeoutMs: 120_000,
  });
  const error = r.stderr.split("\n").find((line) => /^(Error|error)/.test(line));
  if (r.code !== 0 || error) {
    const why = error ?? lastLine(r.stderr) ?? `exit status ${r.code}`;
    throw new CephError(`ceph command batch failed: ${why}; see ${logOf(l, MON)}`);
  }
}

/** Creates the bucket with a SigV4-signed PUT (curl reads the credentials from stdin). */
async function createBucket(l: Layout, s: State): Promise<void> {
  const r = await run("curl", [
    ...["-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "30", "-K", "-"],
    ...["-X", "PUT", "--aws-sigv4", `aws:amz:${S3_REGION}:s3`, `${S3_ENDPOINT}/${S3_BUCKET}`],
    // curl 7.88 (Debian 12) sends no payload hash, and RGW then rejects the signature.
    ...["-H", `x-amz-content-sha256: ${EMPTY_SHA256}`],
  ], { stdin: `user = "${s.accessKeyId}:${s.secretAccessKey}"\n`, timeoutMs: 60_000 });
  if (r.code !== 0 || r.stdout.trim() !== "200") {
    const why = lastLine(r.stderr) ?? `HTTP ${r.stdout.trim()}`;
    throw new CephError(
      `creating bucket ${S3_BUCKET} failed: ${why}; see ${logOf(l, RGW)}`,
    );
  }
}

async function rgwAnswers(): Promise<boolean> {
  const r = await run("curl", [
    ...["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "2", `${S3_ENDPOINT}/`],
  ], { timeoutMs: 10_000 });
  return r.code === 0 && r.stdout.trim() === "200";
}

// ---------------------------------------------------------------------------
// Daemons and processes

/**
 * Starts a daemon in its own session with stdout and stderr appended to
 * `DIR/log/NAME.out`; the daemon forks itself into the background and writes
 * `DIR/run/NAME.pid`. Returns its pid.
 */
async function startDaemon(l: Layout, d: Daemon, timeoutMs = 60_000): Promise<number> {
  const out = join(l.log, `${d.name}.out`);
  const r = await run("setsid", [
    ...["sh", "-c", 'exec "$@" </dev/null >>"$TIERBENCH_CEPH_OUT" 2>&1', "sh"],
    ...[d.bin, "-c", l.conf, ...d.args(l)],
  ], { env: { TIERBENCH_CEPH_OUT: out }, timeoutMs });
  if (r.code !== 0) {
    const why = lastLine(await readText(out)) ?? `exit status ${r.code}`;
    throw new CephError(`${d.bin} (${d.name}) failed to start: ${why}; see ${logOf(l, d)}`);
  }
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const pid = await pidOf(l, d);
    if (pid !== undefined) return pid;
    // The daemon creates its pid file and then writes it: only a written pid of a process
    // that is gone means it exited.
    const written = Number.parseInt((await readText(pidFile(l, d))).trim(), 10);
    if (Number.isSafeInteger(written) && written > 0 && !await alive(written)) {
      const why = lastLine(await readText(logOf(l, d))) ?? "no log line";
      throw new CephError(
        `${d.bin} (${d.name}) exited right after starting (${why}); see ${logOf(l, d)}`,
      );
    }
    await sleep(50);
  }
  throw new CephError(`${d.bin} (${d.name}) wrote no pid file; see ${logOf(l, d)}`);
}

/**
 * Polls `ready` until it holds, failing early when a watched daemon has died
 * and with a message naming `culprit`'s log when `timeoutMs` runs out.
 */
async function waitUntil(
  l: Layout,
  what: string,
  culprit: Daemon,
  watched: Daemon[],
  timeoutMs: number,
  ready: () => Promise<boolean>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let delay = 50;; delay = Math.min(delay * 2, 500)) {
    if (await ready()) return;
    for (const d of watched) {
      if (await pidOf(l, d) === undefined) {
        throw new CephError(
          `${d.bin} (${d.name}) exited while waiting for ${what}; see ${logOf(l, d)}`,
        );
      }
    }
    if (Date.now() > deadline) {
      throw new CephError(
        `${what} not ready after ${timeoutMs / 1000} s; see ${logOf(l, culprit)} ` +
          `(and ${logOf(l, OSD)})`,
      );
    }
    await sleep(delay);
  }
}

/** The live pid recorded for a daemon of this cluster, if any. */
async function pidOf(l: Layout, d: Daemon): Promise<number | undefined> {
  const text = await readText(pidFile(l, d));
  const pid = Number.parseInt(text.trim(), 10);
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  const argv = await processArgv(pid);
  return argv && isOurs(l, argv) ? pid : undefined;
}

/**
 * Every live process of this cluster's daemons, found by its `-c DIR/ceph.conf`
 * argument (one grep over all command lines, then a check of each match).
 */
async function clusterProcesses(l: Layout): Promise<{ pid: number; bin: string }[]> {
  const r = await run("sh", ["-c", 'exec grep -lsF -e "$1" /proc/[0-9]*/cmdline', "sh", l.conf]);
  const found: { pid: number; bin: string }[] = [];
  for (const path of r.stdout.split("\n")) {
    const pid = Number(path.split("/")[2]);
    if (!Number.isSafeInteger(pid) || pid <= 0) continue;
    const argv = await processArgv(pid);
    if (argv && isOurs(l, argv)) found.push({ pid, bin: basename(argv[0] ?? "") });
  }
  return found;
}

function isOurs(l: Layout, argv: string[]): boolean {
  return DAEMON_BINS.has(basename(argv[0] ?? "")) && argv.includes(l.conf);
}

/** A process's argv, or undefined when it is gone or a zombie. */
async function processArgv(pid: number): Promise<string[] | undefined> {
  const stat = await readProc(`/proc/${pid}/stat`);
  const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
  if (stat === "" || state === "Z" || state === "X") return undefined;
  const cmdline = await readProc(`/proc/${pid}/cmdline`);
  return cmdline === "" ? undefined : cmdline.replace(/\0$/, "").split("\0");
}

/**
 * Whether a process still exists. A daemon whose main thread has exited
 * shows as a zombie while its other threads finish shutting down (radosgw
 * takes seconds) and still hold its ports and files: alive until they are
 * gone too.
 */
async function alive(pid: number): Promise<boolean> {
  const stat = await readProc(`/proc/${pid}/stat`);
  if (stat === "") return false;
  const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
  if (state !== "Z" && state !== "X") return true;
  const status = await readProc(`/proc/${pid}/status`);
  return Number(/^Threads:\s*(\d+)/m.exec(status)?.[1] ?? "0") > 1;
}

/** Unmounts, stops the daemons and removes the directory. */
async function teardown(l: Layout, say: (line: string) => void): Promise<void> {
  const t0 = performance.now();
  const mounted = await unmountAll(l);
  const stopped = await stopDaemons(l, say);
  try {
    await Deno.remove(l.dir, { recursive: true });
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) {
      throw new CephError(`cannot remove ${l.dir}: ${message(e)}`, { cause: e });
    }
  }
  if (mounted + stopped > 0) say(`cluster in ${l.dir} is down (${seconds(t0)} s)`);
}

/**
 * Stops the cluster's daemons in waves, each with SIGTERM and, after
 * {@linkcode STOP_GRACE_MS}, SIGKILL. Each wave's shutdown still talks to the
 * next: ceph-fuse closes its MDS session; radosgw, the MDS and the mgr write
 * to the OSD; the OSD reports to the monitor. Returns how many were running.
 */
async function stopDaemons(l: Layout, say: (line: string) => void): Promise<number> {
  const procs = await clusterProcesses(l);
  const order = [[FUSE], [RGW, MDS, MGR], [OSD], [MON]].map((ds) => ds.map((d) => d.bin));
  const waves = order.map((bins) => procs.filter((p) => bins.includes(p.bin)));
  for (const wave of waves) {
    if (wave.length === 0) continue;
    const t0 = performance.now();
    const names = wave.map((p) => `${p.bin} (pid ${p.pid})`).join(", ");
    for (const p of wave) signal(p.pid, "SIGTERM");
    if (await allExited(wave, STOP_GRACE_MS)) {
      say(`stopped ${names} in ${seconds(t0)} s`);
      continue;
    }
    const left = await living(wave);
    say(`${left} still running ${STOP_GRACE_MS / 1000} s after SIGTERM: sending SIGKILL`);
    for (const p of wave) signal(p.pid, "SIGKILL");
    if (!await allExited(wave, 5_000)) {
      throw new CephError(`could not stop ${await living(wave)} even with SIGKILL`);
    }
  }
  return procs.length;
}

/** Stops one daemon of the cluster by its pid file, if it runs. */
async function stopOne(l: Layout, d: Daemon, sig: "SIGTERM" | "SIGKILL"): Promise<void> {
  const pid = await pidOf(l, d);
  if (pid === undefined) return;
  signal(pid, sig);
  if (await allExited([{ pid }], STOP_GRACE_MS)) return;
  signal(pid, "SIGKILL");
  if (!await allExited([{ pid }], 5_000)) {
    throw new CephError(`could not stop ${d.bin} (pid ${pid}) even with SIGKILL`);
  }
}

async function living(procs: { pid: number; bin: string }[]): Promise<string> {
  const left = [];
  for (const p of procs) if (await alive(p.pid)) left.push(`${p.bin} (pid ${p.pid})`);
  return left.join(", ");
}

function signal(pid: number, sig: Deno.Signal): void {
  try {
    Deno.kill(pid, sig);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
}

async function allExited(procs: { pid: number }[], timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  do {
    const states = await Promise.all(procs.map((p) => alive(p.pid)));
    if (!states.includes(true)) return true;
    await sleep(50);
  } while (Date.now() < deadline);
  return false;
}

// ---------------------------------------------------------------------------
// Mounts

/** Mount points at or below the state directory, deepest first. */
async function mountsUnder(l: Layout): Promise<string[]> {
  const text = await readProc("/proc/mounts");
  return text.split("\n")
    .map((line) => unescapeMount(line.split(" ")[1] ?? ""))
    .filter((m) => m === l.dir || m.startsWith(l.dir + "/"))
    .sort((a, b) => b.length - a.length);
}

/** /proc/mounts writes space, tab, newline and backslash as octal escapes. */
function unescapeMount(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}

/** Unmounts everything below the directory: umount, then fusermount -u, then a lazy umount. */
async function unmountAll(l: Layout): Promise<number> {
  const mounts = await mountsUnder(l);
  for (const m of mounts) {
    const attempts: [string, string[]][] = [
      ["umount", [m]],
      ["fusermount3", ["-u", m]],
      ["fusermount", ["-u", m]],
      ["umount", ["-l", m]],
    ];
    for (const [cmd, args] of attempts) {
      const r = await run(cmd, args, { timeoutMs: 30_000 }).catch(() => undefined);
      if (r?.code === 0 || !(await mountsUnder(l)).includes(m)) break;
    }
    if ((await mountsUnder(l)).includes(m)) throw new CephError(`cannot unmount ${m}`);
  }
  return mounts.length;
}

// ---------------------------------------------------------------------------
// State

/** The recorded state when every daemon it names is alive, RGW answers and the mount is there. */
async function servingState(l: Layout): Promise<State | undefined> {
  const s = await readState(l);
  if (!s) return undefined;
  for (const d of daemonsOf(s)) if (await pidOf(l, d) === undefined) return undefined;
  if (s.fs && !(await mountsUnder(l)).includes(l.mnt)) return undefined;
  return await rgwAnswers() ? s : undefined;
}

async function readState(l: Layout): Promise<State | undefined> {
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

function daemonsOf(s: { mgr: boolean; fs: boolean }): Daemon[] {
  return [MON, ...(s.mgr ? [MGR] : []), OSD, RGW, ...(s.fs ? [MDS, FUSE] : [])];
}

function envOf(l: Layout, s: State): CephEnv {
  return {
    endpoint: S3_ENDPOINT,
    bucket: S3_BUCKET,
    accessKeyId: s.accessKeyId,
    secretAccessKey: s.secretAccessKey,
    pfsDir: s.fs ? l.mnt : "",
    region: S3_REGION,
  };
}

function layout(dir: string): Layout {
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

function resolveDir(dir: string | undefined): string {
  return resolve(dir ?? Deno.env.get("TIERBENCH_CEPH_DIR") ?? DEFAULT_CEPH_DIR);
}

function pidFile(l: Layout, d: Daemon): string {
  return join(l.run, `${d.name}.pid`);
}

function logOf(l: Layout, d: Daemon): string {
  return join(l.log, `${d.name}.log`);
}

// ---------------------------------------------------------------------------
// Preconditions

async function requireBinaries(want: { mgr: boolean; fs: boolean }): Promise<void> {
  const bins = ["ceph", "ceph-mon", "monmaptool", "ceph-osd", "radosgw", "radosgw-admin"];
  if (want.mgr) bins.push("ceph-mgr");
  if (want.fs) bins.push("ceph-mds", "ceph-fuse");
  for (const bin of bins) {
    if (!await onPath(bin)) {
      throw new CephError(`${bin} is not installed; run: ${INSTALL_COMMAND}`);
    }
  }
  for (const bin of ["curl", "setsid"]) {
    if (!await onPath(bin)) throw new CephError(`${bin} is not installed`);
  }
}

async function onPath(bin: string): Promise<boolean> {
  const dirs = (Deno.env.get("PATH") ?? "").split(":").concat("/usr/sbin", "/usr/bin", "/sbin");
  for (const d of dirs) {
    if (d === "") continue;
    try {
      if ((await Deno.stat(join(d, bin))).isFile) return true;
    } catch {
      // not in this directory
    }
  }
  return false;
}

/** Fails when something already listens on a port the cluster needs. */
async function requirePortsFree(l: Layout): Promise<void> {
  const listening = new Set<number>();
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    for (const line of (await readProc(table)).split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f[3] === "0A") listening.add(parseInt(f[1]?.split(":")[1] ?? "", 16));
    }
  }
  const busy = PORTS.filter((p) => listening.has(p));
  if (busy.length > 0) {
    throw new CephError(
      `${busy.length > 1 ? "ports" : "port"} ${busy.join(", ")} already in use ` +
        "(another Ceph cluster?); stop it, e.g. " +
        `\`deno run -A scripts/ceph.ts down --dir DIR\`, before starting one in ${l.dir}`,
    );
  }
}

// ---------------------------------------------------------------------------
// Small helpers

interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to completion with a hard time limit; a missing binary or timeout throws. */
async function run(
  cmd: string,
  args: string[],
  opts: { stdin?: string; env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<RunResult> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(cmd, {
      args,
      stdin: opts.stdin === undefined ? "null" : "piped",
      stdout: "piped",
      stderr: "piped",
      ...(opts.env ? { env: opts.env } : {}),
    }).spawn();
  } catch (e) {
    throw new CephError(`cannot run ${cmd}: ${message(e)}`, { cause: e });
  }
  const timer = setTimeout(() => signal(child.pid, "SIGKILL"), timeoutMs);
  try {
    if (opts.stdin !== undefined) {
      const w = child.stdin.getWriter();
      await w.write(new TextEncoder().encode(opts.stdin));
      await w.close();
    }
    const out = await child.output();
    if (out.signal === "SIGKILL") {
      throw new CephError(`${cmd} ${args.join(" ")} timed out after ${timeoutMs / 1000} s`);
    }
    const decoder = new TextDecoder();
    return {
      code: out.code,
      stdout: decoder.decode(out.stdout),
      stderr: decoder.decode(out.stderr),
    };
  } finally {
    clearTimeout(timer);
  }
}

/** Like {@linkcode run} but throws, with the last line of stderr, on a non-zero exit. */
async function exec(cmd: string, args: string[], what = cmd): Promise<string> {
  const r = await run(cmd, args, { timeoutMs: 120_000 });
  if (r.code !== 0) {
    const why = lastLine(r.stderr) ?? lastLine(r.stdout) ?? `exit status ${r.code}`;
    throw new CephError(`${what} failed: ${why}`);
  }
  return r.stdout;
}

/** False once Deno refused to read /proc itself, which it allows only under --allow-all. */
let procReadable = true;

/** A /proc file's text, "" when it is gone; read through `cat` where Deno may not read /proc. */
async function readProc(path: string): Promise<string> {
  if (procReadable) {
    try {
      return await Deno.readTextFile(path);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotCapable)) return "";
      procReadable = false;
    }
  }
  const r = await run("cat", [path], { timeoutMs: 10_000 });
  return r.code === 0 ? r.stdout : "";
}

async function readText(path: string): Promise<string> {
  try {
    return await Deno.readTextFile(path);
  } catch {
    return "";
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}

function lastLine(text: string): string | undefined {
  return text.split("\n").map((s) => s.trim()).filter((s) => s !== "").at(-1);
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function seconds(t0: number): string {
  return ((performance.now() - t0) / 1000).toFixed(1);
}

function shellQuote(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
}

function toStderr(line: string): void {
  console.error(`ceph: ${line}`);
}

// ---------------------------------------------------------------------------
// Command line

const USAGE = `usage: deno run -A scripts/ceph.ts <up|down|env|status> [--dir DIR] [--mgr] [--no-fs]

  up      start the cluster (or find it up) and print export lines for eval
  down    unmount, stop every daemon, remove the state directory
  env     print the export lines of the running cluster
  status  one line per daemon

  --dir DIR   state directory (default $TIERBENCH_CEPH_DIR or ${DEFAULT_CEPH_DIR})
  --mgr       also run a ceph-mgr (--no-mgr, the default, runs none)
  --no-fs     no MDS, CephFS or ceph-fuse mount (--fs, the default, has them)`;

interface Cli {
  command: string;
  dir?: string;
  mgr: boolean;
  fs: boolean;
}

function parseArgs(args: string[]): Cli {
  const cli: Cli = { command: "", mgr: false, fs: true };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? "";
    if (arg === "--dir" || arg.startsWith("--dir=")) {
      const value = arg === "--dir" ? args[++i] : arg.slice("--dir=".length);
      if (!value) throw new UsageError("--dir needs a directory");
      cli.dir = value;
    } else if (arg === "--mgr" || arg === "--no-mgr") cli.mgr = arg === "--mgr";
    else if (arg === "--fs" || arg === "--no-fs") cli.fs = arg === "--fs";
    else if (arg === "-h" || arg === "--help") cli.command = "help";
    else if (!arg.startsWith("-") && cli.command === "") cli.command = arg;
    else throw new UsageError(`unexpected argument ${arg}`);
  }
  return cli;
}

class UsageError extends Error {
  override name = "UsageError";
}

async function statusLines(l: Layout): Promise<{ lines: string[]; up: boolean }> {
  const s = await readState(l);
  const expected = daemonsOf(s ?? { mgr: false, fs: true });
  const lines: string[] = [];
  let up = s !== undefined;
  for (const d of ALL_DAEMONS) {
    const pid = await pidOf(l, d);
    const wanted = expected.includes(d);
    if (pid === undefined && !wanted) continue;
    if (pid === undefined) up = false;
    const what = d === FUSE ? `ceph-fuse (${l.mnt})` : `${d.bin} (${d.name})`;
    lines.push(`${what.padEnd(40)} ${pid === undefined ? "stopped" : `running, pid ${pid}`}`);
  }
  const rgw = await rgwAnswers();
  lines.push(`${`S3 ${S3_ENDPOINT}`.padEnd(40)} ${rgw ? "answering" : "not answering"}`);
  if (s?.fs) {
    const mounted = (await mountsUnder(l)).includes(l.mnt);
    lines.push(`${`CephFS ${l.mnt}`.padEnd(40)} ${mounted ? "mounted" : "not mounted"}`);
    up &&= mounted;
  }
  return { lines, up: up && rgw };
}

async function main(args: string[]): Promise<number> {
  const cli = parseArgs(args);
  const opts = cli.dir === undefined ? {} : { dir: cli.dir };
  switch (cli.command) {
    case "up": {
      console.log(exportLines(await cephUp({ ...opts, mgr: cli.mgr, fs: cli.fs })));
      return 0;
    }
    case "down":
      await cephDown(opts);
      return 0;
    case "env": {
      const l = layout(resolveDir(cli.dir));
      const s = await servingState(l);
      if (!s) {
        console.error(
          `ceph: no cluster is up in ${l.dir} (start one: deno run -A scripts/ceph.ts up)`,
        );
        return 1;
      }
      console.log(exportLines(envOf(l, s)));
      return 0;
    }
    case "status": {
      const l = layout(resolveDir(cli.dir));
      if (!await exists(l.dir)) {
        console.log(`no cluster in ${l.dir}`);
        return 1;
      }
      const { lines, up } = await statusLines(l);
      console.log(lines.join("\n"));
      return up ? 0 : 1;
    }
    case "help":
      console.log(USAGE);
      return 0;
    default:
      throw new UsageError(cli.command ? `unknown command ${cli.command}` : "no command given");
  }
}

if (import.meta.main) {
  try {
    Deno.exit(await main(Deno.args));
  } catch (e) {
    console.error(`ceph: ${message(e)}`);
    if (e instanceof UsageError) console.error(USAGE);
    Deno.exit(e instanceof UsageError ? 2 : 1);
  }
}
