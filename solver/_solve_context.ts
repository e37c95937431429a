/**
 * What one solve works from (solve.ts): the setup's sizes, the host memory
 * the plan may use, the paths with their contention, and each path's rates
 * and costs per subgroup at a count of readers and writers.
 *
 * @module
 */

import type { Highs } from "highs";
import { shardParameters, subgroupSizes, type TrainingSetup } from "../workloads/setup.ts";
import { type PathRates, pathSeconds } from "./model.ts";
import type { HostMemoryUse, PlannedPath } from "../schema/plan.ts";
import { hostMemoryUse, SWAP_BUFFER_COUNT } from "./host_memory.ts";
import { concurrentBandwidth } from "./concurrency.ts";
import type { SolverTier } from "./solver_tier.ts";
import type { SolveInput } from "./_solve_input.ts";

/** Readers and writers of one path, node-wide. */
export interface Limit {
  readonly readers: number;
  readonly writers: number;
}

/** One reader and one writer at a time. */
export const ONE: Limit = { readers: 1, writers: 1 };

/** Bytes of one subgroup's params, m and v. */
export function stateBytes(s: TrainingSetup, elements: number): number {
  return 3 * s.bytesPerState * elements;
}

/** The figures of one solve that depend on its input only, before HiGHS is asked anything. */
export interface SolveSizes {
  readonly input: SolveInput;
  /** The remote path left out (solved with no capacity on it). */
  readonly localOnly: boolean;
  readonly setup: TrainingSetup;
  /** Subgroups of a rank. */
  readonly S: number;
  /** Parameters of a rank's shard. */
  readonly P: number;
  /** Ranks on the node. */
  readonly R: number;
  /** Elements of an average subgroup. */
  readonly avg: number;
  /** Elements of the largest subgroup. */
  readonly largest: number;
  /** CPU Adam of a rank, s. */
  readonly computeS: number;
  /** Bytes of one subgroup of every rank. */
  readonly subgroupNode: number;
  /** Host memory available, bytes (Infinity where unchecked). */
  readonly available: number;
  /** fp32 gradients of every rank, bytes. */
  readonly gradientNode: number;
  /** Paths whose swap buffers are budgeted. */
  readonly tierCount: number;
  /** The host cache that fits beside the swap buffers, bytes. */
  readonly cacheBytes: number;
  /** Whether the gradients are swapped to the paths (they do not fit in host memory). */
  readonly gradientsSwapped: boolean;
  readonly tiers: SolverTier[];
  readonly names: string[];
  /** Each path's slowdown per direction while the other path runs. */
  readonly slow: { read: number; write: number }[];
  /** Subgroups per rank the host cache holds. */
  readonly maxCached: number;
}

/** A solve's figures, Deep Optimizer States' stride and the loaded solver. */
export interface SolveContext extends SolveSizes {
  readonly dos: { stride: number | undefined; computeS: number } | undefined;
  readonly solver: Highs;
}

/** Each path's rates with some readers and writers at once, and its costs per subgroup. */
export interface Rates {
  /** Each tier at the counts. */
  readonly at: SolverTier[];
  /** Each tier at the counts while the other path runs too. */
  readonly contended: SolverTier[];
  /** Busy seconds per uncached subgroup, node-wide. */
  readonly k: number[];
  /** Seconds to read a subgroup's gradients back, node-wide (0 while they stay in host memory). */
  readonly g: number[];
}

/** Bytes of the pinned swap buffers with `pathsInUse` paths in use. */
function swapBuffers(
  setup: TrainingSetup,
  largest: number,
  R: number,
  pathsInUse: number,
): number {
  return SWAP_BUFFER_COUNT * setup.bytesPerState * largest * R * pathsInUse;
}

/** Bytes of the pinned swap buffers of `c`'s setup with `pathsInUse` paths in use. */
export function buffersOf(c: SolveSizes, pathsInUse: number): number {
  return swapBuffers(c.setup, c.largest, c.R, pathsInUse);
}

/**
 * The figures of a solve of `input`, with the remote path's buffers
 * budgeted, or with it `localOnly`: sizes, host memory (what is available,
 * the swap buffers, the host cache that fits beside them, and whether the
 * gradients fit beside those, else they are swapped as ZeRO-Infinity does)
 * and the paths' slowdowns.
 */
export function solveSizes(input: SolveInput, localOnly: boolean): SolveSizes {
  const { setup } = input;
  const sizes = subgroupSizes(setup);
  const S = sizes.length;
  const P = shardParameters(setup);
  const R = setup.ranksPerNode;
  const avg = P / S;
  const largest = sizes.reduce((a, b) => Math.max(a, b), 0); // no spread: 1e5 subgroups overflow the stack
  const computeS = P / setup.adamParamsPerSec;
  const subgroupNode = stateBytes(setup, avg) * R; // one subgroup of every rank
  const available = input.hostMemoryBytes === undefined
    ? Infinity
    : Math.max(0, input.hostMemoryBytes - (input.hostReserveBytes ?? 0));
  const gradientNode = setup.bytesPerState * P * R;
  const tierCount = input.remote && !localOnly ? 2 : 1;
  const buffers = swapBuffers(setup, largest, R, tierCount);
  const cacheBytes = Math.max(0, Math.min(input.hostCacheBytes, available - buffers));
  const gradientsSwapped = gradientNode + cacheBytes + buffers > available;
  const tiers = input.remote ? [input.local, input.remote] : [input.local];
  const names = input.remote ? ["local", "remote"] : ["local"];
  const maxCached = Math.floor(cacheBytes / (stateBytes(setup, largest) * R));
  return {
    input,
    localOnly,
    setup,
    S,
    P,
    R,
    avg,
    largest,
    computeS,
    subgroupNode,
    available,
    gradientNode,
    tierCount,
    cacheBytes,
    gradientsSwapped,
    tiers,
    names,
    slow: slowdowns(input, tiers),
    maxCached,
  };
}

