/**
 * The sweep document's section: the bs × iodepth × numjobs grid of each tier
 * and pattern, its best point and that point's DeepSpeed `aio` block.
 * bench/sweep.ts measures it; the reports read it.
 *
 * @module
 */

/** One grid point: its setting, its figures, and its run in `doc.runs`. */
export interface SweepPoint {
  bs: number;
  iodepth: number;
  numjobs: number;
  /** Bytes per second, both directions together. */
  bw_bytes: number;
  iops: number;
  /** Total latency percentiles of the point's direction (reads for randrw), ns. */
  lat_p50_ns: number;
  lat_p99_ns: number;
  /** Measured time, ms (ramp excluded). */
  runtime_ms: number;
  /** Whether the steady-state criterion held (see {@linkcode SweepResult.criterion}). */
  steady: boolean;
  /** Index into `doc.runs`. */
  run: number;
}

/** The grid of one tier and access pattern. */
export interface SweepTier {
  /** The tier as `--tier` names it. */
  tier: string;
  rw: string;
  points: SweepPoint[];
  best: SweepPoint;
  /** DeepSpeed's `aio` block for `best` (file and pfs tiers; `{}` for others). */
  aio: Record<string, unknown>;
}

/** `doc.sweep` of a `kind: "sweep"` result document. */
export interface SweepResult {
  /** The steady-state criterion and the length of a point, in words. */
  criterion: string;
  tiers: SweepTier[];
}
