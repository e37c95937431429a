/**
 * The replay document's section: a plan's predicted update phase beside the
 * one measured by running the plan's workload (bench/replay.ts), per path,
 * and the activation phases.
 *
 * @module
 */

import type { WorkloadOptions } from "../workloads/common.ts";
import type { RunStatus } from "./run_status.ts";

/** Measured against predicted, in the result document's `replay` section. */
export interface ReplayResult {
  plan: { source: string; created: string };
  scale: number;
  /** The workload options the plan became. */
  options: WorkloadOptions;
  /** Smallest scale at which a state object still fills bs × iodepth. */
  min_scale: number;
  predicted: {
    /** The plan's update phase at full size, s. */
    update_s: number;
    /** × scale: what the replay should measure, s. */
    update_s_scaled: number;
  };
  /** Median over the measured iterations, s; null when the run did not finish. */
  measured: { update_s: number | null; per_iteration_s: number[] };
  /** measured / predicted − 1. */
  error: number | null;
  /** `--activations`: the activation plan run as ssdtrain, and every layer offloaded beside it. */
  activations?: ActivationReplay;
  /**
   * Where the error comes from, path by path (medians over the measured
   * iterations): bytes moved against the plan's × scale, and the time the
   * path was busy against its predicted busy time × scale.
   */
  paths: ReplayPath[];
  /**
   * The plan's simulated timeline × scale, of the steady iteration whose
   * pass runs the way the measured timeline's does (the workload section's
   * `timeline.iteration`); absent when the plan has none (written before).
   */
  simulated_timeline?: {
    /** The simulated program's iteration drawn. */
    iteration: number;
    columns: ["rank", "stream", "kind", "label", "bytes", "start_ms", "end_ms"];
    spans: [number, string, string, string, number, number, number][];
    cut: boolean;
  };
}

/** One run of the activation part: forward and backward, predicted (× scale) beside measured. */
export interface ActivationRun {
  offloaded: number;
  prefetch: number;
  status: RunStatus;
  predicted: { forward_s: number; backward_s: number };
  /** Medians over the measured iterations; null when the run did not finish. */
  measured: { forward_s: number | null; backward_s: number | null };
  /** measured / predicted − 1 per phase. */
  error: { forward: number | null; backward: number | null };
}

/** The activation part of a replay (ssdtrain on the plan's local path). */
export interface ActivationReplay {
  layers: number;
  /** The plan's choice of layers and read-ahead. */
  plan: ActivationRun;
  /** Every layer but the last offloaded: the stall the plan avoids. */
  all: ActivationRun;
}

/** One path of a replay: predicted (× scale) beside measured. */
export interface ReplayPath {
  /** `local`, `remote`. */
  path: string;
  predicted: { read_bytes: number; write_bytes: number; busy_s: number | null };
  measured: {
    /** Medians over the measured iterations. */
    read_bytes: number;
    write_bytes: number;
    /**
     * Wall time with at least one of the path's requests in flight, in the
     * iteration the timeline holds (the last), s.
     */
    busy_s: number;
  };
  /** measured busy / predicted busy − 1; null without a predicted busy time. */
  error: number | null;
}
