/**
 * `mlp-offload`: MLP-Offload, ZeRO-3 with the optimizer state offloaded over
 * two paths at once (node-local NVMe and a remote PFS or bucket), a host
 * cache that carries subgroups across the pass boundary, and node-wide
 * concurrency control on each path.
 *
 * Each subgroup lives on one path: `remoteRatio` of them (default 1/3, one in
 * three as in its runs) on the remote path, spread evenly (subgroup i is
 * remote when ⌊(i+1)·r⌋ > ⌊i·r⌋), the rest on the first local path.
 *
 * Per rank and iteration:
 * - **backward**: the forward then the backward pass, one think time each.
 *   Gradients stay in host memory: no gradient I/O.
 * - **update**: subgroups in ascending order in even iterations and
 *   descending order in odd ones (iteration 0 ascending). Each path has its
 *   own read and write streams and its own prefetch: the k-th subgroup of a
 *   path in the pass has its params, m and v read (12 B/param) once the
 *   (k−2)-th of that path has computed, so it is read while the (k−1)-th
 *   computes; Adam runs on the CPU (think time); params, m and v are written
 *   back, and a subgroup's update waits until the write of the one two back
 *   on its path is done (two write buffers per path).
 * - **host cache**: the last `cacheSubgroups` subgroups (default 2) of each
 *   path in a pass stay in host memory and are not written back; as the next
 *   pass runs the other way it starts with them, served as `hit` ops
 *   (12 B/param, no I/O) instead of reads. Iteration 0 finds nothing cached.
 *
 * Node-wide, at most one rank reads and one rank writes each path at a time
 * (MLP-Offload's concurrency control), and aio uses 2 MiB blocks at depth 8
 * (its runs: 2 MiB, 4 threads, depth 8) unless `bs`/`iodepth` say otherwise.
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
import {
  adamMs,
  scaledBytes,
  shardParameters,
  subgroupSizes,
  type TrainingSetup,
} from "./setup.ts";

/** States of a subgroup, read and written back by the update (12 B/param in fp32). */
export const MLP_OFFLOAD_STATES = ["params", "m", "v"] as const;
/** 2 MiB: the aio block size of MLP-Offload's runs. */
export const MLP_OFFLOAD_BS = 2 << 20;
/** The aio queue depth of MLP-Offload's runs. */
export const MLP_OFFLOAD_IODEPTH = 8;
/** Default share of subgroups on the remote path: one in three, as in its runs. */
export const MLP_OFFLOAD_REMOTE_RATIO = 1 / 3;
/** Default number of subgroups of each path kept in host memory at the end of a pass. */
export const MLP_OFFLOAD_CACHE_SUBGROUPS = 2;

/** Slack for ratios that are not exact in binary (1/3 · 6 must be 2). */
const EPSILON = 1e-9;

/**
 * Which subgroups live on the remote path: subgroup i does when
 * ⌊(i+1)·ratio⌋ > ⌊i·ratio⌋, which puts ⌊count·ratio⌋ of them there, evenly.
 *
 * @example
 * ```ts
 * import { remoteSubgroups } from "./mlp_offload.ts";
 * console.assert(remoteSubgroups(6, 1 / 3).join() === "false,false,true,false,false,true");
 * ```
 */
export function remoteSubgroups(count: number, ratio: number): boolean[] {
  const at = (i: number) => Math.floor(i * ratio + EPSILON);
  return Array.from({ length: count }, (_, i) => at(i + 1) > at(i));
}

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

/** Iteration `it`'s pass: ascending when even, descending when odd. */
function passOf(it: number, remote: readonly boolean[], cache: Cache): Pass {
  const ascending = remote.map((_, i) => i);
  const orderOf = (n: number) => n % 2 === 0 ? ascending : [...ascending].reverse();
  const order = orderOf(it);
  return {
    order,
    hits: it === 0 ? new Set() : keptBy(orderOf(it - 1), remote, cache),
    kept: keptBy(order, remote, cache),
  };
}

