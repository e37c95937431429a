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

import type { ActivationPlan } from "./activations.ts";

/** The schema id of plan documents. */
export const PLAN_SCHEMA = "tierbench/plan@1";

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
  /** False when the placement does not fit the capacities; `note` says which. */
  feasible: boolean;
  note?: string;
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
  /** Request size and depth the bandwidths were measured at. */
  bs: number;
  iodepth: number;
}

/** The whole plan. */
export interface PlanDocument {
  schema: typeof PLAN_SCHEMA;
  created: string;
  /** Where the profile came from, and its tiers. */
  profile: { source: string; host?: string; tiers: string[] };
  /** The training setup, as workloads/setup.ts describes it. */
  setup: Record<string, number | string>;
  /** Solver inputs beyond the setup. */
  inputs: Record<string, number | string | boolean>;
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
