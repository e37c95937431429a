/**
 * Starting, finding and stopping the cluster's daemons (mon, mgr, osd, mds,
 * radosgw, ceph-fuse), and running monitor commands.
 *
 * @module
 */

import { basename, join } from "node:path";
import {
  ALL_DAEMONS,
  type Daemon,
  FUSE,
  type Layout,
  logOf,
  MDS,
  MGR,
  MON,
  OSD,
  pidFile,
  RGW,
} from "./config.ts";
import { CephError } from "./errors.ts";
import {
  alive,
  allExited,
  lastLine,
  type Proc,
  processArgv,
  procStat,
  readText,
  run,
  seconds,
  signal,
  sleep,
} from "./_process.ts";

/**
 * How long a daemon may take to exit on SIGTERM before it gets SIGKILL. Its
 * data is deleted right after, so a clean exit buys nothing. radosgw, the OSD
 * and the monitor exit within 0.5 s.
 */
const STOP_GRACE_MS = 5_000;
/** How long a process may take to go after SIGKILL. */
const KILL_WAIT_MS = 5_000;
/**
 * How many times {@linkcode stopDaemons} lists the cluster's processes and
 * stops them: a daemon that forks (daemonizes) while the list is taken, or
 * an MDS that respawns (re-executes itself and forks a new pid, as it does
 * when the monitor drops it from the map), is not in the list it stops.
 */
const STOP_ROUNDS = 3;
/**
 * Daemons stopped with SIGKILL straight away: the MDS takes 3 to 10 s to
 * shut down on SIGTERM and was killed after {@linkcode STOP_GRACE_MS} most
 * of the time anyway, and while it shuts down, a new map from the monitor
 * can make it respawn as a new process.
 */
const KILLED_AT_ONCE = new Set([MDS.bin]);
const DAEMON_BINS = new Set(ALL_DAEMONS.map((d) => d.bin));

/** Options of the functions that stop or start one service of a running cluster. */
export interface CephServiceOptions {
  /** State directory; default `$TIERBENCH_CEPH_DIR`, else `/tmp/tierbench-ceph`. */
  dir?: string;
  /** The signal that stops it: SIGTERM (default) or SIGKILL, as a crash would. */
  signal?: "SIGTERM" | "SIGKILL";
}

/** A process of one of the cluster's daemons. */
export interface DaemonProc extends Proc {
  /** The binary's name, `ceph-mds` … */
  bin: string;
  start: string;
}

/**
 * Starts a daemon in its own session with stdout and stderr appended to
 * `DIR/log/NAME.out`; the daemon forks itself into the background and writes
 * `DIR/run/NAME.pid`. Returns its pid.
 */
