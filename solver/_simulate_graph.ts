/**
 * The program as simulate.ts steps through it: every rank's ops in one flat
 * index with who waits for whom, the path directions the transfers move on
 * with their node-wide limits, and the rates `rateOf` gives for each count
 * of transfers in flight, asked once each.
 *
 * @module
 */

import type { Op, RankProgram, WorkloadProgram } from "../workloads/ops.ts";
import type { Direction } from "../schema/profile.ts";

/**
 * Node-wide bandwidth, bytes/s, of `path` in `direction` while the path
 * directions in `active` (`local:read`, `remote:write`, …; itself included)
 * move data, `inflight` transfers each (by the same keys; one per rank, as a
 * rank's stream moves one op at a time; absent: one each). Must be > 0.
 */
export type RateOf = (
  path: string,
  direction: Direction,
  active: ReadonlySet<string>,
  inflight?: ReadonlyMap<string, number>,
) => number;

/** Every rank's ops in one flat index (g), with their dependencies. */
export interface OpGraph {
  readonly ops: Op[];
  /** The rank (index into the program's ranks) of each op. */
  readonly rankOf: Int32Array;
  /** Ops each op still waits for (counted down as they finish). */
  readonly pending: Int32Array;
  /** Each barrier op's place among its rank's barriers; -1 for other ops. */
  readonly barrierIndex: Int32Array;
  /** Dependents of g: depOf[depStart[g] .. depStart[g + 1]). */
  readonly depStart: Int32Array;
  readonly depOf: Int32Array;
}

/**
 * The ops of `ranks` in one flat index: each waits for its `after` ops and
 * for the op before it on its stream.
 */
export function opGraph(ranks: readonly RankProgram[]): OpGraph {
  const offset: number[] = [];
  let n = 0;
  for (const r of ranks) {
    offset.push(n);
    n += r.ops.length;
  }
  const ops: Op[] = new Array(n);
  const rankOf = new Int32Array(n);
  const pending = new Int32Array(n);
  const barrierIndex = new Int32Array(n).fill(-1);
  // who waits for whom, as one flat list (dependents of g: depOf[depStart[g] .. depStart[g + 1]))
  const prevOnStream = new Int32Array(n).fill(-1);
  const depCount = new Int32Array(n + 1);
  ranks.forEach((r, ri) => {
    const last = new Map<string, number>();
    let barriers = 0;
    for (const op of r.ops) {
      const g = offset[ri]! + op.id;
      ops[g] = op;
      rankOf[g] = ri;
      for (const a of op.after) depCount[offset[ri]! + a]!++;
      pending[g] = op.after.length;
      const before = last.get(op.stream);
      if (before !== undefined) {
        prevOnStream[g] = before;
        depCount[before]!++;
        pending[g]!++;
      }
      last.set(op.stream, g);
      if (op.kind === "barrier") barrierIndex[g] = barriers++;
    }
  });
  const depStart = new Int32Array(n + 1);
  for (let g = 0; g < n; g++) depStart[g + 1] = depStart[g]! + depCount[g]!;
  const depOf = new Int32Array(depStart[n]!);
  const fill = depStart.slice(0, n);
  for (let g = 0; g < n; g++) {
    const base = offset[rankOf[g]!]!;
    for (const a of ops[g]!.after) depOf[fill[base + a]!++] = g;
    if (prevOnStream[g]! >= 0) depOf[fill[prevOnStream[g]!]!++] = g;
  }
  return { ops, rankOf, pending, barrierIndex, depStart, depOf };
}

/** The path directions transfers move on: 2p reads, 2p + 1 writes of program.paths[p]. */
export interface PathKeys {
  /** `path:read`, `path:write`, … by index. */
  readonly keys: string[];
  /** Transfers each may have in flight at once (Infinity: unlimited). */
  readonly limit: number[];
  /** Each op's path direction; -1 for ops that move no data. */
  readonly keyOf: Int32Array;
}

/**
 * The path directions of `program` and of each of its `ops`.
 *
 * @throws {RangeError} when the program has more than 15 paths.
 * @throws {TypeError} when an op names a path the program does not have.
 */
export function pathKeys(program: WorkloadProgram, ops: readonly Op[]): PathKeys {
  const keys: string[] = [];
  const limit: number[] = [];
  const pathIndex = new Map<string, number>();
  program.paths.forEach((p, i) => {
    pathIndex.set(p.name, i);
    keys.push(`${p.name}:read`, `${p.name}:write`);
    limit.push(p.readers && p.readers > 0 ? p.readers : Infinity);
    limit.push(p.writers && p.writers > 0 ? p.writers : Infinity);
  });
  if (keys.length > 30) {
    throw new RangeError(
      `simulate() takes at most 15 paths, the program has ${program.paths.length}`,
    );
  }
  const keyOf = new Int32Array(ops.length).fill(-1);
  for (let g = 0; g < ops.length; g++) {
    const op = ops[g]!;
    if (op.kind !== "read" && op.kind !== "write") continue;
    const p = pathIndex.get(op.path ?? "");
    if (p === undefined) {
      throw new TypeError(
        `op ${op.label} names path "${op.path}", which the program does not have`,
      );
    }
    keyOf[g] = 2 * p + (op.kind === "write" ? 1 : 0);
  }
  return { keys, limit, keyOf };
}

/**
 * The rates of every path direction for the counts of transfers in flight on
 * each, asked of `rateOf` once per distinct counts (the counts as one number
 * while they fit 10 bits each in 50, else as a string).
 *
 * @throws {RangeError} when `rateOf` gives a rate that is not > 0.
 */
export function rateTable(
  keys: readonly string[],
  rateOf: RateOf,
): (counts: Int32Array) => Float64Array {
  const rateCache = new Map<number | string, Float64Array>();
  return (counts: Int32Array): Float64Array => {
    let id: number | string = 0;
    for (let k = 0; k < counts.length && typeof id === "number"; k++) {
      id = counts.length > 5 || counts[k]! >= 1024 ? counts.join(",") : id * 1024 + counts[k]!;
    }
    let r = rateCache.get(id);
    if (r) return r;
    r = new Float64Array(keys.length);
    const moving = keys.map((key, k) => [key, counts[k]!] as const).filter(([, c]) => c > 0);
    const active = new Set(moving.map(([key]) => key));
    const inflight = new Map(moving);
    for (let k = 0; k < keys.length; k++) {
      if (counts[k] === 0) continue;
      const cut = keys[k]!.lastIndexOf(":");
      const rate = rateOf(
        keys[k]!.slice(0, cut),
        keys[k]!.slice(cut + 1) as Direction,
        active,
        inflight,
      );
      if (!(rate > 0)) throw new RangeError(`rate of ${keys[k]} must be > 0, got ${rate}`);
      r[k] = rate;
    }
    rateCache.set(id, r);
    return r;
  };
}
