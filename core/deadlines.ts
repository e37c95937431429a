/**
 * Deadlines of many requests kept by one timer. A timer per request costs
 * a timer object, its place in the timer heap and its clearing (and, raced
 * against the request, two more promises) on every request, though almost
 * none ever fires; here each request adds an entry to a set, which one
 * interval timer sweeps while any is pending. A deadline fires between its
 * time and an eighth of it later.
 *
 * @module
 */

/** One pending deadline. */
interface Entry {
  readonly due: number;
  readonly late: () => void;
}

/**
 * Deadlines `ms` after each {@linkcode Deadlines.add}.
 *
 * @example
 * ```ts
 * import { Deadlines } from "./deadlines.ts";
 * const deadlines = new Deadlines(50);
 * const never = new Promise<void>(() => {});
 * const e = await deadlines.within(never, () => new Error("late")).catch((e) => e);
 * console.assert(e.message === "late");
 * ```
 */
export class Deadlines {
  readonly #ms: number;
  readonly #pending = new Set<Entry>();
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(ms: number) {
    this.#ms = ms;
  }

  /** Calls `late` once `ms` have passed, unless {@linkcode remove}d first; its handle. */
  add(late: () => void): object {
    const entry = { due: performance.now() + this.#ms, late };
    this.#pending.add(entry);
    // like a timer per request, a pending deadline keeps the process alive until it is due
    this.#timer ??= setInterval(() => this.#sweep(), Math.max(1, this.#ms / 8));
    return entry;
  }

  /** Takes back the deadline `handle` (from {@linkcode add}); one that has fired is gone already. */
  remove(handle: object): void {
    this.#pending.delete(handle as Entry);
  }

  /** `request`'s outcome, or a rejection with `late()` once `ms` have passed first. */
  within<T>(request: Promise<T>, late: () => unknown): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const handle = this.add(() => reject(late()));
      request.then((v) => {
        this.remove(handle);
        resolve(v);
      }, (e) => {
        this.remove(handle);
        reject(e);
      });
    });
  }

  #sweep(): void {
    const now = performance.now();
    // entries come in the order they were added, which is the order they fall due
    for (const entry of this.#pending) {
      if (entry.due > now) break;
      this.#pending.delete(entry);
      entry.late();
    }
    if (this.#pending.size === 0) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }
}
