/**
 * Bringing a single-node Slurm up and down, and what it looks like from
 * outside: whether it serves, the environment its clients need, one status
 * line per daemon.
 *
 * @module
 */

import { join } from "node:path";
import {
  configText,
  DAEMONS,
  INSTALL_COMMAND,
  type Layout,
  layout,
  logOf,
  PORTS,
  resolveDir,
  SLURMD,
  thisNode,
} from "./config.ts";
import { daemonProc, logTail, slurmProcesses, startDaemon, stopCluster } from "./daemons.ts";
import {
  SlurmError,
  SlurmNotInstalledError,
  SlurmPermissionError,
  SlurmPortInUseError,
  SlurmStartError,
} from "./errors.ts";
import {
  alive,
  busyPorts,
  exists,
  message,
  onPath,
  type Proc,
  run,
  seconds,
  sleep,
} from "./_process.ts";

/** How long the node may take to show as idle once slurmd started. */
const READY_TIMEOUT_MS = 60_000;
/** The binaries `up` needs. */
const BINARIES = ["munged", "slurmctld", "slurmd", "sinfo", "srun"];

/** The environment Slurm's clients (srun, sinfo, squeue …) need to reach the cluster. */
export interface SlurmEnv {
  /** The cluster's slurm.conf. */
  SLURM_CONF: string;
}

/** Options of {@linkcode slurmUp} and {@linkcode slurmDown}. */
export interface SlurmOptions {
  /** Scratch directory; default `$TIERBENCH_SLURM_DIR`, else {@linkcode DEFAULT_SLURM_DIR}. */
  dir?: string;
  /** Receives progress lines; by default they go to stderr. */
  progress?: (line: string) => void;
}

/**
 * Starts munged (with its own key and socket), slurmctld and slurmd for
 * this machine as one node, waits until the node is idle and returns the
 * environment clients need; finds the cluster already serving and returns it
 * at once when it is. A scratch directory left by a crash or a failed start
 * is cleaned up first. Needs root.
 *
 * @example
 * ```ts ignore
 * import { slurmDown, slurmUp } from "./mod.ts";
 * const env = await slurmUp({ dir: "/tmp/my-slurm" });
 * await new Deno.Command("srun", { args: ["-n", "3", "--overcommit", "hostname"], env }).output();
 * await slurmDown({ dir: "/tmp/my-slurm" });
 * ```
 */
export async function slurmUp(options: SlurmOptions = {}): Promise<SlurmEnv> {
  const l = layout(resolveDir(options.dir));
  const say = options.progress ?? toStderr;
  if (Deno.uid() !== 0) {
    throw new SlurmPermissionError("slurmd must run as root: run as root (e.g. with sudo)");
  }
  for (const bin of BINARIES) {
    if (!await onPath(bin)) throw new SlurmNotInstalledError(bin, INSTALL_COMMAND);
  }
  if (await serving(l)) {
    say(`slurm in ${l.dir} is already up`);
    return envOf(l);
  }
  if (await exists(l.dir) || (await slurmProcesses(l.dir)).length > 0) {
    say(`cleaning up the previous slurm in ${l.dir}`);
    await teardown(l, say);
  }
  await requirePortsFree(l);
  const t0 = performance.now();
  try {
    await prepare(l);
    const procs: [string, Proc][] = [];
    for (const d of DAEMONS) procs.push([d.name, await startDaemon(l, d)]);
    const node = await waitIdle(l, procs);
    say(`slurm up in ${seconds(t0)} s: node ${node} idle; logs in ${l.log}`);
    return envOf(l);
  } catch (error) {
    // Keep the directory (and its logs) for a look; `down` or the next `up` removes it.
    await stopCluster(l, () => {}).catch(() => {});
    throw error;
  }
}

/**
 * Stops every process of the cluster in the scratch directory (job steps
 * and their tasks, slurmd, slurmctld, munged: SIGTERM, a bounded wait, then
 * SIGKILL), checks that none is left and removes the directory. Does
 * nothing, successfully, when no cluster is there.
 */
export async function slurmDown(options: SlurmOptions = {}): Promise<void> {
  const l = layout(resolveDir(options.dir));
  await teardown(l, options.progress ?? toStderr);
}

/** The environment of the cluster in the scratch directory, or undefined when it is not serving. */
export async function slurmEnv(options: { dir?: string } = {}): Promise<SlurmEnv | undefined> {
  const l = layout(resolveDir(options.dir));
  return await serving(l) ? envOf(l) : undefined;
}

/** What {@linkcode slurmStatus} finds. */
export interface SlurmStatus {
  /** One line per daemon and one for the node. */
  lines: string[];
  /** Whether every daemon runs and the node is up (idle, mixed or allocated). */
  up: boolean;
}

