/**
 * The public contract of a multi-process run: which launcher started this
 * process, who the other processes are, and the few collective steps
 * tierbench needs (a barrier before each measured phase, a gather of result
 * bytes to one process, a broadcast of the run id). Commands use
 * {@linkcode Group} and never care whether MPI or the TCP rendezvous carries
 * it.
 *
 * @module
 */

/**
 * The timeout of a step that has no deadline: the longest delay a timer
 * keeps (2^31 − 1 ms, about 24.8 days; a longer one would fire at once). A
 * lost member still ends such a step at once.
 */
export const NO_DEADLINE_MS = 2 ** 31 - 1;

/** What started this process, read from its environment. */
export type LauncherKind = "none" | "openmpi" | "mpich" | "slurm" | "torchrun";

/** How the group's messages travel. */
export type TransportKind = "single" | "mpi" | "tcp";

/** The launcher's view of this process, before any message is exchanged. */
export interface LaunchInfo {
  readonly launcher: LauncherKind;
  readonly transport: TransportKind;
  /** 0-based rank of this process among all processes. */
  readonly rank: number;
  /** Number of processes. */
  readonly size: number;
  /** Rank among the processes of the same node. */
  readonly localRank: number;
  /**
   * The node this process counts as: the host name, or `<host>#<rank>` when
   * TIERBENCH_NODE_PER_RANK=1 makes every process a node of its own (how the
   * tests run N "nodes" on one machine).
   */
  readonly node: string;
  /** tcp only: where rank 0 listens (MASTER_ADDR:MASTER_PORT or derived from Slurm's). */
  readonly address?: { readonly host: string; readonly port: number };
}

/** One process of the group, as it introduced itself when the group formed. */
export interface Member {
  readonly rank: number;
  readonly node: string;
  /** The machine's host name (the same for every rank of one machine). */
  readonly host: string;
  readonly pid: number;
  /** tierbench's version; a group whose members differ is refused at start. */
  readonly version: string;
}

/**
 * The processes of one run. A single process (no launcher) is a group of
 * one whose steps return at once, so commands need no second code path.
 *
 * Every step takes a timeout: a member that does not arrive in time fails the
 * step with {@linkcode import("./errors.ts").RankTimeoutError} naming it; a member whose process
 * or connection is gone fails it with {@linkcode import("./errors.ts").RankLostError}.
 */
export interface Group extends AsyncDisposable {
  readonly info: LaunchInfo;
  readonly rank: number;
  readonly size: number;
  /** Every member, by rank, as known when the group formed. */
  readonly members: readonly Member[];
  /** The rank that gathers (0, or the lowest live rank once rank 0 is lost). */
  readonly root: number;
  /**
   * Aborted, with a {@linkcode import("./errors.ts").RankLostError} as its reason, as soon as any
   * member is known to be lost, so a measured phase stops without waiting
   * for its next step.
   */
  readonly lost: AbortSignal;
  /**
   * Stonewalling for the measured phase `phase` (IOR's: stop everyone when
   * the first is done): `signal` aborts as soon as any member calls
   * `finished()` for the same phase name.
   */
  stonewall(phase: string): { readonly signal: AbortSignal; finished(): void };
  /** Resolves when every member has arrived at the barrier named `phase`. */
  barrier(phase: string, timeoutMs: number): Promise<void>;
  /**
   * Sends `bytes` to the root. The root gets every member's bytes by rank
   * (its own included); the others get undefined.
   */
  gather(bytes: Uint8Array, timeoutMs: number): Promise<Uint8Array[] | undefined>;
  /** The root's `bytes`, on every member (what the others pass is ignored). */
  broadcast(bytes: Uint8Array, timeoutMs: number): Promise<Uint8Array>;
}
