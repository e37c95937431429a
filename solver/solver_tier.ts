/**
 * What the solver knows of a tier it may place state on, and how it looks up
 * a slowdown between two tiers: the inputs shared by solve.ts and the
 * pipeline simulation.
 *
 * @module
 */

import type { ProfileConcurrency } from "../schema/profile.ts";

/** A tier the solver may place state on. */
export interface SolverTier {
  /** The profile's label (`file`, `pfs`, …). */
  readonly label: string;
  /** Node-wide bandwidths, bytes/s, at `bs` and `iodepth`. */
  readonly readBw: number;
  readonly writeBw: number;
  readonly bs: number;
  readonly iodepth: number;
  /** Free space for optimizer state, bytes; undefined: unbounded. */
  readonly capacityBytes?: number;
  /** Each direction's bandwidth while the tier reads and writes at once, bytes/s; undefined: unmeasured. */
  readonly mixedReadBw?: number;
  readonly mixedWriteBw?: number;
  /**
   * Bandwidth against processes at once, one curve per request size
   * (solver/concurrency.ts reads it); undefined: the flat default,
   * `FLAT_CONCURRENCY_NOTE`.
   */
  readonly concurrency?: readonly ProfileConcurrency[];
}

/** Slowdown of `tier` doing `direction` while `other` does `otherDirection`; 1 when unmeasured. */
export type SlowdownLookup = (
  tier: string,
  direction: "read" | "write",
  other: string,
  otherDirection: "read" | "write",
) => number;

/**
 * `tier`'s bandwidths, bytes/s, while it reads and writes at once and
 * `other` does too, one job each; `at`, where measured, the same with every
 * job `processes` processes (totals).
 */
export type TogetherLookup = (
  tier: string,
  other: string,
) =>
  | {
    readonly readBw: number;
    readonly writeBw: number;
    readonly at?: { readonly processes: number; readonly readBw: number; readonly writeBw: number };
  }
  | undefined;