/** Each path's slowdown per direction, the worst over what the other path does; 1 alone. */
function slowdowns(
  input: SolveInput,
  tiers: readonly SolverTier[],
): { read: number; write: number }[] {
  const look = input.slowdown ?? (() => 1);
  return tiers.map((t, i) => {
    const other = tiers[1 - i];
    if (!other) return { read: 1, write: 1 };
    return {
      read: Math.max(
        1,
        look(t.label, "read", other.label, "read"),
        look(t.label, "read", other.label, "write"),
      ),
      write: Math.max(
        1,
        look(t.label, "write", other.label, "read"),
        look(t.label, "write", other.label, "write"),
      ),
    };
  });
}

/** Host memory a placement takes: gradients (unless swapped), its cache and its swap buffers. */
export function memoryOf(c: SolveSizes, paths: readonly PlannedPath[]): HostMemoryUse {
  const cached = paths.reduce((t, p) => t + p.cache_subgroups, 0);
  const inUse = Math.max(1, paths.filter((p) => p.subgroups > 0).length);
  return hostMemoryUse({
    gradientsBytes: c.gradientsSwapped ? 0 : c.gradientNode,
    gradients: c.gradientsSwapped ? "swapped" : "host",
    stateBytes: cached * stateBytes(c.setup, c.largest) * c.R,
    bufferCount: SWAP_BUFFER_COUNT,
    bufferBytes: buffersOf(c, inUse),
  }, c.available);
}

/** Each path's rates with `limits` readers and writers at once, and its costs per subgroup. */
export function ratesAt(c: SolveSizes, limits: readonly Limit[]): Rates {
  const { tiers, slow, setup, R } = c;
  const at = tiers.map((t, i) => tierAt(t, limits[i]!.readers, limits[i]!.writers));
  const contended = contendedRates(c, at);
  const k = contended.map((t, i) =>
    pathSeconds({
      rates: ratesOf(t, "", slow[i]!.read, slow[i]!.write),
      readBytes: c.subgroupNode,
      writeBytes: c.subgroupNode,
    })
  );
  // reading a subgroup's gradients back in the update, node-wide, where they are swapped
  const g = contended.map((t, i) =>
    c.gradientsSwapped
      ? pathSeconds({
        rates: ratesOf(t, "", slow[i]!.read, slow[i]!.write),
        readBytes: setup.bytesPerState * c.avg * R,
        writeBytes: 0,
      })
      : 0
  );
  return { at, contended, k, g };
}

/**
 * The tiers `at` some counts while both paths are in use: the pair's
 * measured rates, reading and writing at once, where there are some (the
 * slowdowns then apply only to what one direction moves after the other is
 * done), scaled as the tier's mixed total at these counts is to that at 1.
 */
function contendedRates(c: SolveSizes, at: readonly SolverTier[]): SolverTier[] {
  const { tiers, slow, input } = c;
  return at.map((t, i) => {
    const other = tiers[1 - i];
    const both = other && input.together?.(tiers[i]!.label, other.label);
    if (!both) return t;
    const one = tierAt(tiers[i]!, 1, 1);
    const scale = (mine: number | undefined, single: number | undefined, plain: number) =>
      mine !== undefined && single !== undefined ? mine / single : plain;
    return {
      ...t,
      mixedReadBw: both.readBw * slow[i]!.read *
        scale(t.mixedReadBw, one.mixedReadBw, t.readBw / one.readBw),
      mixedWriteBw: both.writeBw * slow[i]!.write *
        scale(t.mixedWriteBw, one.mixedWriteBw, t.writeBw / one.writeBw),
    };
  });
}

/**
 * `t` as the solver sees it with `readers` reading and `writers` writing at
 * once: each direction's total at those counts (solver/concurrency.ts), the
 * mixed totals where some figure gives them (not where the directions only
 * take turns), and no curve left to read.
 */
export function tierAt(t: SolverTier, readers: number, writers: number): SolverTier {
  const { concurrency: _, mixedReadBw: _r, mixedWriteBw: _w, ...rest } = t;
  const mr = concurrentBandwidth(t, "read", readers, { mixed: true });
  const mw = concurrentBandwidth(t, "write", writers, { mixed: true });
  return {
    ...rest,
    readBw: concurrentBandwidth(t, "read", readers).total,
    writeBw: concurrentBandwidth(t, "write", writers).total,
    ...(!mr.turns && !mw.turns ? { mixedReadBw: mr.total, mixedWriteBw: mw.total } : {}),
  };
}

/** A tier's rates for the model, named and slowed. */
export function ratesOf(
  t: SolverTier,
  name: string,
  readSlowdown: number,
  writeSlowdown: number,
): PathRates {
  return {
    name,
    readBw: t.readBw,
    writeBw: t.writeBw,
    readSlowdown,
    writeSlowdown,
    ...(t.mixedReadBw !== undefined ? { mixedReadBw: t.mixedReadBw } : {}),
    ...(t.mixedWriteBw !== undefined ? { mixedWriteBw: t.mixedWriteBw } : {}),
  };
}
