/**
 * `mlp-offload`: MLP-Offload, ZeRO-3 with the optimizer state offloaded over
 * two paths at once (node-local NVMe and a remote PFS or bucket), a host
 * cache that carries subgroups across the pass boundary, and node-wide
 * locks, as the runs behind its published table ran them: the artifact
 * mauryaavinash95/MLP-Offload pins the DataStates/DeepSpeed fork at
 * e00c4d7d, which is not in the fork's public history; what that code did is
 * read off the artifact's logs, the rest off the public work-in-progress
 * branch dist_nvme_opt (7c68c0ae). docs/workloads.md cites the file and line
 * of each rule.
 *
 * Subgroups are DeepSpeed's ({@linkcode swapLayout}: whole parameter
 * partitions accumulated to ≥ sub_group_size, each state swap padded to
 * 1024 × threads bytes). Each lives on one path: subgroup i is remote when
 * i % K == 0 for the fork's integer dist_opt_ratio K (`distOptRatio`,
 * default 3: a third remote, subgroups 0, 3, 6, …). A plan's share s of
 * remote subgroups (`remoteRatio`) places subgroup i remote when
 * ⌈(i+1)·s⌉ > ⌈i·s⌉: the same rule for s = 1/K, and ⌈n·s⌉ of the n
 * subgroups for any other share.
 *
 * Per rank and iteration:
 * - **backward**: the forward then the backward pass, one think time each.
 *   Gradients stay in host memory (its runs' grad skip): no gradient I/O.
 * - **update**: subgroups in ascending order in even iterations and
 *   descending order in odd ones (iteration 0 ascending; the logs' "Updating
 *   in order" lines), in one loop over both paths, each path with the
 *   pipelined swapper (its runs set pipeline_read/write): subgroup i on path
 *   P waits for its read, issues the read of the next subgroup on P, runs
 *   Adam (think time), then waits for the previous write on P and issues its
 *   own write (waiting for it too when no later subgroup on P is written in
 *   the pass). Because that wait is in the one loop, a slow write on one path
 *   holds up the subgroups of the other (the coupled swap-out loop).
 * - **host cache**: the last {@linkcode cacheOfBufferCount} subgroups of each
 *   path in a pass stay in host memory and are not written back —
 *   buffer_count // 3 with the gradients in host memory (p, m, v: 8 of the
 *   logged 25 buffers; the logs' 66 writes per pass of 82 subgroups at 70B),
 *   buffer_count // 4 − 1 when they are swapped (`bufferCount`, default 25);
 *   the next pass runs the other way and starts with them, served as `hit`
 *   ops (12 B/param, no I/O). Iteration 0 finds nothing cached.
 * - **locks**: two node-wide locks, one for reads and one for writes, shared
 *   by both paths and by every rank and process of the node (flock on files
 *   under /dev/shm, as the fork's fasteners locks). By default only
 *   subgroups of the remote path take them, as its logs enable one-at-a-time
 *   on the PFS swapper only (`locks`: `both`, `none`). What a lock covers
 *   (`lockScope`): `wait-issue` (default, the public branch's code) — a
 *   subgroup holds the read lock while it waits for its read and issues the
 *   next, the write lock while it waits for the previous write and issues
 *   its own, the transfers themselves outside; `transfer` — a subgroup holds
 *   the read lock from issuing its read to its end (no read ahead) and the
 *   write lock from issuing its write to its end, so one rank at a time moves
 *   data on a locked path ("single process flush/fetch from a tier at a
 *   time", the artifact's launch script).
 *
 * aio 2 MiB blocks, depth 8 and 4 threads per handle (its runs) unless
 * `bs`/`iodepth`/`threads` say otherwise.
 *
 * @module
 */

