/**
 * What the workload generators share: the paths a workload may use, its
 * options, the forward/backward think time of an iteration, and the backward
 * phase of the ZeRO-3 offloading workloads ({@linkcode backwardPhase}).
 *
 * @module
 */

import type { DeepSpeedConfig } from "./deepspeed_config.ts";
import { layerForwardFlops } from "./model.ts";
import type { PathPolicy, PathRole, ProgramBuilder, WorkloadProgram } from "./ops.ts";
import { gpuMs, scaledBytes, shardParameters, subgroupSizes, type TrainingSetup } from "./setup.ts";

/** Names of the paths a run has, by role (from `--tiers`). */
export interface WorkloadPaths {
  /** The memory tier: host buffers, and the device stand-in without a GPU. */
  readonly host?: string;
  /** File tiers on node-local storage, in the order given. */
  readonly local: readonly string[];
  /** A PFS directory or an S3 bucket. */
  readonly remote?: string;
}

/** Options every workload reads; each reads only those that apply to it. */
export interface WorkloadOptions {
  /** Request size on storage paths (default: the workload's, e.g. DeepSpeed's 1 MiB). */
  readonly bs?: number;
  /** Requests in flight per stream (default: the workload's, e.g. DeepSpeed's 8). */
  readonly iodepth?: number;
  /** Node-wide: at most this many ranks read a storage path at once (0: no limit). */
  readonly readers?: number;
  /** Node-wide: at most this many ranks write a storage path at once (0: no limit). */
  readonly writers?: number;
  /** mlp-offload: readers of the remote path alone (default: `readers`; 0: no limit). */
  readonly remoteReaders?: number;
  /** mlp-offload: writers of the remote path alone (default: `writers`; 0: no limit). */
  readonly remoteWriters?: number;
  /**
   * mlp-offload: swap the fp32 gradients (written to each subgroup's path in
   * backward, read back with its state in the update), as a plan does when
   * they do not fit in host memory; by default they stay there (the runs'
   * grad skip).
   */
  readonly swapGradients?: boolean;
  /**
   * mlp-offload: share of subgroups on the remote path, in [0, 1] (a plan's
   * split): subgroup i is remote when ⌈(i+1)·share⌉ > ⌈i·share⌉, which is the
   * fork's i % K == 0 for share 1/K. {@linkcode distOptRatio} wins when both are given.
   */
  readonly remoteRatio?: number;
  /**
   * mlp-offload: the fork's integer dist_opt_ratio K: subgroup i is remote
   * when i % K == 0 (0: nothing remote; default 3).
   */
  readonly distOptRatio?: number;
  /**
   * zero-infinity, mlp-offload: DeepSpeed's offload_optimizer.buffer_count
   * (zero-infinity: pinned gradient buffers in backward, default 4;
   * mlp-offload: host cache of buffer_count // 3 subgroups per path, // 4 − 1 with
   * swapped gradients, default 25).
   */
  readonly bufferCount?: number;
  /** zero-infinity: DeepSpeed's pipelined swapper (pipeline_read and pipeline_write true). */
  readonly pipeline?: boolean;
  /**
   * zero-infinity, deepspeed-checkpoint: a DeepSpeed config file's settings
   * (`--deepspeed-config`); the flags above, where given, win over it.
   */
  readonly deepspeed?: DeepSpeedConfig;
  /**
   * zero-infinity, mlp-offload: aio intra_op_parallelism, each swap cut into
   * this many slices on their own contexts (zero-infinity 1, mlp-offload 4).
   */
  readonly threads?: number;
  /**
   * mlp-offload: which paths take the node-wide read and write locks
   * (`remote`, as its runs; `both`; `none`).
   */
  readonly locks?: "remote" | "both" | "none";
  /**
   * mlp-offload: what a node-wide lock covers: `wait-issue` (waiting for one
   * transfer and issuing the next, default) or `transfer` (a whole transfer).
   */
  readonly lockScope?: "wait-issue" | "transfer";
  /**
   * mlp-offload: subgroups of each path kept in host memory at the end of a pass (of the local
   * path alone when `remoteCacheSubgroups` is given).
   */
  readonly cacheSubgroups?: number;
  /** mlp-offload: subgroups of the remote path kept in host memory (default: cacheSubgroups). */
  readonly remoteCacheSubgroups?: number;
  /** deep-optimizer-states: every K-th subgroup is updated on the device. */
  readonly stride?: number;
  /** ssdtrain, teraio: layers read ahead in backward. */
  readonly prefetch?: number;
  /**
   * ssdtrain: offload only the first N layers' activations (an activation
   * plan's choice); the others stay on the GPU. Default: every layer but the last.
   */
  readonly offloadLayers?: number;
  /** datastates, deepspeed-checkpoint: checkpoint every N iterations. */
  readonly checkpointEvery?: number;
  /**
   * datastates: the pinned host ring buffer of each rank, unscaled bytes
   * (DataStates-LLM's host_cache_size; default: one checkpoint of the rank).
   */
  readonly hostCacheBytes?: number;
  /**
   * datastates: run it on top of ZeRO-Infinity's optimizer offload to the
   * local path (DataStates-LLM itself refuses offload_optimizer).
   */
  readonly offloadOptimizer?: boolean;
  /**
   * datastates: whether training waits for the GPU→host copies of a
   * checkpoint: `copy` (DataStates-LLM's DeepSpeed fork, default) or `none`
   * (DeepSpeed master's decoupled engine).
   */
  readonly snapshotBlocking?: "copy" | "none";
  /**
   * datastates: how each tensor is flushed: `ofstream` (buffered, no fsync:
   * datastates-llm 32960317, default) or `pwrite-fsync` (an fsync after each
   * tensor: the engine DeepSpeed master imports).
   */
  readonly flushMode?: "ofstream" | "pwrite-fsync";
  /**
   * datastates: elements of DeepSpeed's subgroups, whose m, v and fp32
   * partitions are the checkpoint's tensors (default DeepSpeed's 1e9; with
   * offloadOptimizer, the setup's subgroup size).
   */
  readonly checkpointSubgroupSize?: number;
}

