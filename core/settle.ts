/**
 * Waiting for tasks: for every one of several before failing, which a caller
 * needs when a task may still be using C memory, a kernel queue or a library
 * that the caller frees as soon as it returns; and for one no longer than a
 * timeout, for calls into storage that may never return.
 *
 * `Promise.all` rejects at the first failure while the other tasks go on. A
 * rank that closed its channels there would free the buffers and the AIO
 * context of a wait still running on Deno's blocking pool, and the thread
 * that ends the rank's Worker next would unload libaio beneath that wait.
 *
 * @module
 */

/**
 * Resolves with every value once all `tasks` have settled, or rejects with
 * the first failure to happen (in time, not in order), again only once all
 * have settled. `onFailure` runs at that first failure, so the caller can
 * tell the others to stop early.
 *
 * @example
 * ```ts
 * import { settleAll } from "./settle.ts";
 * let slowDone = false;
 * const slow = new Promise<void>((r) => setTimeout(() => { slowDone = true; r(); }, 20));
 * const failing = Promise.reject(new Error("disk gone"));
 * try {
 *   await settleAll([slow, failing]);
 * } catch (e) {
 *   console.assert((e as Error).message === "disk gone" && slowDone);
 * }
 * ```
 */
export async function settleAll<T>(
  tasks: readonly Promise<T>[],
  onFailure?: (error: unknown) => void,
): Promise<T[]> {
  let first: { error: unknown } | undefined;
  const watched = tasks.map((t) =>
    t.catch((error: unknown) => {
      if (first === undefined) {
        first = { error };
        onFailure?.(error);
      }
      throw error;
    })
  );
  const results = await Promise.allSettled(watched);
  if (first !== undefined) throw first.error;
  return results.map((r) => (r as PromiseFulfilledResult<T>).value);
}

/** What {@linkcode withinTimeout} resolves with when `ms` went by first. */
export const TIMED_OUT: unique symbol = Symbol("timed out");

/**
 * `task`'s value, or {@linkcode TIMED_OUT} once `ms` went by without it:
 * for a call into storage that may never return (a hung mount, a server
 * that stopped answering). The task is not cancelled — a thread blocked in
 * a system call cannot be — so the caller leaves alone whatever it was
 * touching; a rejection that comes later is swallowed.
 *
 * @example
 * ```ts
 * import { TIMED_OUT, withinTimeout } from "./settle.ts";
 * console.assert(await withinTimeout(Promise.resolve(1), 100) === 1);
 * console.assert(await withinTimeout(new Promise(() => {}), 10) === TIMED_OUT);
 * ```
 */
export async function withinTimeout<T>(
  task: Promise<T>,
  ms: number,
): Promise<T | typeof TIMED_OUT> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = setTimeout(() => resolve(TIMED_OUT), ms);
  });
  task.catch(() => {}); // settled after the deadline: nobody is waiting for it any more
  try {
    return await Promise.race([task, late]);
  } finally {
    clearTimeout(timer);
  }
}