import { ConfigError } from "../core/errors.ts";
import {
  backwardPhase,
  requirePath,
  storagePath,
  totalIterations,
  type WorkloadDefinition,
  type WorkloadOptions,
  type WorkloadPaths,
} from "./common.ts";
import { ProgramBuilder, type RankProgram, type WorkloadProgram } from "./ops.ts";
import { alignedElements, shardParameters, type TrainingSetup } from "./setup.ts";
import { swapLayout, type SwapSubgroup } from "./zero_infinity.ts";
import { adamStep, openPhase, type Step, transferStates } from "./_steps.ts";

/** States of a subgroup, read and written back by the update (12 B/param in fp32). */
export const MLP_OFFLOAD_STATES = ["params", "m", "v"] as const;
/** 2 MiB: the aio block size of MLP-Offload's runs. */
export const MLP_OFFLOAD_BS = 2 << 20;
/** The aio queue depth of MLP-Offload's runs. */
export const MLP_OFFLOAD_IODEPTH = 8;
/** The aio threads per handle of MLP-Offload's runs (thread_count 4). */
export const MLP_OFFLOAD_THREADS = 4;
/** The fork's dist_opt_ratio of its runs: subgroup i is remote when i % 3 == 0. */
export const MLP_OFFLOAD_DIST_OPT_RATIO = 3;
/** offload_optimizer.buffer_count its runs log (25 in most; 64/56/50/36 in the ZeRO-3 sweeps). */
export const MLP_OFFLOAD_LOGGED_BUFFER_COUNT = 25;
/** Its default share of remote subgroups: 1 / dist_opt_ratio. */
export const MLP_OFFLOAD_REMOTE_RATIO = 1 / MLP_OFFLOAD_DIST_OPT_RATIO;
/** Which paths take the node-wide locks: as its runs, the remote (PFS) one only. */
export const MLP_OFFLOAD_LOCKS = "remote";
/** What its locks cover, as the public branch's code has them: waiting and issuing. */
export const MLP_OFFLOAD_LOCK_SCOPE = "wait-issue";
/** The scopes a lock may have: see the module documentation. */
export const MLP_OFFLOAD_LOCK_SCOPES = ["wait-issue", "transfer"] as const;
/** What a node-wide lock covers. */
export type LockScope = (typeof MLP_OFFLOAD_LOCK_SCOPES)[number];

/** Slack for shares that are not exact in binary (3 · 1/3 must be 1). */
const EPSILON = 1e-9;

/**
 * Which subgroups live on the remote path for a share `share` of them:
 * subgroup i does when ⌈(i+1)·share⌉ > ⌈i·share⌉, which puts ⌈count·share⌉
 * there, evenly, starting with subgroup 0. For share 1/K that is the fork's
 * i % K == 0.
 *
 * @example
 * ```ts
 * import { remoteSubgroups } from "./mlp_offload.ts";
 * console.assert(remoteSubgroups(6, 1 / 3).join() === "true,false,false,true,false,false");
 * ```
 */
export function remoteSubgroups(count: number, share: number): boolean[] {
  const at = (i: number) => Math.ceil(i * share - EPSILON);
  return Array.from({ length: count }, (_, i) => at(i + 1) > at(i));
}

/**
 * The host cache per path of `bufferCount` pinned buffers: buffer_count // 3
 * with the gradients in host memory (one buffer each for p, m, v: what the
 * artifact's logs show, 25 → 8, 28 → 9, 18 → 6), buffer_count // 4 − 1 when
 * they are swapped (p, m, v, g: the public branch's rule).
 *
 * @example
 * ```ts
 * import { cacheOfBufferCount } from "./mlp_offload.ts";
 * console.assert(cacheOfBufferCount(25) === 8 && cacheOfBufferCount(25, true) === 5);
 * ```
 */
export function cacheOfBufferCount(bufferCount: number, swapGradients = false): number {
  if (!swapGradients) return Math.floor(bufferCount / 3);
  return Math.max(0, Math.floor(bufferCount / 4) - 1);
}

