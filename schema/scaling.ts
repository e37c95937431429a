/**
 * The `scaling` section of a result document: a remote (shared) tier's
 * bandwidth measured with 1, 2, 4 … nodes doing the same I/O at once, as
 * `bench` writes it from a multi-node run (bench/scaling.ts). The solver
 * reads it into the profile's {@linkcode ProfileScaling} curve
 * (solver/profile.ts) and plans for N nodes from it (`tierbench plan
 * --nodes`, docs/multinode.md).
 *
 * @module
 */

import type { RunStatus } from "./run_status.ts";

/** One direction at one node count. */
export interface ScalingDirection {
  /** All the nodes together over their common window, bytes/s. */
  bw_bytes: number;
  /** What each node got, bytes/s (`bw_bytes` over the node count). */
  bw_bytes_per_node: number;
  /** What each node got over the common window, bytes/s (measured curves). */
  per_node?: { node: string; bw_bytes: number }[];
}

/** One node count of a tier's curve. */
export interface ScalingResultPoint {
  /** Nodes doing I/O at once. */
  nodes: number;
  /** Processes doing I/O at once (one per node). */
  processes?: number;
  read: ScalingDirection;
  write: ScalingDirection;
}

/** One remote tier's curve. */
export interface ScalingResultTier {
  /** The tier's label, as the result's contention matrix and profile name it (`pfs`, `s3`). */
  label: string;
  /** The tier as `--tier` gave it (`pfs:/mnt/lustre`, `s3://bucket/prefix`). */
  tier: string;
  /** Request size, bytes, and requests in flight per node. */
  bs: number;
  iodepth: number;
  /** By node count, ascending. */
  points: ScalingResultPoint[];
}

/** A result's remote scaling curves across nodes. */
export interface ScalingResult {
  /** How the measurement ended (absent: ok); the points measured until then are kept. */
  status?: RunStatus;
  error?: string;
  /** Nodes in the run. */
  nodes?: number;
  tiers: ScalingResultTier[];
}
