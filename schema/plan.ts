/**
 * The plan document (`"schema": "tierbench/plan@1"`): where each piece of
 * optimizer state lives, how fast the update phase is predicted to be for
 * the plan and for the baselines, why, and the settings training accepts.
 *
 * The solver (solver/solve.ts) writes it from a profile and a training
 * setup; `tierbench replay` runs it as a workload and sets measured beside
 * predicted.
 *
 * @module
 */

import type { WorkloadOptions } from "../workloads/common.ts";

/** The schema id of plan documents. */
export const PLAN_SCHEMA = "tierbench/plan@1";

/**
 * The `$id` of the plan document's JSON Schema (schemas/plan.schema.json,
 * generated from {@linkcode PlanDocument} by `deno task schemas`), written as
 * `"$schema"` into every plan beside `schema`.
 */
export const PLAN_SCHEMA_ID = "https://tierbench.dev/schemas/plan-1.json";

/** One predicted update phase, per rank, with where its time goes. */
export interface Prediction {
  /** Update-phase time, s. */
  update_s: number;
  /** Time the reads alone would take at the path bandwidths (with contention), s. */
  read_s: number;
  /** Time the writes alone would take, s. */
  write_s: number;
  /** CPU (and GPU) Adam time, s. */
  compute_s: number;
  /** read_s + write_s + compute_s − update_s: what the pipeline hides, s. */
  overlap_s: number;
  /** Bytes per iteration, node-wide (all ranks), by `path:read` / `path:write`. */
  bytes: Record<string, number>;
  /**
   * Busy time of each path (its reads and writes, with contention and, where
   * measured, both directions at once), s; the longest of these and compute
   * sets the phase. Absent in plans written before it was added.
   */
  path_s?: Record<string, number>;
  /**
   * How `update_s` and `path_s` were found: `simulated`, the workload's
   * program stepped through at the profile's rates (solver/simulate.ts), or
   * absent, the closed form of solver/model.ts (plans written before).
   */
  method?: "simulated";
  /**
   * The host memory this prediction assumes, node-wide (all ranks), with its
   * parts; absent in plans written before it was added.
   */
  host_memory?: HostMemoryUse;
  /** False when the placement does not fit the capacities; `note` says which. */
  feasible: boolean;
  note?: string;
  /**
   * The plan's program as simulated (`predictions.plan` only): every op of
   * its steady iterations; absent in plans written before it was added.
   */
  timeline?: SimulatedTimeline;
}

/**
 * Ops of a simulated program, one span each, ms from the start of their
 * iteration (as a workload's measured timeline, with the iteration first):
 * a replay draws the iteration of its own pass direction beside what it
 * measured.
 */
export interface SimulatedTimeline {
  columns: ["iteration", "rank", "stream", "kind", "label", "bytes", "start_ms", "end_ms"];
  spans: [number, number, string, string, string, number, number, number][];
  /** Whether spans were left out (at most {@linkcode SIMULATED_TIMELINE_CAP}). */
  cut: boolean;
}

/** Most spans a simulated timeline keeps. */
export const SIMULATED_TIMELINE_CAP = 20_000;

/**
 * Host memory a prediction assumes, node-wide, bytes (solver/host_memory.ts):
 * what it keeps there against what the node has less the reserve.
 */
export interface HostMemoryUse {
  /** gradients_bytes + state_bytes + buffer_bytes. */
  total_bytes: number;
  /** fp32 gradients kept in host memory (bytes_per_state per parameter); 0 when swapped. */
  gradients_bytes: number;
  /** Where the gradients are: kept in host memory, or swapped to the paths (read back in the update). */
  gradients: "host" | "swapped";
  /** Optimizer state (params, m, v) kept in host memory: the host cache, or all of it (ZeRO-Offload). */
  state_bytes: number;
  /** Pinned I/O buffers: buffer_count × one subgroup's fp32 elements, per rank and path in use. */
  buffer_bytes: number;
  /** Swap buffers per rank and path in use (0 without swapping). */
  buffer_count: number;
  /** The node's memory less the reserve: what the total is held against. */
  available_bytes: number;
  /** total_bytes ≤ available_bytes. */
  fits: boolean;
}