/** Its default host cache per path: buffer_count // 3 of the logged 25 buffers, 8. */
export const MLP_OFFLOAD_CACHE_SUBGROUPS: number = cacheOfBufferCount(
  MLP_OFFLOAD_LOGGED_BUFFER_COUNT,
);

/** What one update pass does with each subgroup. */
interface Pass {
  /** Subgroups in the order they are updated. */
  readonly order: readonly number[];
  /** Subgroups served from host memory (kept by the previous pass). */
  readonly hits: ReadonlySet<number>;
  /** Subgroups kept in host memory at the end of this pass (not written back). */
  readonly kept: ReadonlySet<number>;
}

/** Subgroups of each path kept in host memory at the end of a pass. */
interface Cache {
  readonly local: number;
  readonly remote: number;
}

/** The subgroups a pass in this order leaves in host memory: the last few of each path. */
function keptBy(order: readonly number[], remote: readonly boolean[], cache: Cache): Set<number> {
  const kept = new Set<number>();
  for (const onRemote of [false, true]) {
    const onPath = order.filter((i) => remote[i] === onRemote);
    const n = onRemote ? cache.remote : cache.local;
    for (const i of onPath.slice(Math.max(0, onPath.length - n))) kept.add(i);
  }
  return kept;
}

/** Iteration `it`'s pass over the swapped subgroups `ids`: ascending when even, descending when odd. */
function passOf(
  it: number,
  ids: readonly number[],
  remote: readonly boolean[],
  cache: Cache,
): Pass {
  const orderOf = (n: number) => n % 2 === 0 ? ids : [...ids].reverse();
  const order = orderOf(it);
  return {
    order,
    hits: it === 0 ? new Set() : keptBy(orderOf(it - 1), remote, cache),
    kept: keptBy(order, remote, cache),
  };
}

/** mlp-offload's knobs, resolved. */
interface Settings {
  /** Share of subgroups on the remote path. */
  readonly share: number;
  /** The fork's integer dist_opt_ratio, when the share is 1/K (or 0). */
  readonly distOptRatio: number | undefined;
  readonly bufferCount: number;
  readonly cache: Cache;
  readonly locks: "remote" | "both" | "none";
  readonly lockScope: LockScope;
  readonly threads: number;
  /** Gradients written in backward and read in the update (else kept in host memory). */
  readonly swapGradients: boolean;
}

/** The options, checked, with the defaults filled in. */
function resolveOptions(options: WorkloadOptions): Settings {
  let share: number;
  let distOptRatio: number | undefined;
  if (options.distOptRatio !== undefined || options.remoteRatio === undefined) {
    const k = options.distOptRatio ?? MLP_OFFLOAD_DIST_OPT_RATIO;
    if (!Number.isInteger(k) || k < 0) {
      throw new ConfigError(
        "remote-ratio",
        `${k} is not the fork's dist_opt_ratio: use an integer K ≥ 0 (subgroup i is remote when i % K == 0; 0 for none)`,
      );
    }
    distOptRatio = k;
    share = k === 0 ? 0 : 1 / k;
  } else {
    share = options.remoteRatio;
    if (!Number.isFinite(share) || share < 0 || share > 1) {
      throw new ConfigError("remote-ratio", `${share} is not a share of subgroups in [0, 1]`);
    }
    const k = share === 0 ? 0 : Math.round(1 / share);
    if (k === 0 || Math.abs(share - 1 / k) < EPSILON) distOptRatio = k;
  }
  const bufferCount = options.bufferCount ?? MLP_OFFLOAD_LOGGED_BUFFER_COUNT;
  if (!Number.isInteger(bufferCount) || bufferCount < 1) {
    throw new ConfigError("buffer-count", `${bufferCount} is not an integer ≥ 1`);
  }
  const swapGradients = options.swapGradients === true;
  const local = options.cacheSubgroups ?? cacheOfBufferCount(bufferCount, swapGradients);
  const remote = options.remoteCacheSubgroups ?? local;
  for (
    const [flag, n] of [["cache-subgroups", local], ["remote-cache-subgroups", remote]] as const
  ) {
    if (!Number.isInteger(n) || n < 0) {
      throw new ConfigError(flag, `${n} is not a count: use an integer ≥ 0`);
    }
  }
  const threads = options.threads ?? MLP_OFFLOAD_THREADS;
  if (!Number.isInteger(threads) || threads < 1) {
    throw new ConfigError("threads", `${threads} is not an integer ≥ 1`);
  }
  const locks = options.locks ?? MLP_OFFLOAD_LOCKS;
  if (!["remote", "both", "none"].includes(locks)) {
    throw new ConfigError("locks", `"${locks}" is not one of remote, both, none`);
  }
  const lockScope = options.lockScope ?? MLP_OFFLOAD_LOCK_SCOPE;
  if (!(MLP_OFFLOAD_LOCK_SCOPES as readonly string[]).includes(lockScope)) {
    throw new ConfigError(
      "lock-scope",
      `"${lockScope}" is not one of ${MLP_OFFLOAD_LOCK_SCOPES.join(", ")}`,
    );
  }
  return {
    share,
    distOptRatio,
    bufferCount,
    cache: { local, remote },
    locks,
    lockScope,
    threads,
    swapGradients,
  };
}

