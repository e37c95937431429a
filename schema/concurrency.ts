/**
 * The `concurrency` section of a result document: each tier's bandwidth
 * with 1, 2, … R processes hitting it at once — all reading, all writing,
 * and n reading while n others write — at the request sizes the plan's
 * systems issue. `bench` and `contention` measure it (bench/concurrency.ts);
 * the solver reads it into each tier's `concurrency` curves (ProfileConcurrency,
 * schema/profile.ts)
 * (solver/profile.ts).
 *
 * @module
 */

import type { RunStatus } from "./run_status.ts";

/** One process count of a curve: totals over every process, bytes/s. */
export interface ConcurrencyResultPoint {
  /** Processes (jobs, one Worker each) at once. */
  processes: number;
  /** All `processes` reading. */
  read_bw_bytes: number;
  /** All `processes` writing. */
  write_bw_bytes: number;
  /** `processes` reading while `processes` others write: the reads' total (absent: not measured). */
  mixed_read_bw_bytes?: number;
  /** The same run: the writes' total. */
  mixed_write_bw_bytes?: number;
  /** The point's runs in `doc.runs`, by name: read, write, then the mixed read and write. */
  runs: string[];
}

/** One request size of a tier's curves. */
export interface ConcurrencyResultCurve {
  /** Request size of every job, bytes. */
  bs: number;
  /** Requests in flight per job. */
  iodepth: number;
  /** Ascending by `processes`. */
  points: ConcurrencyResultPoint[];
  /**
   * Process counts asked for but not measured: the curve was flat around
   * them (see {@linkcode ConcurrencyResult.flat_share}), so they read as the
   * line between the measured counts on either side.
   */
  interpolated?: number[];
}

/** One tier's curves. */
export interface ConcurrencyResultTier {
  /** The tier's label, as the contention matrix and the profile name it (`memory`, `file`, `pfs`). */
  label: string;
  /** The tier as `--tier` gives it. */
  tier: string;
  engine: string;
  /** O_DIRECT (file and pfs tiers, where the mount takes it). */
  direct: boolean;
  /** Why the tier runs otherwise than its kind does by default (a mount that refuses O_DIRECT). */
  note?: string;
  /** By request size, ascending. */
  curves: ConcurrencyResultCurve[];
}

/** A result's concurrency curves. */
export interface ConcurrencyResult {
  /** How the measurement ended; the points measured until then are kept. */
  status: RunStatus;
  error?: string;
  /** The process counts asked for, ascending. */
  processes: number[];
  /**
   * Where set, an interior count was measured only where the measured counts
   * around it differed, in a read, write or mixed total, by more than this
   * share of the larger and by more than twice the standard error of the
   * difference (from the points' quarter-second samples); the others are
   * each curve's `interpolated`.
   */
  flat_share?: number;
  /** Measured time of every run, ms, and its warm-up. */
  runtime_ms: number;
  ramp_ms: number;
  /** Bytes of each job's file. */
  size: number;
  /** How the processes are run: one Worker per job, each its own file and I/O context. */
  layout: string;
  tiers: ConcurrencyResultTier[];
}
