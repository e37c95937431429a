/**
 * Starting, finding and stopping a cluster's processes: munged, slurmctld
 * (and the slurmscriptd it forks), slurmd, and the slurmstepd of each job
 * step with the tasks it runs.
 *
 * @module
 */

import { join } from "node:path";
import { type Daemon, type Layout, logOf, MARKER_VAR, MUNGED, pidFile } from "./config.ts";
import { SlurmStartError, SlurmStopError } from "./errors.ts";
import {
  allExited,
  lastLines,
  type Proc,
  procStat,
  readText,
  run,
  running,
  signal,
  sleep,
} from "./_process.ts";

/** How long a daemon may take to exit on SIGTERM before it gets SIGKILL. */
const STOP_GRACE_MS = 5_000;
/** How long a process may take to go after SIGKILL. */
const KILL_WAIT_MS = 5_000;
/** How long a daemon may take to write its pid file after its launcher returned. */
const PID_WAIT_MS = 10_000;
/**
 * How many times {@linkcode stopCluster} lists the cluster's processes and
 * stops them: a step or a task forked while the list was taken is not in it.
 */
const STOP_ROUNDS = 3;
/** How many lines of a log a {@linkcode SlurmStartError} quotes. */
const LOG_LINES = 5;

/** A live process of a cluster. */
export interface SlurmProc extends Proc {
  /** Its command name (`munged`, `slurmctld`, `slurmd`, `slurmstepd`, a task's …). */
  comm: string;
  /** Its session: a step's tasks share their slurmstepd's. */
  sid: number;
}

/** The last lines of a daemon's log, "" when there is none. */
export async function logTail(l: Layout, d: Daemon): Promise<string> {
  const log = lastLines(await readText(logOf(l, d)), LOG_LINES);
  return log !== "" ? log : lastLines(await readText(outOf(l, d)), LOG_LINES);
}

function outOf(l: Layout, d: Daemon): string {
  return join(l.log, `${d.name}.out`);
}

/**
 * Starts a daemon, which forks itself into the background and writes its
 * pid file, with {@linkcode MARKER_VAR} set to the scratch directory and
 * stdout and stderr appended to `DIR/log/NAME.out`. Returns its process.
 */
export async function startDaemon(l: Layout, d: Daemon): Promise<Proc> {
  const r = await run("sh", [
    ...["-c", 'exec "$@" </dev/null >>"$TIERBENCH_SLURM_OUT" 2>&1', "sh"],
    ...[d.name, ...d.args(l)],
  ], { env: { TIERBENCH_SLURM_OUT: outOf(l, d), [MARKER_VAR]: l.dir } });
  if (r.code !== 0) {
    throw new SlurmStartError(
      d.name,
      `failed to start (exit status ${r.code})`,
      logOf(l, d),
      await logTail(l, d),
    );
  }
  const deadline = Date.now() + PID_WAIT_MS;
  while (Date.now() < deadline) {
    const p = await daemonProc(l, d);
    if (p !== undefined) return p;
    // A written pid of a process that is gone means it exited.
    const written = Number.parseInt((await readText(pidFile(l, d))).trim(), 10);
    if (Number.isSafeInteger(written) && written > 0 && !running(await procStatOrDead(written))) {
      throw new SlurmStartError(
        d.name,
        "exited right after starting",
        logOf(l, d),
        await logTail(l, d),
      );
    }
    await sleep(50);
  }
  throw new SlurmStartError(
    d.name,
    `wrote no pid file in ${PID_WAIT_MS / 1000} s`,
    logOf(l, d),
    await logTail(l, d),
  );
}

async function procStatOrDead(pid: number) {
  return await procStat(pid) ?? { comm: "", state: "X", sid: 0, threads: 0, start: "" };
}

/** The live process in a daemon's pid file, if it is this cluster's (it carries the marker). */
export async function daemonProc(l: Layout, d: Daemon): Promise<Proc | undefined> {
  const pid = Number.parseInt((await readText(pidFile(l, d))).trim(), 10);
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  const s = await procStat(pid);
  if (s === undefined || !running(s) || !await marked(pid, l.dir)) return undefined;
  return { pid, start: s.start };
}

/** Whether the process's environment sets {@linkcode MARKER_VAR} to `dir`. */
async function marked(pid: number, dir: string): Promise<boolean> {
  const environ = await readText(`/proc/${pid}/environ`);
  return environ.split("\0").includes(`${MARKER_VAR}=${dir}`);
}