/**
 * Builds the mlp-offload programs.
 *
 * @example
 * ```ts
 * import { mlpOffload } from "./mlp_offload.ts";
 * import { resolveSetup } from "./setup.ts";
 * const p = mlpOffload.build(resolveSetup({ model: "7b", scale: 0.001 }), {
 *   local: ["local"],
 *   remote: "remote",
 * });
 * console.assert(p.ranks.length === 4 && p.paths.every((path) => path.threads === 4));
 * ```
 */
export const mlpOffload: WorkloadDefinition = {
  name: "mlp-offload",
  summary:
    "MLP-Offload: subgroups over local and remote paths, host cache across passes, node-wide read and write locks",
  needs: ["local", "remote"],
  build(
    setup: TrainingSetup,
    paths: WorkloadPaths,
    options: WorkloadOptions = {},
  ): WorkloadProgram {
    const local = requirePath("mlp-offload", "local", paths);
    const settings = resolveOptions(options);
    // with nothing remote, the remote path may be absent (a plan that keeps everything local)
    const remotePath = settings.share === 0 && paths.remote === undefined
      ? undefined
      : requirePath("mlp-offload", "remote", paths);
    const policyOf = { bs: MLP_OFFLOAD_BS, iodepth: MLP_OFFLOAD_IODEPTH };
    const layout = swapLayout(setup, {
      pipeline: true,
      threads: settings.threads,
      bufferCount: settings.bufferCount,
      blockSize: options.bs ?? MLP_OFFLOAD_BS,
    });
    const remote = remoteSubgroups(layout.length, settings.share);
    const names = { local, remote: remotePath ?? local };
    const ranks: RankProgram[] = [];
    for (let r = 0; r < setup.ranksPerNode; r++) {
      ranks.push(rankProgram(r, setup, names, layout, remote, settings));
    }
    const threaded = { ...options, threads: settings.threads };
    return {
      workload: "mlp-offload",
      paths: [
        storagePath(local, "local", threaded, policyOf),
        ...(remotePath === undefined
          ? []
          : [storagePath(remotePath, "remote", remoteLimits(threaded), policyOf)]),
      ],
      ranks,
      warmupIterations: setup.warmupIterations,
      iterations: setup.iterations,
      derived: {
        ...derivedOf(setup, layout, remote, settings),
        ...updateBytesOf(layout, remote, settings),
      },
      notes: notesOf(settings),
    };
  },
};

