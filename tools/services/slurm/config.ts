/**
 * What a single-node Slurm is made of: the Debian packages it needs, its
 * ports, the files and directories of its scratch directory, its daemons and
 * its slurm.conf.
 *
 * @module
 */

import { join, resolve } from "node:path";
import { SlurmError } from "./errors.ts";
import { logOf, pidFile } from "../service/daemon_files.ts";

/** The Debian packages of the daemons and commands: munged, slurmctld, slurmd, srun. */
export const SLURM_DAEMON_PACKAGES: readonly string[] = [
  "slurmd",
  "slurmctld",
  "slurm-client",
  "munge",
];

/**
 * The Debian packages that hold everything the launcher runs: the daemons,
 * and for `srun --mpi=pmix` libpmix-dev, since Slurm's mpi/pmix plugin
 * dlopens the unversioned libpmix.so, which the runtime package (libpmix2,
 * libpmix2t64 in Debian 13) does not hold; libpmix-dev pulls it in.
 */
export const SLURM_PACKAGES: readonly string[] = [...SLURM_DAEMON_PACKAGES, "libpmix-dev"];

/** The command that installs everything the launcher runs ({@linkcode SLURM_PACKAGES}). */
export const INSTALL_COMMAND = `apt-get install -y --no-install-recommends ${
  SLURM_PACKAGES.join(" ")
}`;

/** The scratch directory used when neither an option nor `$TIERBENCH_SLURM_DIR` names one. */
export const DEFAULT_SLURM_DIR = "/tmp/tierbench-slurm";

/** The scratch directory of the test suite's clusters (one at a time: the ports are fixed). */
export const SLURM_TEST_DIR = "/tmp/tierbench-slurm-tests";

/** slurmctld's port (Slurm's default, 6817, is left to a system Slurm). */
export const SLURMCTLD_PORT = 16817;
/** slurmd's port (Slurm's default, 6818, is left to a system Slurm). */
export const SLURMD_PORT = 16818;
/** Ports the cluster listens on. */
export const PORTS: readonly number[] = [SLURMCTLD_PORT, SLURMD_PORT];
/** The partition every node is in. */
export const PARTITION = "tierbench";

/**
 * The environment variable every daemon of a cluster is started with, set to
 * its scratch directory. Every process they fork (slurmscriptd, slurmstepd)
 * inherits it, which is how `down` finds them all.
 */
export const MARKER_VAR = "TIERBENCH_SLURM_DIR";

/** Longest path a UNIX socket address may hold (sun_path less its NUL). */
const MAX_SOCKET_PATH = 107;
/** The longest suffix slurmd gives a step's socket in its spool directory (`HOST_JOB.STEP`). */
const STEP_SOCKET_SUFFIX = "_4294967294.4294967294".length;

/** The files and directories of one cluster. */
export interface Layout {
  /** The scratch directory (mode 0755: munged's socket must be reachable by all). */
  dir: string;
  /** slurm.conf. */
  conf: string;
  /** Pid files and munged's socket (0755). */
  run: string;
  /** munged's socket. */
  socket: string;
  /** munged's key and seed (0700: munged refuses a key others may read). */
  munge: string;
  /** munged's key. */
  key: string;
  /** The daemons' logs. */
  log: string;
  /** slurmctld's StateSaveLocation. */
  state: string;
  /** slurmd's SlurmdSpoolDir. */
  spool: string;
}

/** The layout of the scratch directory `dir`; fails when its sockets' paths would not fit. */
export function layout(dir: string): Layout {
  const run = join(dir, "run");
  const munge = join(dir, "munge");
  const l: Layout = {
    dir,
    conf: join(dir, "slurm.conf"),
    run,
    socket: join(run, "munge.socket"),
    munge,
    key: join(munge, "munge.key"),
    log: join(dir, "log"),
    state: join(dir, "state"),
    spool: join(dir, "spool"),
  };
  if (
    Math.max(l.socket.length, l.spool.length + 1 + shortHostname().length + STEP_SOCKET_SUFFIX) >
      MAX_SOCKET_PATH
  ) {
    throw new SlurmError(`scratch directory ${dir} is too long for sockets: pick a shorter one`);
  }
  return l;
}

