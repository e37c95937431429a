/**
 * The pipeline simulator: runs a workload's program (workloads/ops.ts) on a
 * model of the tiers instead of on the tiers, and says how long each phase
 * takes — the same ops, streams, dependencies and node-wide limits the
 * executor (workloads/_rank.ts) runs, with every transfer moving at the
 * bandwidth the profile measured for what is running beside it.
 *
 * Why not a formula: the update phase is a pipeline over ranks and paths. A
 * rank updates its subgroups in one order across both paths, so a slow
 * remote subgroup at the head of a pass holds the local path back; reads run
 * ahead of writes and leave writes alone at the end; one rank at a time reads
 * a path, so the last rank starts late. A closed form of busy time per path
 * misses all of that (on this machine by 10–20 % for plans over file and
 * CephFS); stepping through the program does not.
 *
 * The model is fluid: a transfer has bytes left and a rate, and rates change
 * only when some transfer starts or ends. The rate of a transfer comes from
 * {@linkcode RateOf}, given which path directions are moving data at that
 * moment and how many transfers (ranks) each has in flight — a tier's
 * total changes with the processes hitting it at once
 * (solver/concurrency.ts) — shared evenly by the transfers of the same path
 * and direction.
 * Compute ops take their think time; hits take none; a barrier releases when
 * every rank has reached it; a lock op is done when its node-wide lock is
 * free (first come, first served), and holds it until its unlock op. Per-request latency is not modelled (the
 * bandwidths were measured at the block size and depth the program uses).
 *
 * @module
 */

import { unionLength } from "../core/stats.ts";
import type { Op, WorkloadProgram } from "../workloads/ops.ts";
import type { Direction } from "../schema/profile.ts";
import { SIMULATED_TIMELINE_CAP, type SimulatedTimeline } from "../schema/plan.ts";

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

/** One phase of one iteration, node-wide. */
export interface SimulatedPhase {
  readonly iteration: number;
  readonly phase: string;
  /** From the earliest rank's start to the latest rank's end, s (as workloads/result.ts measures). */
  readonly time_s: number;
  /** Per path: time with an op of the path started and not done (slot waits included), s. */
  readonly busy_s: Readonly<Record<string, number>>;
  /** Bytes moved, all ranks, by `path:read` / `path:write`. */
  readonly bytes: Readonly<Record<string, number>>;
}

/** What the simulation found. */
export interface Simulation {
  readonly phases: readonly SimulatedPhase[];
  /** Simulated seconds of the whole program. */
  readonly end_s: number;
  /** With `timelineIterations`: the ops of those iterations as spans. */
  readonly timeline?: SimulatedTimeline;
}

/** What {@linkcode simulate} keeps beside the phases. */
export interface SimulateOptions {
  /** Iterations whose ops become timeline spans. */
  readonly timelineIterations?: readonly number[];
}

interface Transfer {
  readonly g: number;
  readonly key: number;
  left: number;
  rate: number;
}

/**
 * Simulates `program` with bandwidths from `rateOf`.
 *
 * @example
 * ```ts
 * import { simulate } from "./simulate.ts";
 * import { ProgramBuilder } from "../workloads/ops.ts";
 * const b = new ProgramBuilder(0);
 * const at = { iteration: 0, phase: "update", path: "local", object: "x", bytes: 2e9 };
 * const r = b.add({ ...at, kind: "read", stream: "local:read", label: "x" });
 * b.add({ kind: "compute", stream: "compute", iteration: 0, phase: "update", ms: 500, label: "adam", bytes: 0, after: [r] });
 * const program = {
 *   workload: "demo", warmupIterations: 0, iterations: 1, derived: {}, notes: [],
 *   paths: [{ name: "local", role: "local" as const, bs: 1 << 20, iodepth: 8 }],
 *   ranks: [b.build()],
 * };
 * const sim = simulate(program, () => 1e9);
 * console.assert(Math.abs(sim.phases[0]!.time_s - 2.5) < 1e-9);
 * ```
 */
