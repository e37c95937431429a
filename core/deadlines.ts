/**
 * Deadlines of many requests kept by one timer. A timer per request costs
 * a timer object, its place in the timer heap and its clearing (and, raced
 * against the request, two more promises) on every request, though almost
 * none ever fires; here each request adds an entry to a set, and one timer
 * is armed for the oldest entry's time: when it fires it calls what is due
 * and re-arms for the next. A deadline fires at its time, as late as a timer
 * of its own would (two layers of deadlines, such as a request's whole time
 * and its attempts', keep their order). The timer never keeps the process
 * alive: the requests it guards do.
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
 * const slow = new Promise<void>((resolve) => setTimeout(resolve, 1000));
 * const e = await deadlines.within(slow, () => new Error("late")).catch((e) => e);
 * console.assert(e.message === "late");
 * ```
 */
export class Deadlines {
  readonly #ms: number;
  readonly #pending = new Set<Entry>();
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(ms: number) {
    this.#ms = ms;
  }

  /** Calls `late` once `ms` have passed, unless {@linkcode remove}d first; its handle. */
  add(late: () => void): object {
    const entry = { due: performance.now() + this.#ms, late };
    this.#pending.add(entry);
    if (this.#timer === undefined) this.#arm(this.#ms);
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

  #arm(ms: number): void {
    const timer = setTimeout(() => this.#fire(), ms);
    Deno.unrefTimer(timer);
    this.#timer = timer;
  }

  #fire(): void {
    this.#timer = undefined;
    const now = performance.now();
    // entries come in the order they were added, which is the order they fall due
    for (const entry of this.#pending) {
      if (entry.due > now) return this.#arm(entry.due - now);
      this.#pending.delete(entry);
      entry.late();
    }
  }
}