/** The scratch directory: `dir`, else `$TIERBENCH_SLURM_DIR`, else {@linkcode DEFAULT_SLURM_DIR}. */
export function resolveDir(dir: string | undefined): string {
  return resolve(dir ?? Deno.env.get("TIERBENCH_SLURM_DIR") ?? DEFAULT_SLURM_DIR);
}

/** One daemon: its binary, its arguments and its pid and log files. */
export interface Daemon {
  name: "munged" | "slurmctld" | "slurmd";
  args: (l: Layout) => string[];
}

/** The authentication daemon, with its own key, socket, pid file, log and seed. */
export const MUNGED: Daemon = {
  name: "munged",
  args: (l) => [
    `--key-file=${l.key}`,
    `--socket=${l.socket}`,
    `--pid-file=${pidFile(l, MUNGED)}`,
    `--log-file=${logOf(l, MUNGED)}`,
    `--seed-file=${join(l.munge, "munged.seed")}`,
  ],
};
/** The controller. */
export const SLURMCTLD: Daemon = { name: "slurmctld", args: (l) => ["-f", l.conf] };
/** The node daemon. */
export const SLURMD: Daemon = { name: "slurmd", args: (l) => ["-f", l.conf] };
/** The daemons in the order they start (and the reverse of the order they stop). */
export const DAEMONS: readonly Daemon[] = [MUNGED, SLURMCTLD, SLURMD];

export { logOf, pidFile };

/** What the node is: its name and the resources slurm.conf gives it. */
export interface Node {
  /** The short host name (slurmd finds its node by it). */
  name: string;
  /** Cores. */
  cpus: number;
  /** Memory in MiB; a little below the machine's, since slurmd drains a node that has less. */
  realMemoryMiB: number;
}

/** This machine as a node: `hostname`, its cores, 90 % of its memory. */
export async function thisNode(): Promise<Node> {
  const meminfo = await Deno.readTextFile("/proc/meminfo");
  const kib = Number(/^MemTotal:\s+(\d+) kB/m.exec(meminfo)?.[1] ?? "0");
  return {
    name: shortHostname(),
    cpus: Math.max(1, navigator.hardwareConcurrency),
    realMemoryMiB: Math.max(1, Math.floor((kib / 1024) * 0.9)),
  };
}

/** The host name up to its first dot, as slurmd names its node. */
export function shortHostname(): string {
  return Deno.hostname().split(".")[0] || "localhost";
}

/** The cluster's slurm.conf: every path inside the scratch directory, loopback only. */
export function configText(l: Layout, node: Node): string {
  return `# Written by tierbench tools/services/slurm; removed by \`tools/services/slurm/main.ts down\`.
ClusterName=tierbench
SlurmctldHost=${node.name}(127.0.0.1)
SlurmctldPort=${SLURMCTLD_PORT}
SlurmdPort=${SLURMD_PORT}
AuthType=auth/munge
AuthInfo=socket=${l.socket}
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=${l.state}
SlurmdSpoolDir=${l.spool}
SlurmctldPidFile=${pidFile(l, SLURMCTLD)}
SlurmdPidFile=${pidFile(l, SLURMD)}
SlurmctldLogFile=${logOf(l, SLURMCTLD)}
SlurmdLogFile=${logOf(l, SLURMD)}
PlugStackConfig=${join(l.dir, "plugstack.conf")}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
NodeName=${node.name} NodeAddr=127.0.0.1 CPUs=${node.cpus} RealMemory=${node.realMemoryMiB} State=UNKNOWN
PartitionName=${PARTITION} Nodes=${node.name} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
`;
}
