/**
 * Bringing the whole cluster up and down, and what it looks like from
 * outside: whether it serves, how to reach it, one status line per daemon.
 *
 * @module
 */

import { join } from "node:path";
import {
  ALL_DAEMONS,
  configText,
  daemonsOf,
  FUSE,
  INSTALL_COMMAND,
  type Layout,
  layout,
  logOf,
  MDS,
  MGR,
  MON,
  MON_ADDRS,
  OSD,
  PORTS,
  readState,
  resolveDir,
  RGW,
  RGW_POOLS,
  S3_BUCKET,
  S3_ENDPOINT,
  S3_REGION,
  type State,
} from "./config.ts";
import { mountFs, mountsUnder, unmountAll } from "./cephfs.ts";
import { cephBatch, clusterProcesses, pidOf, startDaemon, stopDaemons } from "./daemons.ts";
import { CephError } from "./errors.ts";
import { rgwAnswers, startS3 } from "./rgw.ts";
import { writeKeyrings } from "./_keyring.ts";
import { busyPorts, exec, exists, message, onPath, seconds } from "./_process.ts";

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

/**
 * Starts the cluster (or finds it already serving) and returns how to reach it.
 * A directory left by a crash or a failed start is cleaned up first. Progress
 * goes to `options.progress` (stderr by default), never to stdout.
 *
 * @example
 * ```ts ignore
 * import { cephDown, cephUp } from "./mod.ts";
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
 * (SIGTERM, then SIGKILL after a bounded wait; then again whatever a second
 * look still finds, such as a daemon that forked or respawned meanwhile) and
 * removes the directory. Does nothing, successfully, when no cluster is there.
 */
export async function cephDown(options: CephDownOptions = {}): Promise<void> {
  const l = layout(resolveDir(options.dir));
  await teardown(l, options.progress ?? toStderr);
}

/** Whether a cluster in the state directory is up and serving (all daemons, S3, the mount). */
export async function cephServing(options: { dir?: string } = {}): Promise<boolean> {
  return (await servingState(layout(resolveDir(options.dir)))) !== undefined;
}

/** How to reach the cluster in the state directory, or undefined when it is not serving. */
export async function cephEnv(options: { dir?: string } = {}): Promise<CephEnv | undefined> {
  const l = layout(resolveDir(options.dir));
  const s = await servingState(l);
  return s ? envOf(l, s) : undefined;
}

/** What {@linkcode cephStatus} finds. */
export interface CephStatus {
  /** One line per daemon (those stopped but expected too), S3 and the mount. */
  lines: string[];
  /** Whether every expected daemon runs, S3 answers and CephFS is mounted. */
  up: boolean;
}

/** The status of the cluster in the state directory, or undefined when there is no directory. */
export async function cephStatus(options: { dir?: string } = {}): Promise<CephStatus | undefined> {
  const l = layout(resolveDir(options.dir));
  if (!await exists(l.dir)) return undefined;
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

/**
 * Unmounts, stops the daemons, unmounts again (a ceph-fuse that was still
 * mounting when the first look was taken) and removes the directory.
 */
async function teardown(l: Layout, say: (line: string) => void): Promise<void> {
  const t0 = performance.now();
  let mounted = await unmountAll(l);
  const stopped = await stopDaemons(l, say);
  mounted += await unmountAll(l);
  try {
    await Deno.remove(l.dir, { recursive: true });
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) {
      throw new CephError(`cannot remove ${l.dir}: ${message(e)}`, { cause: e });
    }
  }
  if (mounted + stopped > 0) say(`cluster in ${l.dir} is down (${seconds(t0)} s)`);
}

/** The recorded state when every daemon it names is alive, RGW answers and the mount is there. */
async function servingState(l: Layout): Promise<State | undefined> {
  const s = await readState(l);
  if (!s) return undefined;
  for (const d of daemonsOf(s)) if (await pidOf(l, d) === undefined) return undefined;
  if (s.fs && !(await mountsUnder(l)).includes(l.mnt)) return undefined;
  return await rgwAnswers() ? s : undefined;
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

async function requireBinaries(want: { mgr: boolean; fs: boolean }): Promise<void> {
  const bins = ["ceph", "ceph-mon", "monmaptool", "ceph-osd", "radosgw", "radosgw-admin"];
  if (want.mgr) bins.push("ceph-mgr");
  if (want.fs) bins.push("ceph-mds", "ceph-fuse");
  for (const bin of bins) {
    if (!await onPath(bin)) {
      throw new CephError(`${bin} is not installed; run: ${INSTALL_COMMAND}`);
    }
  }
  if (!await onPath("setsid")) throw new CephError("setsid is not installed");
}

/** Fails when something already listens on a port the cluster needs. */
async function requirePortsFree(l: Layout): Promise<void> {
  const busy = await busyPorts(PORTS);
  if (busy.length > 0) {
    throw new CephError(
      `${busy.length > 1 ? "ports" : "port"} ${busy.join(", ")} already in use ` +
        "(another Ceph cluster?); stop it, e.g. " +
        `\`deno run -A tools/services/ceph/main.ts down --dir DIR\`, before starting one in ${l.dir}`,
    );
  }
}

function shellQuote(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
}

function toStderr(line: string): void {
  console.error(`ceph: ${line}`);
}