/** The daemons the launcher starts, by command name. */
const DAEMON_COMMS = new Set(["munged", "slurmctld", "slurmd"]);

/** Slurm's daemons, by command name: they all work in the scratch directory's log/. */
const SLURM_COMMS = new Set(["slurmctld", "slurmscriptd", "slurmd", "slurmstepd"]);

/**
 * Every live process of the cluster whose scratch directory is `dir`: those
 * started with {@linkcode MARKER_VAR}` = dir` (munged, slurmctld, slurmd);
 * Slurm daemons working in a directory under `dir` (slurmscriptd and
 * slurmstepd, which overwrite the environment they inherited with their
 * process titles); and the processes in those daemons' sessions (the tasks
 * of job steps). Reads other processes' environments: needs root and
 * --allow-all.
 */
export async function slurmProcesses(dir: string): Promise<SlurmProc[]> {
  const all: SlurmProc[] = [];
  const ours = new Set<SlurmProc>();
  const inside = `${dir.replace(/\/$/, "")}/`;
  for await (const e of Deno.readDir("/proc")) {
    const pid = Number(e.name);
    if (!Number.isSafeInteger(pid) || pid <= 0 || pid === Deno.pid) continue;
    const s = await procStat(pid);
    if (s === undefined || !running(s)) continue;
    const p = { pid, start: s.start, comm: s.comm, sid: s.sid };
    all.push(p);
    const cwd = SLURM_COMMS.has(s.comm)
      ? await Deno.readLink(`/proc/${pid}/cwd`).catch(() => "")
      : "";
    if (cwd.startsWith(inside) || await marked(pid, dir)) ours.add(p);
  }
  // Never the caller's own session (it may have started a daemon without its setsid).
  const self = (await procStat(Deno.pid))?.sid;
  const sessions = new Set(
    [...ours].filter((p) => SLURM_COMMS.has(p.comm) && p.sid !== self).map((p) => p.sid),
  );
  return all.filter((p) => ours.has(p) || sessions.has(p.sid));
}

/**
 * Stops every process of the cluster: the job steps and their tasks with
 * SIGKILL (they are thrown away), then slurmd and slurmctld, then munged,
 * each with SIGTERM and, after {@linkcode STOP_GRACE_MS}, SIGKILL. Then lists
 * the cluster's processes again and kills what it finds, up to
 * {@linkcode STOP_ROUNDS} times in all, and fails naming whatever is left.
 * Returns how many processes it stopped.
 */
export async function stopCluster(l: Layout, say: (line: string) => void): Promise<number> {
  let stopped = 0;
  for (let round = 1; round <= STOP_ROUNDS; round++) {
    const procs = await slurmProcesses(l.dir);
    if (procs.length === 0) return stopped;
    stopped += procs.length;
    if (round > 1) say(`${names(procs)} still running: sending SIGKILL`);
    const steps = procs.filter((p) =>
      round > 1 || !(DAEMON_COMMS.has(p.comm) || p.comm === "slurmscriptd")
    );
    const slurm = procs.filter((p) => !steps.includes(p) && p.comm !== MUNGED.name);
    const munge = procs.filter((p) => !steps.includes(p) && p.comm === MUNGED.name);
    await stopWave(steps, "SIGKILL");
    await stopWave(slurm, "SIGTERM");
    await stopWave(munge, "SIGTERM");
  }
  const left = await slurmProcesses(l.dir);
  if (left.length > 0) throw new SlurmStopError(left.map(name), l.dir);
  return stopped;
}

/**
 * Sends `sig` to the wave's processes and waits; after a bounded wait, kills
 * what is left. SIGTERM goes only to the daemons themselves: slurmctld stops
 * its slurmscriptd, which does not exit on a SIGTERM of its own.
 */
async function stopWave(procs: SlurmProc[], sig: "SIGTERM" | "SIGKILL"): Promise<void> {
  if (procs.length === 0) return;
  for (const p of procs) if (sig === "SIGKILL" || DAEMON_COMMS.has(p.comm)) await signal(p, sig);
  if (await allExited(procs, sig === "SIGKILL" ? KILL_WAIT_MS : STOP_GRACE_MS)) return;
  for (const p of procs) await signal(p, "SIGKILL");
  await allExited(procs, KILL_WAIT_MS);
}

function name(p: SlurmProc): string {
  return `${p.comm} (pid ${p.pid})`;
}

function names(procs: SlurmProc[]): string {
  return procs.map(name).join(", ");
}