/** A workload: what it needs and how it builds its programs. */
export interface WorkloadDefinition {
  readonly name: string;
  /** One line for `--help` and the docs. */
  readonly summary: string;
  /** Roles it cannot run without. */
  readonly needs: readonly PathRole[];
  build(setup: TrainingSetup, paths: WorkloadPaths, options?: WorkloadOptions): WorkloadProgram;
}

/** 1 MiB: DeepSpeed aio's default block_size. */
export const DEEPSPEED_BS = 1 << 20;
/** DeepSpeed aio's default queue_depth. */
export const DEEPSPEED_IODEPTH = 8;

/** A storage path's policy with DeepSpeed's aio defaults unless the options say otherwise. */
export function storagePath(
  name: string,
  role: PathRole,
  options: WorkloadOptions,
  extra: Partial<PathPolicy> = {},
): PathPolicy {
  return {
    name,
    role,
    bs: options.bs ?? extra.bs ?? DEEPSPEED_BS,
    iodepth: options.iodepth ?? extra.iodepth ?? DEEPSPEED_IODEPTH,
    ...((options.threads ?? extra.threads ?? 1) > 1
      ? { threads: options.threads ?? extra.threads }
      : {}),
    ...limit("readers", options.readers ?? extra.readers),
    ...limit("writers", options.writers ?? extra.writers),
  };
}

/** A node-wide limit as a policy field: none when undefined or 0. */
function limit<K extends "readers" | "writers">(
  key: K,
  n: number | undefined,
): { [k in K]?: number } {
  return n === undefined || n === 0 ? {} : { [key]: n } as { [k in K]?: number };
}

/** The path of a role, or a RangeError naming what the workload needs. */
export function requirePath(
  workload: string,
  role: "host" | "local" | "remote",
  paths: WorkloadPaths,
): string {
  const name = role === "local" ? paths.local[0] : paths[role];
  if (name === undefined) {
    const tier = role === "host"
      ? "memory:DIR"
      : role === "local"
      ? "file:DIR"
      : "pfs:DIR or s3://BUCKET";
    throw new RangeError(`${workload} needs a ${role} path: add ${tier} to --tiers`);
  }
  return name;
}