export async function startDaemon(l: Layout, d: Daemon, timeoutMs = 60_000): Promise<number> {
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
    if (Number.isSafeInteger(written) && written > 0 && !await alive({ pid: written })) {
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
export async function waitUntil(
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

/** The live process recorded in a daemon's pid file, if it is this cluster's daemon. */
export async function daemonProc(l: Layout, d: Daemon): Promise<DaemonProc | undefined> {
  const text = await readText(pidFile(l, d));
  const pid = Number.parseInt(text.trim(), 10);
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  return await ourProc(l, pid);
}

/** The live pid recorded for a daemon of this cluster, if any. */
export async function pidOf(l: Layout, d: Daemon): Promise<number | undefined> {
  return (await daemonProc(l, d))?.pid;
}

/**
 * Every live process of this cluster's daemons, found by its `-c DIR/ceph.conf`
 * argument (one grep over all command lines, then a check of each match):
 * the pid files name only the last process of each daemon.
 */
export async function clusterProcesses(l: Layout): Promise<DaemonProc[]> {
  const r = await run("sh", ["-c", 'exec grep -lsF -e "$1" /proc/[0-9]*/cmdline', "sh", l.conf]);
  const found: DaemonProc[] = [];
  for (const path of r.stdout.split("\n")) {
    const pid = Number(path.split("/")[2]);
    if (!Number.isSafeInteger(pid) || pid <= 0 || pid === Deno.pid) continue;
    const p = await ourProc(l, pid);
    if (p) found.push(p);
  }
  return found;
}

/** The process `pid` when it is a live daemon of this cluster. */
async function ourProc(l: Layout, pid: number): Promise<DaemonProc | undefined> {
  // The start time first: the argv read after it then belongs to that process or to none.
  const s = await procStat(pid);
  const argv = await processArgv(pid);
  if (s === undefined || argv === undefined) return undefined;
  const bin = basename(argv[0] ?? "");
  if (!DAEMON_BINS.has(bin) || !argv.includes(l.conf)) return undefined;
  return { pid, bin, start: s.start };
}

/**
 * Stops every daemon of the cluster, in waves, each with SIGTERM and, after
 * {@linkcode STOP_GRACE_MS}, SIGKILL (the MDS gets SIGKILL at once). Each
 * wave's shutdown still talks to the next: ceph-fuse closes its MDS session;
 * radosgw and the mgr write to the OSD; the OSD reports to the monitor.
 * Then lists the cluster's processes again and stops what it finds with
 * SIGKILL, up to {@linkcode STOP_ROUNDS} times in all, and fails naming
 * whatever is left. Returns how many processes it stopped.
 */
export async function stopDaemons(l: Layout, say: (line: string) => void): Promise<number> {
  let stopped = 0;
  for (let round = 1; round <= STOP_ROUNDS; round++) {
    const procs = await clusterProcesses(l);
    if (procs.length === 0) return stopped;
    stopped += procs.length;
    if (round === 1) {
      await stopInWaves(procs, say);
      continue;
    }
    say(`${names(procs)} still running after stopping the cluster: sending SIGKILL`);
    await killAll(procs);
  }
  const left = await clusterProcesses(l);
  if (left.length > 0) {
    throw new CephError(
      `${names(left)} still running after stopping the cluster ${STOP_ROUNDS} times; ` +
        `see the logs in ${l.log}`,
    );
  }
  return stopped;
}

async function stopInWaves(procs: DaemonProc[], say: (line: string) => void): Promise<void> {
  const order = [[FUSE], [RGW, MDS, MGR], [OSD], [MON]].map((ds) => ds.map((d) => d.bin));
  const waves = order.map((bins) => procs.filter((p) => bins.includes(p.bin)));
  for (const wave of waves) {
    if (wave.length === 0) continue;
    const t0 = performance.now();
    for (const p of wave) await signal(p, KILLED_AT_ONCE.has(p.bin) ? "SIGKILL" : "SIGTERM");
    if (await allExited(wave, STOP_GRACE_MS)) {
      say(`stopped ${names(wave)} in ${seconds(t0)} s`);
      continue;
    }
    say(
      `${await living(wave)} still running ${
        STOP_GRACE_MS / 1000
      } s after SIGTERM: sending SIGKILL`,
    );
    await killAll(wave);
  }
}

/** Sends SIGKILL to each process and waits until all are gone. */
async function killAll(procs: DaemonProc[]): Promise<void> {
  for (const p of procs) await signal(p, "SIGKILL");
  if (!await allExited(procs, KILL_WAIT_MS)) {
    throw new CephError(`could not stop ${await living(procs)} even with SIGKILL`);
  }
}

/** Stops one daemon of the cluster by its pid file, if it runs. */
export async function stopOne(l: Layout, d: Daemon, sig: "SIGTERM" | "SIGKILL"): Promise<void> {
  const p = await daemonProc(l, d);
  if (p === undefined) return;
  await signal(p, sig);
  if (await allExited([p], STOP_GRACE_MS)) return;
  await killAll([p]);
}

function names(procs: DaemonProc[]): string {
  return procs.map((p) => `${p.bin} (pid ${p.pid})`).join(", ");
}

async function living(procs: DaemonProc[]): Promise<string> {
  const left = [];
  for (const p of procs) if (await alive(p)) left.push(p);
  return names(left);
}

/**
 * Runs many monitor commands through one `ceph` process (its interactive
 * mode reads commands from a non-terminal stdin), which saves a Python start
 * per command. Any `Error …` line fails the batch.
 */
export async function cephBatch(l: Layout, commands: string[]): Promise<void> {
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
