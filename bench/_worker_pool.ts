/**
 * Job Workers kept between runs of one session. Starting a Worker costs
 * tens of milliseconds of CPU (its modules load and evaluate: the HDR
 * histograms, the engines), and `bench` runs some 200 jobs in a few
 * minutes; a job Worker that ended its job cleanly takes the next one
 * instead of a new Worker starting. One that failed, hung or was
 * interrupted is terminated, never reused.
 *
 * @module
 */

/** Idle job Workers, handed out one per job and given back after a clean end. */
export class WorkerPool implements Disposable {
  readonly #url: URL;
  #idle: Worker[] = [];
  #closed = false;

  constructor(url: URL) {
    this.#url = url;
  }

  /** An idle Worker, or a new one named `name`. */
  take(name: string): Worker {
    return this.#idle.pop() ?? new Worker(this.#url, { type: "module", name });
  }

  /** Keeps `w` (its job ended cleanly) for a later job; terminates it once the pool is closed. */
  give(w: Worker): void {
    w.onmessage = null;
    w.onerror = null;
    if (this.#closed) w.terminate();
    else this.#idle.push(w);
  }

  /** How many Workers wait for a job. */
  get idle(): number {
    return this.#idle.length;
  }

  /** Terminates every idle Worker; later ones given back are terminated too. */
  [Symbol.dispose](): void {
    this.#closed = true;
    for (const w of this.#idle) w.terminate();
    this.#idle = [];
  }
}