/** The program's derived figures: subgroups, their paths, the host cache, locks. */
function derivedOf(
  setup: TrainingSetup,
  layout: readonly SwapSubgroup[],
  remote: readonly boolean[],
  settings: Settings,
): Record<string, number | string | boolean> {
  const ids = layout.filter((sg) => sg.swapped).map((sg) => sg.index);
  const states = MLP_OFFLOAD_STATES.length;
  return {
    shard_parameters: shardParameters(setup),
    subgroups_per_rank: layout.length,
    subgroup_grouping: "whole parameter partitions accumulated to >= sub_group_size (stage3.py)",
    subgroup_elements_min: Math.min(...layout.map((sg) => sg.elements)),
    subgroup_elements_max: Math.max(...layout.map((sg) => sg.elements)),
    subgroups_in_host_memory: layout.length - ids.length,
    swap_alignment_elements: alignedElements(1, setup.bytesPerState, settings.threads),
    remote_rule: settings.distOptRatio !== undefined
      ? `i % ${settings.distOptRatio} == 0`
      : "ceil((i+1)*share) > ceil(i*share)",
    ...(settings.distOptRatio !== undefined ? { dist_opt_ratio: settings.distOptRatio } : {}),
    remote_ratio: settings.share,
    subgroups_local: remote.filter((r) => !r).length,
    subgroups_remote: remote.filter((r) => r).length,
    buffer_count: settings.bufferCount,
    cache_subgroups_per_path: settings.cache.local,
    ...(settings.cache.remote !== settings.cache.local
      ? { cache_subgroups_remote: settings.cache.remote }
      : {}),
    cache_rule: settings.swapGradients ? "buffer_count // 4 - 1" : "buffer_count // 3",
    host_cache_bytes_per_rank: [...passOf(0, ids, remote, settings.cache).kept]
      .reduce((t, i) => t + states * layout[i]!.stateBytes, 0),
    locks: settings.locks,
    lock_scope: settings.lockScope,
    threads: settings.threads,
    gradients: settings.swapGradients ? "swapped" : "host",
  };
}

/**
 * Bytes of the update per path: iteration 0 (nothing cached) and 1 (the steady state,
 * descending; ascending passes differ only where the smaller last subgroup is cached).
 */
function updateBytesOf(
  layout: readonly SwapSubgroup[],
  remote: readonly boolean[],
  settings: Settings,
): Record<string, number> {
  const ids = layout.filter((sg) => sg.swapped).map((sg) => sg.index);
  const states = MLP_OFFLOAD_STATES.length;
  const derived: Record<string, number> = {};
  for (const it of [0, 1]) {
    const pass = passOf(it, ids, remote, settings.cache);
    for (const role of ["local", "remote"] as const) {
      const mine = ids.filter((i) => remote[i] === (role === "remote"));
      const sum = (keep: (i: number) => boolean) =>
        mine.reduce((t, i) => t + (keep(i) ? states * layout[i]!.stateBytes : 0), 0);
      derived[`update_${role}_read_bytes_it${it}`] = sum((i) => !pass.hits.has(i));
      derived[`update_${role}_hit_bytes_it${it}`] = sum((i) => pass.hits.has(i));
      derived[`update_${role}_write_bytes_it${it}`] = sum((i) => !pass.kept.has(i));
      if (settings.swapGradients) {
        // every subgroup's gradients come back from its path, cached state or not
        derived[`update_${role}_gradient_read_bytes_it${it}`] = sum(() => true) / states;
      }
    }
  }
  return derived;
}

/** What the program leaves out or assumes, in words. */
function notesOf(settings: Settings): string[] {
  return [
    settings.swapGradients
      ? "gradients swapped: each subgroup's written to its path after the backward pass, read back with its state in the update"
      : "gradients stay in host memory: the backward phase is think time only",
    "the subgroups cached after the last iteration are not written back",
    settings.locks === "none"
      ? "no node-wide locks"
      : `node-wide locks on ${settings.locks === "both" ? "both paths" : "the remote path"}, ` +
        (settings.lockScope === "transfer"
          ? "each held for a whole transfer (lock scope transfer)"
          : "each held while waiting for one transfer and issuing the next (lock scope wait-issue)"),
  ];
}