/** A storage path of the plan: which profiled tier, how much state, which limits. */
export interface PlannedPath {
  /** `local`, `remote`, … as the workloads name paths. */
  name: string;
  /** The profile's tier label (`file`, `pfs`, `s3`, `memory`). */
  tier: string;
  /** Subgroups of each rank placed here. */
  subgroups: number;
  /** Share of each rank's subgroups. */
  ratio: number;
  /** Subgroups of each rank kept in host memory at the end of a pass. */
  cache_subgroups: number;
  /** Node-wide: at most this many ranks read / write the path at once (undefined: no limit). */
  readers?: number;
  writers?: number;
  /**
   * Why `readers` and `writers` are what they are: the tier's bandwidth at
   * those counts and where it came from (its concurrency curve, or the flat
   * default), one sentence each; absent in plans written before it was added.
   */
  concurrency_basis?: string[];
  /** Request size and depth the bandwidths were measured at. */
  bs: number;
  iodepth: number;
}

/** How a remote tier's per-node bandwidth at N nodes was found (solver/remote_share.ts). */
export type ShareBasis =
  /** The scaling curve has a point at N. */
  | "measured"
  /** Between two points of the curve, per-node bandwidth linear in N. */
  | "interpolated"
  /** Past the curve's last point: its aggregate held and shared by N (conservative). */
  | "extrapolated"
  /** No curve: the tier's single-node figure. */
  | "single-node";

/** The bandwidth a remote tier was planned with at the plan's node count. */
export interface RemoteShareUsed {
  /** Per node, bytes/s, in place of the tier's single-node figure. */
  read_bw_bytes: number;
  write_bw_bytes: number;
  basis: ShareBasis;
  /** Where each direction's figure came from, one sentence each. */
  notes: string[];
}

/** One node count of a `--nodes` sweep: the remote share, the placement, the predictions. */
export interface NodesSweepPoint {
  nodes: number;
  /** The remote tier the plan used at this count, with its share; absent without a remote tier. */
  remote?: { tier: string } & RemoteShareUsed;
  /** Share of each rank's optimizer state on each tier, by tier label (sums to 1). */
  fraction: Record<string, number>;
  /** Share of each rank's subgroups kept in host memory across the pass boundary. */
  cached_fraction: number;
  /** Predicted update phase, s, of each: `zero_infinity`, `plan`, `mlp_offload` (with a remote tier). */
  update_s: Record<string, number>;
}

/** The whole plan. */
export interface PlanDocument {
  /** The document's JSON Schema, {@linkcode PLAN_SCHEMA_ID}; absent in plans written before it was added. */
  $schema?: typeof PLAN_SCHEMA_ID;
  schema: typeof PLAN_SCHEMA;
  created: string;
  /** Where the profile came from, and its tiers. */
  profile: { source: string; host?: string; tiers: string[] };
  /** The training setup, as workloads/setup.ts describes it. */
  setup: Record<string, number | string>;
  /** Solver inputs beyond the setup. */
  inputs: Record<string, number | string | boolean>;
  /**
   * Nodes of the job sharing the remote tiers (`plan --nodes`); absent in
   * plans written before it was added (1).
   */
  nodes?: number;
  /** Each remote (pfs, s3) tier's per-node bandwidth at `nodes`, by label. */
  remote_share?: Record<string, RemoteShareUsed>;
  /** `plan --nodes 1,2,4,8`: the plan at each count; the document's placement is the first's. */
  nodes_sweep?: NodesSweepPoint[];
  placement: {
    /** Subgroups of each rank that stay in host memory for good (ZeRO-Offload style). */
    host_subgroups: number;
    paths: PlannedPath[];
    /** Update order over a pass. */
    order: "ascending" | "alternating";
    /** Deep Optimizer States: every K-th subgroup updated on the GPU; absent without PCIe/GPU rates. */
    dos_stride?: number;
  };
  /** The plan and the baselines on the same profile. */
  predictions: {
    zero_offload: Prediction;
    zero_infinity: Prediction;
    plan: Prediction;
    /**
     * MLP-Offload's fixed ratio (one subgroup in three on the remote path, 2
     * cached per path as the host cache allows), when there is a remote tier.
     */
    mlp_offload?: Prediction;
  };
  /** Activations: layers to offload to the node-local tier and the prefetch distance (solver/activations.ts). */
  activations?: ActivationPlan;
  /** Sentences: the binding constraint, the bandwidths that set the ratio. */
  why: string[];
  /** Settings training accepts (solver/export.ts). */
  exports: {
    deepspeed: Record<string, unknown>;
    mlp_offload: Record<string, unknown>;
  };
}

