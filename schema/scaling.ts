/**
 * The `scaling` section of a result document: `bench` across nodes measures
 * each shared tier (pfs, s3) written and read by 1, 2, 4, … N nodes at once
 * (bench/scaling.ts). The planner reads it as the tier's per-node bandwidth
 * at N nodes (`plan --nodes`).
 *
 * @module
 */

import type { RunStatus } from "./run_status.ts";

/** One direction at one node count. */
export interface ScalingDirection {
  /** All the nodes together over their common window, bytes/s. */
  bw_bytes: number;
  /** `bw_bytes` over the node count: one node's share, bytes/s. */
  bw_bytes_per_node: number;
  /** What each node got over the common window, bytes/s. */
  per_node: { node: string; bw_bytes: number }[];
}

/** One node count of a tier's curve. */
export interface ScalingPoint {
  /** Nodes doing I/O at once, one process each. */
  nodes: number;
  processes: number;
  read: ScalingDirection;
  write: ScalingDirection;
}

/** One shared tier's curve. */
export interface ScalingTier {
  /** The tier's label, as the profile names it (`pfs`, `s3`). */
  label: string;
  /** The tier spec measured. */
  tier: string;
  /** Request size, bytes, and requests in flight per node. */
  bs: number;
  iodepth: number;
  /** By node count, ascending. */
  points: ScalingPoint[];
}

/** The `scaling` section. */
export interface ScalingResult {
  status: RunStatus;
  error?: string;
  /** Nodes in the run. */
  nodes: number;
  tiers: ScalingTier[];
}