/** The options with the remote path's own readers and writers, where given, as its limits. */
function remoteLimits(options: WorkloadOptions): WorkloadOptions {
  const { remoteReaders, remoteWriters, ...rest } = options;
  return {
    ...rest,
    ...(remoteReaders !== undefined ? { readers: remoteReaders } : {}),
    ...(remoteWriters !== undefined ? { writers: remoteWriters } : {}),
  };
}

/** What every phase of one rank's program needs. */
interface RankContext {
  readonly b: ProgramBuilder;
  readonly setup: TrainingSetup;
  readonly layout: readonly SwapSubgroup[];
  readonly remote: readonly boolean[];
  readonly settings: Settings;
  /** The swapped subgroups, ascending. */
  readonly ids: readonly number[];
  /** The path subgroup i lives on. */
  pathOf(i: number): string;
  /** Whether subgroup i's transfers take the node-wide locks. */
  locked(i: number): boolean;
  /** Lock scope transfer: a locked subgroup's transfers start and end inside its lock. */
  whole(i: number): boolean;
}

function rankProgram(
  rank: number,
  setup: TrainingSetup,
  names: { readonly local: string; readonly remote: string },
  layout: readonly SwapSubgroup[],
  remote: readonly boolean[],
  settings: Settings,
): RankProgram {
  const b = new ProgramBuilder(rank);
  const locked = (i: number) =>
    settings.locks === "both" || (settings.locks === "remote" && remote[i]! &&
      names.remote !== names.local);
  const c: RankContext = {
    b,
    setup,
    layout,
    remote,
    settings,
    ids: layout.filter((sg) => sg.swapped).map((sg) => sg.index),
    pathOf: (i) => remote[i] ? names.remote : names.local,
    locked,
    whole: (i) => settings.lockScope === "transfer" && locked(i),
  };
  for (const i of c.ids) {
    for (const st of MLP_OFFLOAD_STATES) {
      b.initial(c.pathOf(i), `sg${i}.${st}`, layout[i]!.stateBytes);
    }
  }
  // each phase's barrier waits for the last op of every stream of the phase before
  for (let it = 0; it < totalIterations(setup); it++) {
    backwardOps(c, it);
    updateOps(c, it);
  }
  return b.build();
}

/** Backward: think time, then (when swapped) each subgroup's gradients out to its path. */
function backwardOps(c: RankContext, it: number): void {
  const { b, setup, layout } = c;
  const backward = backwardPhase(b, setup, it, { after: b.lastHeld("phase"), whole: true });
  if (!c.settings.swapGradients) return;
  const s = { b, it, phase: "backward" };
  for (const i of c.ids) {
    transferStates(s, "write", c.pathOf(i), i, ["grad"], layout[i]!.stateBytes, [backward]);
  }
}

/** The next subgroup of the same path in this pass, per subgroup. */
function nextOnPathOf(c: RankContext, order: readonly number[]): Map<number, number> {
  const nextOnPath = new Map<number, number>();
  for (const [k, i] of order.entries()) {
    const j = order.slice(k + 1).find((x) => c.pathOf(x) === c.pathOf(i));
    if (j !== undefined) nextOnPath.set(i, j);
  }
  return nextOnPath;
}

/**
 * The update: Adam over the subgroups in host memory, then the swapped ones
 * in this pass's order, each swapped in (or found cached), updated, its next
 * one on the same path read ahead, and swapped out unless the pass keeps it.
 */
