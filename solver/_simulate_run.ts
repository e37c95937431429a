/**
 * The fluid model of simulate.ts stepped through: ops start as their
 * dependencies finish; transfers move at the rates of what moves beside
 * them, shared evenly on a path direction, up to its limit of transfers at
 * once; compute ops take their think time; locks and barriers hold ops back.
 *
 * @module
 */

import type { Op } from "../workloads/ops.ts";
import type { OpGraph, PathKeys } from "./_simulate_graph.ts";

/** A transfer in flight: op g on path direction `key`, bytes `left`, moving at `rate`. */
interface Transfer {
  readonly g: number;
  readonly key: number;
  left: number;
  rate: number;
}

/** A compute op with its end time. */
interface Compute {
  readonly g: number;
  readonly at: number;
}

/** One run of a program's ops through the fluid model; {@linkcode FluidRun.run} steps it. */
export class FluidRun {
  /** Each op's start and end, s (NaN: not yet). */
  readonly start: Float64Array;
  readonly end: Float64Array;
  /** Simulated time, s. */
  now = 0;
  /** Ops finished. */
  done = 0;
  readonly #ops: readonly Op[];
  readonly #ready: number[] = [];
  #head = 0;
  readonly #computes: Compute[] = [];
  readonly #transfers: Transfer[] = [];
  readonly #inflight: Int32Array;
  readonly #waiting: number[][];
  readonly #arrived = new Map<number, number[]>();
  // node-wide locks: who holds each, and who waits for it, first come first served
  readonly #holder = new Map<string, number>();
  readonly #lockQueue = new Map<string, number[]>();

  /** A run of `graph`'s ops over `ranks` ranks, transfers on `paths`, at the rates `ratesFor` gives. */
  constructor(
    readonly graph: OpGraph,
    readonly ranks: number,
    readonly paths: PathKeys,
    readonly ratesFor: (counts: Int32Array) => Float64Array,
  ) {
    const n = graph.ops.length;
    this.#ops = graph.ops;
    this.start = new Float64Array(n).fill(NaN);
    this.end = new Float64Array(n).fill(NaN);
    this.#inflight = new Int32Array(paths.keys.length);
    this.#waiting = paths.keys.map(() => []);
    for (let g = 0; g < n; g++) if (graph.pending[g] === 0) this.#ready.push(g);
  }

  /** Steps until nothing runs: the ops that can start, then to the next end of a transfer or compute. */
  run(): void {
    for (;;) {
      while (this.#head < this.#ready.length) this.#begin(this.#ready[this.#head++]!);
      if (this.#head > 4096) {
        this.#ready.splice(0, this.#head);
        this.#head = 0;
      }
      if (this.#computes.length === 0 && this.#transfers.length === 0) break;
      this.#advance();
    }
  }

  /** Moves time to the first end of a transfer or compute, finishing what ends then. */
  #advance(): void {
    const transfers = this.#transfers;
    const computes = this.#computes;
    const inflight = this.#inflight;
    // rates for what moves now
    const rates = this.ratesFor(inflight);
    let dt = Infinity;
    let first: Transfer | Compute | undefined;
    for (const t of transfers) {
      t.rate = rates[t.key]! / inflight[t.key]!;
      const s = t.left / t.rate;
      if (s < dt) [dt, first] = [s, t];
    }
    for (const c of computes) {
      if (c.at - this.now < dt) [dt, first] = [c.at - this.now, c];
    }
    this.now += Math.max(0, dt);
    const finished: Transfer[] = [];
    for (const t of transfers) {
      t.left -= t.rate * dt;
      if (t === first || t.left <= 1e-9 * this.#ops[t.g]!.bytes) finished.push(t);
    }
    for (const t of finished) this.#finishTransfer(t);
    for (let i = computes.length - 1; i >= 0; i--) {
      const c = computes[i]!;
      if (c === first || c.at <= this.now + 1e-12) {
        computes.splice(i, 1);
        this.#complete(c.g);
      }
    }
  }

  /** Op g is done: its dependents that wait for nothing else become ready. */
  #complete(g: number): void {
    const { depStart, depOf, pending } = this.graph;
    this.end[g] = this.now;
    this.done++;
    for (let i = depStart[g]!; i < depStart[g + 1]!; i++) {
      const d = depOf[i]!;
      if (--pending[d]! === 0) this.#ready.push(d);
    }
  }

  /** Transfer op g starts moving on path direction `key`. */
  #activate(g: number, key: number): void {
    this.#inflight[key]!++;
    this.#transfers.push({ g, key, left: this.#ops[g]!.bytes, rate: 0 });
  }

  /** Op g starts, and ends at once where it takes no time. */
  #begin(g: number): void {
    const op = this.#ops[g]!;
    this.start[g] = this.now;
    switch (op.kind) {
      case "compute":
        if ((op.ms ?? 0) > 0) this.#computes.push({ g, at: this.now + op.ms! / 1000 });
        else this.#complete(g);
        return;
      case "hit":
        this.#complete(g);
        return;
      case "lock":
        return this.#lock(g, op.lock ?? "");
      case "unlock":
        return this.#unlock(g, op.lock ?? "");
      case "barrier":
        return this.#barrier(g);
      case "read":
      case "write": {
        if (op.bytes <= 0) {
          this.#complete(g);
          return;
        }
        const key = this.paths.keyOf[g]!;
        if (this.#inflight[key]! < this.paths.limit[key]!) this.#activate(g, key);
        else this.#waiting[key]!.push(g);
        return;
      }
    }
  }

  /** Lock op g takes lock `name` where it is free, else waits for it. */
  #lock(g: number, name: string): void {
    if (!this.#holder.has(name)) {
      this.#holder.set(name, g);
      this.#complete(g);
    } else {
      const q = this.#lockQueue.get(name) ?? [];
      q.push(g);
      this.#lockQueue.set(name, q);
    }
  }

  /** Unlock op g hands lock `name` to the first op waiting for it, or frees it. */
  #unlock(g: number, name: string): void {
    const next = this.#lockQueue.get(name)?.shift();
    if (next === undefined) this.#holder.delete(name);
    else {
      this.#holder.set(name, next);
      this.#complete(next);
    }
    this.#complete(g);
  }

  /** Barrier op g arrives; the barrier releases when every rank has reached it. */
  #barrier(g: number): void {
    const k = this.graph.barrierIndex[g]!;
    const list = this.#arrived.get(k) ?? [];
    list.push(g);
    this.#arrived.set(k, list);
    if (list.length === this.ranks) {
      this.#arrived.delete(k);
      for (const b of list) this.#complete(b);
    }
  }

  /** Transfer `t` is done: the next op waiting for its path direction starts. */
  #finishTransfer(t: Transfer): void {
    this.#transfers.splice(this.#transfers.indexOf(t), 1);
    this.#inflight[t.key]!--;
    this.#complete(t.g);
    const next = this.#waiting[t.key]!.shift();
    if (next !== undefined) this.#activate(next, t.key);
  }
}