/**
 * The mlp-offload options that run a placement: the remote path's share
 * (mlp-offload places subgroup i remote when ⌈(i+1)·share⌉ > ⌈i·share⌉,
 * the fork's i % K == 0 when the share is 1/K: ⌈n·share⌉ of the program's n
 * subgroups), each path's cache, each path's node-wide readers and writers
 * (instead of the fork's locks), request size and depth.
 *
 * @throws {TypeError} when there is no local path.
 *
 * @example
 * ```ts
 * import { placementOptions } from "./plan.ts";
 * const path = { tier: "file", ratio: 0, readers: 1, writers: 1, bs: 1 << 20, iodepth: 8 };
 * const o = placementOptions([
 *   { ...path, name: "local", subgroups: 15, cache_subgroups: 1 },
 *   { ...path, name: "remote", tier: "pfs", subgroups: 5, cache_subgroups: 0, readers: 4 },
 * ]);
 * console.assert(o.remoteRatio === 0.25 && o.cacheSubgroups === 1);
 * console.assert(o.readers === 1 && o.remoteReaders === 4);
 * ```
 */
export function placementOptions(paths: readonly PlannedPath[]): WorkloadOptions {
  const local = paths.find((p) => p.name === "local");
  const remote = paths.find((p) => p.name === "remote");
  if (!local) throw new TypeError("the plan has no local path");
  const total = paths.reduce((t, p) => t + p.subgroups, 0);
  return {
    remoteRatio: remote && total > 0 ? remote.subgroups / total : 0,
    cacheSubgroups: local.cache_subgroups,
    remoteCacheSubgroups: remote?.cache_subgroups ?? 0,
    readers: local.readers ?? 0,
    writers: local.writers ?? 0,
    ...(remote ? { remoteReaders: remote.readers ?? 0, remoteWriters: remote.writers ?? 0 } : {}),
    // the plan's readers and writers are its concurrency control: not the fork's locks too
    locks: "none",
    bs: local.bs,
    iodepth: local.iodepth,
  };
}

/** Phase times of one rank for one choice of offloaded layers and read-ahead, s. */
export interface ActivationTimes {
  forward_s: number;
  backward_s: number;
  /** forward_s + backward_s − the compute alone. */
  stall_s: number;
}

/** The activation plan of one rank. */
export interface ActivationPlan {
  layers: number;
  /** Activation bytes of one layer of one rank (16-bit, no recomputation). */
  layer_bytes: number;
  /** GPU time of one layer, forward and backward, s. */
  forward_s: number;
  backward_s: number;
  /** Layers to offload, the first ones (0 … offloaded − 1). */
  offloaded: number;
  /** Layers read ahead in backward. */
  prefetch: number;
  /** GPU memory the offload frees per rank, bytes. */
  freed_bytes: number;
  /** Predicted stall per iteration with this plan, s (0 when it hides). */
  stall_s: number;
  /** Predicted stall when every layer but the last is offloaded, s. */
  stall_all_s: number;
  /** Read-ahead that gives `stall_all_s`. */
  prefetch_all?: number;
  /** Predicted phase times with this plan and with every layer out (absent in older plans). */
  phases?: { plan: ActivationTimes; all: ActivationTimes };
  why: string;
}