function updateOps(c: RankContext, it: number): void {
  const { b, setup, layout, settings } = c;
  const phase = "update";
  const s = { b, it, phase };
  const start = openPhase(b, it, phase);
  const pass = passOf(it, c.ids, c.remote, settings.cache);
  const swappedIn = settings.swapGradients ? [...MLP_OFFLOAD_STATES, "grad"] : MLP_OFFLOAD_STATES;
  const io = (kind: "read" | "write", i: number, deps: (number | undefined)[]) =>
    transferStates(
      s,
      kind,
      c.pathOf(i),
      i,
      kind === "read" ? swappedIn : MLP_OFFLOAD_STATES,
      layout[i]!.stateBytes,
      deps,
    );
  const lock = (i: number, name: string, unlock: boolean, deps: (number | undefined)[] = []) =>
    b.add({
      kind: unlock ? "unlock" : "lock",
      stream: "compute",
      iteration: it,
      phase,
      lock: name,
      label: `sg${i}.${unlock ? "unlock" : "lock"}.${name}`,
      after: deps,
    });
  const nextOnPath = nextOnPathOf(c, pass.order);
  // reads issued ahead (the pipelined swapper's async read), per subgroup
  const issued = new Map<number, number[]>();
  // per path: the last write issued and not yet waited for
  const pending = new Map<string, number | undefined>();
  // what the loop waited for in the step before, outside a lock (the coupled loop)
  let carried: (number | undefined)[] = [start];
  for (const i of [...layout.keys()]) {
    if (layout[i]!.swapped) continue;
    // in host memory: Adam only, before the swapped ones (the loop order does not matter here)
    adamStep(s, setup, i, layout[i]!.elements, { after: [start] });
  }
  for (const i of pass.order) {
    const path = c.pathOf(i);
    const el = layout[i]!;
    const withLock = c.locked(i);
    // swap-in: (read lock) wait for this subgroup's read, issue the next one's
    const l = withLock ? lock(i, "read", false, carried) : undefined;
    const anchor = l === undefined ? carried : [l];
    const inputs = pass.hits.has(i)
      ? cachedInputs(c, s, i, anchor)
      : issued.get(i) ?? io("read", i, anchor);
    const u = withLock ? lock(i, "read", true, inputs) : undefined;
    const adam = adamStep(s, setup, i, el.elements, {
      after: [...(u === undefined ? carried : [u]), ...inputs],
    });
    // a cached subgroup is not swapped in, so it issues no read ahead either
    const next = nextOnPath.get(i);
    if (next !== undefined && !pass.hits.has(next) && !pass.hits.has(i) && !c.whole(next)) {
      issued.set(next, io("read", next, [...anchor, inputs.at(-1)]));
    }
    // swap-out: (write lock) wait for the previous write on this path, issue this one
    if (pass.kept.has(i)) {
      carried = [adam];
      continue;
    }
    const lw = withLock ? lock(i, "write", false, [adam]) : undefined;
    const before = pending.get(path);
    const last = io("write", i, [lw ?? adam, before]).at(-1)!;
    const asynchronous = next !== undefined && !pass.kept.has(next) && !c.whole(i);
    pending.set(path, asynchronous ? last : undefined);
    const waited = [before, asynchronous ? undefined : last];
    carried = lw !== undefined ? [lock(i, "write", true, waited)] : [adam, ...waited];
  }
}

/** A subgroup the last pass kept in host memory: a cache hit (and its gradients read, when swapped). */
function cachedInputs(
  c: RankContext,
  s: Step,
  i: number,
  anchor: readonly (number | undefined)[],
): number[] {
  const path = c.pathOf(i);
  const el = c.layout[i]!;
  const grad = c.settings.swapGradients
    ? transferStates(s, "read", path, i, ["grad"], el.stateBytes, anchor)
    : [];
  return [
    ...grad,
    s.b.add({
      kind: "hit",
      stream: `${path}:read`,
      iteration: s.it,
      phase: s.phase,
      path,
      bytes: MLP_OFFLOAD_STATES.length * el.stateBytes,
      label: `sg${i}.cached`,
      after: anchor,
    }),
  ];
}
