/**
 * Node-wide coordination of the rank Workers through one SharedArrayBuffer:
 * a barrier for phases, counting semaphores for the per-path limits
 * (MLP-Offload's "one rank reads and one writes a tier at a time"), a start
 * gate the main thread opens (a run across processes starts every node's
 * first iteration together), an abort flag, and progress counters the main
 * thread reads for the progress line.
 *
 * Waits use `Atomics.waitAsync`, so a rank waiting at a barrier or for a
 * path keeps its other streams running.
 *
 * ```
 * Int32Array
 *   0  ABORT     set by anyone: every wait wakes and throws
 *   1  COUNT     ranks arrived at the current barrier
 *   2  GEN       barrier generation (bumped when the last rank arrives)
 *   3  ITER      iteration rank 0 is in (progress)
 *   4  GO        the start gate: 0 closed, 1 open
 *   5+ per path  [readers in, writers in, most readers at once, most writers at once]
 * Float64Array (after the ints, 8-aligned)
 *   per rank    [bytes read, bytes written]
 *   per rank and path  [bytes read, bytes written]  (one writer each: the rank)
 * ```
 *
 * @module
 */

const ABORT = 0;
const COUNT = 1;
const GEN = 2;
const ITER = 3;
const GO = 4;
const PATHS = 5;

/** Thrown in a rank whose wait was cut short by an abort. */
export class AbortedError extends Error {
  override name = "AbortedError";
  constructor() {
    super("aborted");
  }
}

/** The shared state of one workload run. */
export class NodeSync {
  readonly ints: Int32Array<SharedArrayBuffer>;
  readonly f64: Float64Array<SharedArrayBuffer>;
  readonly ranks: number;
  readonly paths: number;

  /** Attaches to (or, without buffers, makes) the shared state for `ranks` ranks and `paths` paths. */
  constructor(
    ranks: number,
    paths: number,
    buffers?: { ints: SharedArrayBuffer; f64: SharedArrayBuffer },
  ) {
    this.ranks = ranks;
    this.ints = new Int32Array(buffers?.ints ?? new SharedArrayBuffer((PATHS + 4 * paths) * 4));
    this.paths = paths;
    this.f64 = new Float64Array(
      buffers?.f64 ?? new SharedArrayBuffer(2 * ranks * (1 + paths) * 8),
    );
  }

  /** What a Worker needs to attach. */
  get buffers(): { ints: SharedArrayBuffer; f64: SharedArrayBuffer } {
    return { ints: this.ints.buffer, f64: this.f64.buffer };
  }

  get aborted(): boolean {
    return Atomics.load(this.ints, ABORT) !== 0;
  }

  /** Stops every rank: each wait wakes and throws {@linkcode AbortedError}. */
  abort(): void {
    Atomics.store(this.ints, ABORT, 1);
    Atomics.add(this.ints, GEN, 1);
    for (let i = 0; i < this.ints.length; i++) Atomics.notify(this.ints, i);
  }

  /** Throws {@linkcode AbortedError} once the run is aborted (as AbortSignal's of that name). */
  throwIfAborted(): void {
    if (this.aborted) throw new AbortedError();
  }

  /** Waits until every rank has called it the same number of times. */
  async barrier(): Promise<void> {
    this.throwIfAborted();
    const gen = Atomics.load(this.ints, GEN);
    if (Atomics.add(this.ints, COUNT, 1) + 1 === this.ranks) {
      Atomics.store(this.ints, COUNT, 0);
      Atomics.add(this.ints, GEN, 1);
      Atomics.notify(this.ints, GEN);
      return;
    }
    while (Atomics.load(this.ints, GEN) === gen) {
      const w = Atomics.waitAsync(this.ints, GEN, gen);
      if (w.async) await w.value;
    }
    this.throwIfAborted();
  }

  /** Opens the start gate: every rank waiting in {@linkcode gate} goes on. */
  open(): void {
    Atomics.store(this.ints, GO, 1);
    Atomics.notify(this.ints, GO);
  }

  /** Waits until the main thread opens the start gate; throws {@linkcode AbortedError} on abort. */
  async gate(): Promise<void> {
    for (;;) {
      this.throwIfAborted();
      if (Atomics.load(this.ints, GO) !== 0) return;
      const w = Atomics.waitAsync(this.ints, GO, 0);
      if (w.async) await w.value;
    }
  }

  /** Enters path `p` for reading or writing, waiting while `limit` ranks are in. */
  async enter(p: number, write: boolean, limit: number): Promise<void> {
    const i = PATHS + 4 * p + (write ? 1 : 0);
    for (;;) {
      this.throwIfAborted();
      const v = Atomics.load(this.ints, i);
      if (v < limit) {
        if (Atomics.compareExchange(this.ints, i, v, v + 1) === v) {
          this.#peak(i + 2, v + 1);
          return;
        }
        continue;
      }
      const w = Atomics.waitAsync(this.ints, i, v);
      if (w.async) await w.value;
    }
  }

  /** Counts a rank in on a path without a limit (for the peak figures only). */
  enterUnlimited(p: number, write: boolean): void {
    const i = PATHS + 4 * p + (write ? 1 : 0);
    this.#peak(i + 2, Atomics.add(this.ints, i, 1) + 1);
  }

  #peak(i: number, now: number): void {
    for (;;) {
      const seen = Atomics.load(this.ints, i);
      if (now <= seen || Atomics.compareExchange(this.ints, i, seen, now) === seen) return;
    }
  }

  /** Most ranks that were ever in path `p` at once: [reading, writing]. */
  peak(p: number): [number, number] {
    const i = PATHS + 4 * p + 2;
    return [Atomics.load(this.ints, i), Atomics.load(this.ints, i + 1)];
  }

  /** Leaves what {@linkcode enter} or {@linkcode enterUnlimited} entered. */
  leave(p: number, write: boolean): void {
    const i = PATHS + 4 * p + (write ? 1 : 0);
    Atomics.sub(this.ints, i, 1);
    Atomics.notify(this.ints, i);
  }

  /** Adds to a rank's byte counters, and to its counters of `path` when given (read by the progress line). */
  count(rank: number, write: boolean, bytes: number, path?: number): void {
    // one writer per slot: a plain add is enough
    this.f64[2 * rank + (write ? 1 : 0)]! += bytes;
    if (path !== undefined) {
      this.f64[2 * this.ranks + 2 * (rank * this.paths + path) + (write ? 1 : 0)]! += bytes;
    }
  }

  /** Bytes moved so far on each path by all ranks: [read, written] per path. */
  pathTotals(): [number, number][] {
    const out: [number, number][] = [];
    for (let p = 0; p < this.paths; p++) {
      let r = 0, w = 0;
      for (let i = 0; i < this.ranks; i++) {
        const b = 2 * this.ranks + 2 * (i * this.paths + p);
        r += this.f64[b]!;
        w += this.f64[b + 1]!;
      }
      out.push([r, w]);
    }
    return out;
  }

  /** Bytes moved so far by all ranks: [read, written]. */
  totals(): [number, number] {
    let r = 0, w = 0;
    for (let i = 0; i < this.ranks; i++) {
      r += this.f64[2 * i]!;
      w += this.f64[2 * i + 1]!;
    }
    return [r, w];
  }

  set iteration(it: number) {
    Atomics.store(this.ints, ITER, it);
  }

  get iteration(): number {
    return Atomics.load(this.ints, ITER);
  }
}