export function simulate(
  program: WorkloadProgram,
  rateOf: RateOf,
  options: SimulateOptions = {},
): Simulation {
  const ranks = program.ranks;
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
  // path directions by index: 2p reads, 2p + 1 writes of program.paths[p]
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
  const keyOf = new Int32Array(n).fill(-1);
  for (let g = 0; g < n; g++) {
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
  // rates per count of transfers in flight on each path direction, asked of rateOf once each
  // (the counts as one number while they fit 10 bits each in 50, else as a string)
  const rateCache = new Map<number | string, Float64Array>();
  const ratesFor = (counts: Int32Array): Float64Array => {
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

  const start = new Float64Array(n).fill(NaN);
  const end = new Float64Array(n).fill(NaN);
  let now = 0;
  let done = 0;
  const ready: number[] = [];
  let head = 0;
  for (let g = 0; g < n; g++) if (pending[g] === 0) ready.push(g);
  const computes: { g: number; at: number }[] = [];
  const transfers: Transfer[] = [];
  const inflight = new Int32Array(keys.length);
  const waiting: number[][] = keys.map(() => []);
  const arrived = new Map<number, number[]>();
  // node-wide locks: who holds each, and who waits for it, first come first served
  const holder = new Map<string, number>();
  const lockQueue = new Map<string, number[]>();

  const complete = (g: number) => {
    end[g] = now;
    done++;
    for (let i = depStart[g]!; i < depStart[g + 1]!; i++) {
      const d = depOf[i]!;
      if (--pending[d]! === 0) ready.push(d);
    }
  };
  const activate = (g: number, key: number) => {
    inflight[key]!++;
    transfers.push({ g, key, left: ops[g]!.bytes, rate: 0 });
  };
  const begin = (g: number) => {
    const op = ops[g]!;
    start[g] = now;
    switch (op.kind) {
      case "compute":
        if ((op.ms ?? 0) > 0) computes.push({ g, at: now + op.ms! / 1000 });
        else complete(g);
        return;
      case "hit":
        complete(g);
        return;
      case "lock": {
        const name = op.lock ?? "";
        if (!holder.has(name)) {
          holder.set(name, g);
          complete(g);
        } else {
          const q = lockQueue.get(name) ?? [];
          q.push(g);
          lockQueue.set(name, q);
        }
        return;
      }
      case "unlock": {
        const name = op.lock ?? "";
        const next = lockQueue.get(name)?.shift();
        if (next === undefined) holder.delete(name);
        else {
          holder.set(name, next);
          complete(next);
        }
        complete(g);
        return;
      }
      case "barrier": {
        const k = barrierIndex[g]!;
        const list = arrived.get(k) ?? [];
        list.push(g);
        arrived.set(k, list);
        if (list.length === ranks.length) {
          arrived.delete(k);
          for (const b of list) complete(b);
        }
        return;
      }
      case "read":
      case "write": {
        if (op.bytes <= 0) {
          complete(g);
          return;
        }
        const key = keyOf[g]!;
        if (inflight[key]! < limit[key]!) activate(g, key);
        else waiting[key]!.push(g);
        return;
      }
    }
  };
  const finishTransfer = (t: Transfer) => {
    transfers.splice(transfers.indexOf(t), 1);
    inflight[t.key]!--;
    complete(t.g);
    const next = waiting[t.key]!.shift();
    if (next !== undefined) activate(next, t.key);
  };

  for (;;) {
    while (head < ready.length) begin(ready[head++]!);
    if (head > 4096) {
      ready.splice(0, head);
      head = 0;
    }
    if (computes.length === 0 && transfers.length === 0) break;
    // rates for what moves now
    const rates = ratesFor(inflight);
    let dt = Infinity;
    let first: Transfer | { g: number; at: number } | undefined;
    for (const t of transfers) {
      t.rate = rates[t.key]! / inflight[t.key]!;
      const s = t.left / t.rate;
      if (s < dt) [dt, first] = [s, t];
    }
    for (const c of computes) {
      if (c.at - now < dt) [dt, first] = [c.at - now, c];
    }
    now += Math.max(0, dt);
    const finished: Transfer[] = [];
    for (const t of transfers) {
      t.left -= t.rate * dt;
      if (t === first || t.left <= 1e-9 * ops[t.g]!.bytes) finished.push(t);
    }
    for (const t of finished) finishTransfer(t);
    for (let i = computes.length - 1; i >= 0; i--) {
      const c = computes[i]!;
      if (c === first || c.at <= now + 1e-12) {
        computes.splice(i, 1);
        complete(c.g);
      }
    }
  }
  if (done < n) {
    const stuck = ops.findIndex((_, g) => Number.isNaN(end[g]!));
    throw new RangeError(
      `the program cannot finish: op ${ops[stuck]!.label} of rank ${rankOf[stuck]} never ran`,
    );
  }
  const phases = phasesOf(ops, rankOf, start, end);
  const its = options.timelineIterations;
  if (!its || its.length === 0) return { phases, end_s: now };
  return {
    phases,
    end_s: now,
    timeline: timelineOf(ops, ranks.map((r) => r.rank), rankOf, start, end, its),
  };
}

/** The spans of the ops of iterations `its` (barriers left out), ms from each one's first start. */
function timelineOf(
  ops: readonly Op[],
  rankNo: readonly number[],
  rankOf: Int32Array,
  start: Float64Array,
  end: Float64Array,
  its: readonly number[],
): SimulatedTimeline {
  const wanted = new Set(its);
  const t0 = new Map<number, number>();
  ops.forEach((op, g) => {
    if (!wanted.has(op.iteration) || op.kind === "barrier") return;
    t0.set(op.iteration, Math.min(t0.get(op.iteration) ?? Infinity, start[g]!));
  });
  const ms = (s: number) => Math.round(s * 1e6) / 1000;
  const spans: SimulatedTimeline["spans"] = [];
  let cut = false;
  ops.forEach((op, g) => {
    if (!wanted.has(op.iteration) || op.kind === "barrier") return;
    if (spans.length >= SIMULATED_TIMELINE_CAP) return void (cut = true);
    const base = t0.get(op.iteration)!;
    spans.push([
      op.iteration,
      rankNo[rankOf[g]!]!,
      op.stream,
      op.kind,
      op.label,
      op.bytes,
      ms(start[g]! - base),
      ms(end[g]! - base),
    ]);
  });
  return {
    columns: ["iteration", "rank", "stream", "kind", "label", "bytes", "start_ms", "end_ms"],
    spans,
    cut,
  };
}

/** Node-wide phase times and per-path busy times, as workloads/result.ts and solver/replay.ts measure them. */
function phasesOf(
  ops: readonly Op[],
  rankOf: Int32Array,
  start: Float64Array,
  end: Float64Array,
): SimulatedPhase[] {
  interface Acc {
    iteration: number;
    phase: string;
    ranks: Map<number, { start: number; end: number }>;
    /** Per path: its read and write ops, and the bytes each direction moved. */
    paths: Map<string, { ops: number[]; read: number; write: number }>;
  }
  // by iteration, then phase name: no string built per op
  const acc = new Map<number, Map<string, Acc>>();
  ops.forEach((op, g) => {
    let byPhase = acc.get(op.iteration);
    if (!byPhase) acc.set(op.iteration, byPhase = new Map());
    let a = byPhase.get(op.phase);
    if (!a) {
      byPhase.set(
        op.phase,
        a = { iteration: op.iteration, phase: op.phase, ranks: new Map(), paths: new Map() },
      );
    }
    let r = a.ranks.get(rankOf[g]!);
    if (!r) a.ranks.set(rankOf[g]!, r = { start: Infinity, end: -Infinity });
    r.start = Math.min(r.start, op.kind === "barrier" ? end[g]! : start[g]!);
    if (!op.background) r.end = Math.max(r.end, end[g]!);
    if ((op.kind === "read" || op.kind === "write") && op.path !== undefined) {
      let p = a.paths.get(op.path);
      if (!p) a.paths.set(op.path, p = { ops: [], read: 0, write: 0 });
      p.ops.push(g);
      p[op.kind] += op.bytes;
    }
  });
  return [...acc.values()].flatMap((m) => [...m.values()]).map((a) => {
    let first = Infinity, last = -Infinity;
    for (const r of a.ranks.values()) {
      if (r.end === -Infinity) continue;
      first = Math.min(first, r.start);
      last = Math.max(last, r.end);
    }
    const busy: Record<string, number> = {};
    const bytes: Record<string, number> = {};
    for (const [path, p] of a.paths) {
      busy[path] = busyLength(p.ops, start, end);
      if (p.read > 0) bytes[`${path}:read`] = p.read;
      if (p.write > 0) bytes[`${path}:write`] = p.write;
    }
    return {
      iteration: a.iteration,
      phase: a.phase,
      time_s: last === -Infinity ? 0 : last - first,
      busy_s: busy,
      bytes,
    };
  });
}

/** Length of the union of the ops' [start, end] intervals (`list` holds op indices). */
function busyLength(list: readonly number[], start: Float64Array, end: Float64Array): number {
  return unionLength(list.map((g) => [start[g]!, end[g]!] as const));
}