/** The status of the cluster in the scratch directory, or undefined when there is no directory. */
export async function slurmStatus(
  options: { dir?: string } = {},
): Promise<SlurmStatus | undefined> {
  const l = layout(resolveDir(options.dir));
  if (!await exists(l.dir)) return undefined;
  const lines: string[] = [];
  let up = true;
  for (const d of DAEMONS) {
    const p = await daemonProc(l, d);
    if (p === undefined) up = false;
    lines.push(`${d.name.padEnd(12)} ${p === undefined ? "stopped" : `running, pid ${p.pid}`}`);
  }
  const state = up ? await nodeState(l) : "";
  lines.push(`${"node".padEnd(12)} ${state === "" ? "not answering" : state}`);
  return { lines, up: up && isUp(state) };
}

/** The `export SLURM_CONF=…` line for a POSIX shell's `eval`. */
export function exportLines(env: SlurmEnv): string {
  return `export SLURM_CONF=${shellQuote(env.SLURM_CONF)}`;
}

/** Creates the scratch directory: munge key, slurm.conf, an empty plugstack.conf. */
async function prepare(l: Layout): Promise<void> {
  // munged wants its socket's directory reachable by everyone and its key's private.
  for (const [dir, mode] of [[l.dir, 0o755], [l.run, 0o755], [l.munge, 0o700]] as const) {
    await Deno.mkdir(dir, { recursive: true });
    await Deno.chmod(dir, mode);
  }
  for (const dir of [l.log, l.state, l.spool]) await Deno.mkdir(dir, { recursive: true });
  const key = crypto.getRandomValues(new Uint8Array(1024));
  await Deno.writeFile(l.key, key, { mode: 0o600 });
  await Deno.chmod(l.key, 0o600);
  await Deno.writeTextFile(l.conf, configText(l, await thisNode()));
  // Slurm's default /etc/slurm/plugstack.conf may include a system's SPANK plugins.
  await Deno.writeTextFile(join(l.dir, "plugstack.conf"), "");
}

/** Waits until sinfo shows the node idle; fails naming a daemon that exited or, at last, slurmd. */
async function waitIdle(l: Layout, procs: [string, Proc][]): Promise<string> {
  const node = (await thisNode()).name;
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let state = "";
  for (let delay = 50;; delay = Math.min(delay * 2, 500)) {
    state = await nodeState(l);
    if (state === "idle") return node;
    for (const [name, p] of procs) {
      if (!await alive(p)) {
        const d = DAEMONS.find((x) => x.name === name) ?? SLURMD;
        throw new SlurmStartError(
          name,
          "exited while waiting for the node to become idle",
          logOf(l, d),
          await logTail(l, d),
        );
      }
    }
    if (Date.now() > deadline) {
      throw new SlurmStartError(
        SLURMD.name,
        `started, but node ${node} is not idle after ${READY_TIMEOUT_MS / 1000} s ` +
          `(sinfo: ${state === "" ? "no answer" : state})`,
        logOf(l, SLURMD),
        await logTail(l, SLURMD),
      );
    }
    await sleep(delay);
  }
}

/** The node's state as sinfo prints it (`idle`, `mix`, `down*` …), "" when sinfo fails. */
async function nodeState(l: Layout): Promise<string> {
  try {
    const r = await run("sinfo", ["-h", "-N", "-o", "%t"], {
      env: { SLURM_CONF: l.conf },
      timeoutMs: 10_000,
    });
    return r.code === 0 ? r.stdout.trim().split("\n")[0] ?? "" : "";
  } catch {
    return "";
  }
}

function isUp(state: string): boolean {
  return ["idle", "mix", "alloc"].includes(state);
}

/** Whether every daemon of the cluster in `l` runs and its node is up. */
async function serving(l: Layout): Promise<boolean> {
  if (!await exists(l.conf)) return false;
  for (const d of DAEMONS) if (await daemonProc(l, d) === undefined) return false;
  return isUp(await nodeState(l));
}

/** Stops every process of the cluster and removes its directory. */
async function teardown(l: Layout, say: (line: string) => void): Promise<void> {
  const t0 = performance.now();
  const stopped = await stopCluster(l, say);
  try {
    await Deno.remove(l.dir, { recursive: true });
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) {
      throw new SlurmError(`cannot remove ${l.dir}: ${message(e)}`, { cause: e });
    }
  }
  if (stopped > 0) say(`slurm in ${l.dir} is down (${seconds(t0)} s)`);
}

/** Fails when something already listens on a port the cluster needs. */
async function requirePortsFree(l: Layout): Promise<void> {
  const busy = await busyPorts(PORTS);
  if (busy.length > 0) throw new SlurmPortInUseError(busy, l.dir);
}

function envOf(l: Layout): SlurmEnv {
  return { SLURM_CONF: l.conf };
}

function shellQuote(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
}

function toStderr(line: string): void {
  console.error(`slurm: ${line}`);
}
