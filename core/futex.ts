/**
 * A start gate on a word of shared memory, waited on and opened with the
 * kernel's futex (through libc's `syscall()`), not with `Atomics.wait` and
 * `Atomics.notify`.
 *
 * V8 wakes the threads blocked in `Atomics.wait` one after the other: each
 * must take a mutex of V8's in turn before it returns, and on a machine with
 * fewer cores than threads each hand-over waits for the next thread to be
 * scheduled among those already running. 64 Workers that run CPU-bound once
 * woken (64 jobs on 2 cores) took 1.4–1.9 s to all wake that way; with
 * `FUTEX_WAKE` the kernel makes them all runnable at once, and the last woke
 * after about 50 ms.
 *
 * @module
 */

import { libc } from "./libc.ts";

/** SYS_futex of this CPU architecture (Linux). */
const SYS_FUTEX = Deno.build.arch === "aarch64" ? 98n : 202n;
/** FUTEX_WAIT and FUTEX_WAKE, FUTEX_PRIVATE_FLAG: the waiters are threads of one process. */
const FUTEX_WAIT_PRIVATE = 128n;
const FUTEX_WAKE_PRIVATE = 129n;
const EVERY_WAITER = 2147483647n;

/** The futex call on `word[index]`: the address is the word itself. */
function futex(word: Int32Array, index: number, op: bigint, val: bigint): void {
  libc().futex(SYS_FUTEX, word.subarray(index, index + 1), op, val, 0n);
}

/**
 * Blocks this thread while `word[index]` is 0. A wake-up before the word
 * changed (a signal, a spurious one) waits again; a word already set
 * returns at once. Opened by {@linkcode openGate}.
 *
 * @example
 * ```ts
 * import { openGate, waitForGate } from "./futex.ts";
 * const word = new Int32Array(new SharedArrayBuffer(8));
 * openGate(word, 1);
 * waitForGate(word, 1); // already open: returns at once
 * ```
 */
export function waitForGate(word: Int32Array, index: number): void {
  // the kernel sleeps only while the word still holds 0, so an opening between the
  // load and the call is not lost
  while (Atomics.load(word, index) === 0) futex(word, index, FUTEX_WAIT_PRIVATE, 0n);
}

/**
 * Sets `word[index]` to 1 and wakes every thread waiting on it in
 * {@linkcode waitForGate}.
 *
 * @example
 * ```ts
 * import { openGate } from "./futex.ts";
 * const word = new Int32Array(new SharedArrayBuffer(8));
 * openGate(word, 0);
 * console.assert(Atomics.load(word, 0) === 1);
 * ```
 */
export function openGate(word: Int32Array, index: number): void {
  Atomics.store(word, index, 1);
  futex(word, index, FUTEX_WAKE_PRIVATE, EVERY_WAITER);
}