/**
 * Forward then backward GPU time of one iteration of one rank, scaled, ms
 * (backward = 2 × forward). A user's tensor list (`setup.tensors`) has no
 * layer shape: its forward is 2 FLOPs per parameter of the rank and token.
 */
export function forwardBackwardMs(s: TrainingSetup): { forward: number; backward: number } {
  const forward = gpuMs(
    s,
    s.tensors === undefined
      ? s.model.layers * layerForwardFlops(s.model, s.microBatch, s.tensorParallel)
      : (2 * s.parameters * s.microBatch * s.model.sequence) / s.tensorParallel,
  );
  return { forward, backward: 2 * forward };
}

/** Iterations in the program, warm-up first. */
export function totalIterations(s: TrainingSetup): number {
  return s.warmupIterations + s.iterations;
}

/** Whether iteration `it` (from 0, warm-up first) ends with a checkpoint, one every `every`. */
export function isCheckpointIteration(it: number, every: number): boolean {
  return (it + 1) % every === 0;
}

/** How many iterations of the program end with a checkpoint, one every `every`. */
export function checkpointCount(s: TrainingSetup, every: number): number {
  return Math.floor(totalIterations(s) / every);
}

/** How {@linkcode backwardPhase} builds an iteration's backward phase. */
export interface BackwardOptions {
  /**
   * What the barrier opening the phase waits for; by default the last held op
   * of every stream ({@linkcode ProgramBuilder.lastHeld}).
   */
  readonly after?: readonly (number | undefined)[] | undefined;
  /**
   * A path to write each subgroup's gradients to after its slice (`sg{i}.grad`
   * on `{path}:write`, `bytesPerState` B/param: 4 in fp32); none when the
   * gradients stay in host memory.
   */
  readonly gradients?: string | undefined;
  /** One backward op for the whole pass instead of one slice per subgroup. */
  readonly whole?: boolean;
}

/**
 * Adds the backward phase of iteration `it` to a rank program: a barrier, the
 * forward pass (think time), then the backward pass in one slice per
 * subgroup, last subgroup first (gradients appear from the last layer back),
 * each slice followed by its gradient write when `options.gradients` names a
 * path. Returns the id of the phase's last op (the last gradient write when
 * there are gradients: it ends after every other op of the phase).
 *
 * @example
 * ```ts
 * import { backwardPhase } from "./common.ts";
 * import { ProgramBuilder } from "./ops.ts";
 * import { resolveSetup, subgroupSizes } from "./setup.ts";
 * const setup = resolveSetup({ model: "7b", scale: 0.001 });
 * const b = new ProgramBuilder(0);
 * const last = backwardPhase(b, setup, 0, { gradients: "local" });
 * const ops = b.build().ops;
 * console.assert(ops.length === 2 + 2 * subgroupSizes(setup).length);
 * console.assert(ops[last]!.object === "sg0.grad");
 * ```
 */
export function backwardPhase(
  b: ProgramBuilder,
  setup: TrainingSetup,
  it: number,
  options: BackwardOptions = {},
): number {
  const phase = "backward";
  const fb = forwardBackwardMs(setup);
  const open = b.barrier({ iteration: it, phase, after: options.after });
  let last = b.add({
    kind: "compute",
    stream: "compute",
    iteration: it,
    phase,
    ms: fb.forward,
    label: "forward",
    after: [open],
  });
  if (options.whole) {
    return b.add({
      kind: "compute",
      stream: "compute",
      iteration: it,
      phase,
      ms: fb.backward,
      label: phase,
    });
  }
  const sizes = subgroupSizes(setup);
  const shard = shardParameters(setup);
  const path = options.gradients;
  for (let i = sizes.length - 1; i >= 0; i--) {
    const el = sizes[i]!;
    last = b.add({
      kind: "compute",
      stream: "compute",
      iteration: it,
      phase,
      ms: (fb.backward * el) / shard,
      label: `sg${i}.backward`,
    });
    if (path === undefined) continue;
    last = b.add({
      kind: "write",
      stream: `${path}:write`,
      iteration: it,
      phase,
      path,
      object: `sg${i}.grad`,
      bytes: scaledBytes(setup, el * setup.bytesPerState),
      label: `sg${i}.grad`,
      after: [last],
    });
  }
  return last;
}
