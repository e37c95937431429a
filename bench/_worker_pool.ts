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

/** Idle Workers that outlived their pool, for the process's next pool: see {@linkcode leaveWorkersToExit}. */
const parked = new Map<string, Worker[]>();
let leaveToExit = false;

/**
 * For a process that ends in `Deno.exit` (the command line): a closed pool
 * parks its idle Workers for the next pool of the same URL instead of
 * terminating them, and the exit ends them. Terminating a Worker tears its
 * isolate down, some 3,200 `madvise(MADV_DONTNEED)` calls, each a TLB
 * flush on every core the process runs on: 64 jobs doing I/O spent 1–4 s
 * of CPU and up to 2 s of wall time after the run on that alone. A process
 * that calls this must end in `Deno.exit`: a parked Worker keeps it alive.
 *
 * @example
 * ```ts
 * import { leaveWorkersToExit } from "./_worker_pool.ts";
 * if (import.meta.main) leaveWorkersToExit(); // then Deno.exit() at the end
 * ```
 */
export function leaveWorkersToExit(): void {
  leaveToExit = true;
}

/** Idle job Workers, handed out one per job and given back after a clean end. */
export class WorkerPool implements Disposable {
  readonly #url: URL;
  #idle: Worker[] = [];
  #closed = false;

  constructor(url: URL) {
    this.#url = url;
  }

  /** An idle Worker (this pool's, or one a closed pool parked), or a new one named `name`. */
  take(name: string): Worker {
    return this.#idle.pop() ?? parked.get(this.#url.href)?.pop() ??
      new Worker(this.#url, { type: "module", name });
  }

  /** Keeps `w` (its job ended cleanly) for a later job; ends it once the pool is closed. */
  give(w: Worker): void {
    w.onmessage = null;
    w.onerror = null;
    if (this.#closed) this.#end(w);
    else this.#idle.push(w);
  }

  /** How many Workers wait for a job. */
  get idle(): number {
    return this.#idle.length;
  }

  /** Ends every idle Worker (terminated, or parked); later ones given back end too. */
  [Symbol.dispose](): void {
    this.#closed = true;
    for (const w of this.#idle) this.#end(w);
    this.#idle = [];
  }

  #end(w: Worker): void {
    if (!leaveToExit) return w.terminate();
    const list = parked.get(this.#url.href) ?? [];
    list.push(w);
    parked.set(this.#url.href, list);
  }
}
