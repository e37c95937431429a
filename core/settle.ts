/**
 * Waiting for every one of several tasks before failing: what a caller needs
 * when a task may still be using C memory, a kernel queue or a library that
 * the caller frees as soon as it returns.
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