/** The options, checked, with the defaults filled in. */
function resolveOptions(options: WorkloadOptions): { ratio: number; cache: Cache } {
  const ratio = options.remoteRatio ?? MLP_OFFLOAD_REMOTE_RATIO;
  if (!Number.isFinite(ratio) || ratio < 0 || ratio >= 1) {
    throw new ConfigError(
      "remote-ratio",
      `${ratio} is not a share of subgroups: use a number in [0, 1), e.g. 0.33`,
    );
  }
  const local = options.cacheSubgroups ?? MLP_OFFLOAD_CACHE_SUBGROUPS;
  const remote = options.remoteCacheSubgroups ?? local;
  for (
    const [flag, n] of [["cache-subgroups", local], ["remote-cache-subgroups", remote]] as const
  ) {
    if (!Number.isInteger(n) || n < 0) {
      throw new ConfigError(flag, `${n} is not a count: use an integer ≥ 0`);
    }
  }
  return { ratio, cache: { local, remote } };
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
 * console.assert(p.ranks.length === 4 && p.paths.every((path) => path.readers === 1));
 * ```
 */
export const mlpOffload: WorkloadDefinition = {
  name: "mlp-offload",
  summary:
    "MLP-Offload: subgroups over local and remote paths, host cache across passes, one reader and writer per path",
  needs: ["local", "remote"],
  build(
    setup: TrainingSetup,
    paths: WorkloadPaths,
    options: WorkloadOptions = {},
  ): WorkloadProgram {
    const local = requirePath("mlp-offload", "local", paths);
    const { ratio, cache } = resolveOptions(options);
    // with nothing remote, the remote path may be absent (a plan that keeps everything local)
    const remotePath = ratio === 0 && paths.remote === undefined
      ? undefined
      : requirePath("mlp-offload", "remote", paths);
    const limits = { bs: MLP_OFFLOAD_BS, iodepth: MLP_OFFLOAD_IODEPTH, readers: 1, writers: 1 };
    const sizes = subgroupSizes(setup);
    const remote = remoteSubgroups(sizes.length, ratio);
    const names = { local, remote: remotePath ?? local };
    const ranks: RankProgram[] = [];
    for (let r = 0; r < setup.ranksPerNode; r++) {
      ranks.push(rankProgram(r, setup, names, remote, cache));
    }
    const state = (el: number) => scaledBytes(setup, el * setup.bytesPerState);
    const states = MLP_OFFLOAD_STATES.length;
    const derived: Record<string, number | string | boolean> = {
      shard_parameters: shardParameters(setup),
      subgroups_per_rank: sizes.length,
      remote_ratio: ratio,
      subgroups_local: remote.filter((r) => !r).length,
      subgroups_remote: remote.filter((r) => r).length,
      cache_subgroups_per_path: cache.local,
      ...(cache.remote !== cache.local ? { cache_subgroups_remote: cache.remote } : {}),
      host_cache_bytes_per_rank: [...passOf(0, remote, cache).kept]
        .reduce((t, i) => t + states * state(sizes[i]!), 0),
    };
    // bytes of the update per path: iteration 0 (nothing cached) and 1 (the steady state,
    // descending; ascending passes differ only where the smaller last subgroup is cached)
    for (const it of [0, 1]) {
      const pass = passOf(it, remote, cache);
      for (const role of ["local", "remote"] as const) {
        const mine = sizes.map((el, i) => ({ i, el })).filter(({ i }) =>
          remote[i] === (role === "remote")
        );
        const sum = (keep: (i: number) => boolean) =>
          mine.reduce((t, { i, el }) => t + (keep(i) ? states * state(el) : 0), 0);
        derived[`update_${role}_read_bytes_it${it}`] = sum((i) => !pass.hits.has(i));
        derived[`update_${role}_hit_bytes_it${it}`] = sum((i) => pass.hits.has(i));
        derived[`update_${role}_write_bytes_it${it}`] = sum((i) => !pass.kept.has(i));
      }
    }
    return {
      workload: "mlp-offload",
      paths: [
        storagePath(local, "local", options, limits),
        ...(remotePath === undefined ? [] : [
          storagePath(remotePath, "remote", remoteLimits(options), limits),
        ]),
      ],
      ranks,
      warmupIterations: setup.warmupIterations,
      iterations: setup.iterations,
      derived,
      notes: [
        "gradients stay in host memory: the backward phase is think time only",
        "the subgroups cached after the last iteration are not written back",
      ],
    };
  },
};

/** The options with the remote path's own readers and writers, where given, as its limits. */
function remoteLimits(options: WorkloadOptions): WorkloadOptions {
  const { remoteReaders, remoteWriters, ...rest } = options;
  return {
    ...rest,
    ...(remoteReaders !== undefined ? { readers: remoteReaders } : {}),
    ...(remoteWriters !== undefined ? { writers: remoteWriters } : {}),
  };
}

function rankProgram(
  rank: number,
  setup: TrainingSetup,
  names: { readonly local: string; readonly remote: string },
  remote: readonly boolean[],
  cache: Cache,
): RankProgram {
  const b = new ProgramBuilder(rank);
  const sizes = subgroupSizes(setup);
  const state = (el: number) => scaledBytes(setup, el * setup.bytesPerState);
  const pathOf = (i: number) => remote[i] ? names.remote : names.local;
  for (const [i, el] of sizes.entries()) {
    for (const st of MLP_OFFLOAD_STATES) b.initial(pathOf(i), `sg${i}.${st}`, state(el));
  }
  // each phase's barrier waits for the last op of every stream of the phase before
  for (let it = 0; it < totalIterations(setup); it++) {
    // backward: think time only, gradients stay in host memory
    backwardPhase(b, setup, it, { after: b.lastHeld("phase"), whole: true });
    // update: per path, read ahead one subgroup and write behind with two buffers
    const phase = "update";
    const start = b.barrier({ iteration: it, phase, after: b.lastHeld("phase") });
    const pass = passOf(it, remote, cache);
    const computes = new Map<string, number[]>([[names.local, []], [names.remote, []]]);
    const lastWrites = new Map<string, (number | undefined)[]>([
      [names.local, []],
      [names.remote, []],
    ]);
    for (const i of pass.order) {
      const el = sizes[i]!;
      const path = pathOf(i);
      const pathComputes = computes.get(path)!;
      const pathWrites = lastWrites.get(path)!;
      const k = pathComputes.length;
      const ready = [start, pathComputes[k - 2]];
      const inputs = pass.hits.has(i)
        ? [b.add({
          kind: "hit",
          stream: `${path}:read`,
          iteration: it,
          phase,
          path,
          bytes: MLP_OFFLOAD_STATES.length * state(el),
          label: `sg${i}.cached`,
          after: ready,
        })]
        : MLP_OFFLOAD_STATES.map((st) =>
          b.add({
            kind: "read",
            stream: `${path}:read`,
            iteration: it,
            phase,
            path,
            object: `sg${i}.${st}`,
            bytes: state(el),
            label: `sg${i}.${st}`,
            after: ready,
          })
        );
      const c = b.add({
        kind: "compute",
        stream: "compute",
        iteration: it,
        phase,
        ms: adamMs(setup, el),
        label: `sg${i}.adam`,
        after: [...inputs, pathWrites[k - 2]],
      });
      pathComputes.push(c);
      if (pass.kept.has(i)) {
        pathWrites.push(undefined);
        continue;
      }
      let w = c;
      for (const st of MLP_OFFLOAD_STATES) {
        w = b.add({
          kind: "write",
          stream: `${path}:write`,
          iteration: it,
          phase,
          path,
          object: `sg${i}.${st}`,
          bytes: state(el),
          label: `sg${i}.${st}`,
          after: [c],
        });
      }
      pathWrites.push(w);
    }
  }
  return b.build();
}
