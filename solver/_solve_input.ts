/**
 * What the placement solver takes and what it answers (solve.ts re-exports
 * both), kept apart so that its steps can read them without importing it.
 *
 * @module
 */

import type { TrainingSetup } from "../workloads/setup.ts";
import type { PlannedPath, Prediction } from "../schema/plan.ts";
import type { SlowdownLookup, SolverTier, TogetherLookup } from "./solver_tier.ts";

/** What the solver needs. */
export interface SolveInput {
  readonly setup: TrainingSetup;
  /** The node-local tier (NVMe). */
  readonly local: SolverTier;
  /** The remote tier, when there is one. */
  readonly remote?: SolverTier;
  /** Host memory of the node the optimizer state may use as cache, bytes. */
  readonly hostCacheBytes: number;
  /**
   * All host memory of the node, bytes; undefined: host memory is not checked
   * (gradients stay in host memory, as before the check).
   */
  readonly hostMemoryBytes?: number;
  /** Host memory held back for everything else, bytes (default 0). */
  readonly hostReserveBytes?: number;
  readonly slowdown?: SlowdownLookup;
  /**
   * `tier`'s bandwidths, bytes/s, while it reads and writes at once and
   * `other` does too (measured as such: a pair of tiers, a read job and a
   * write job on each); undefined where not measured. Where given, it sets a
   * path's rate while both paths are in use, in place of `slowdown` on its
   * own mixed bandwidths.
   */
  readonly together?: TogetherLookup;
  /** Host↔GPU copy bandwidth of one GPU, bytes/s, and its Adam rate, parameters/s: with both, the
   * solver weighs Deep Optimizer States (every K-th subgroup updated on the GPU). */
  readonly gpu?: { readonly pcieBytesPerS: number; readonly adamParamsPerS: number };
}

/** The solver's answer, before it becomes a plan document. */
export interface Solution {
  readonly paths: PlannedPath[];
  readonly predictions: {
    zero_offload: Prediction;
    zero_infinity: Prediction;
    plan: Prediction;
    /** MLP-Offload's fixed split (one subgroup in three remote), when there is a remote tier. */
    mlp_offload?: Prediction;
  };
  readonly why: string[];
  /** Deep Optimizer States' stride, when it shortens the phase. */
  readonly dosStride?: number;
  /** Solver statistics. */
  readonly solver: { status: string; seconds: number; subgroups: number };
}
