/**
 * The operations a kernel I/O queue offers the loops that drive it, as fio's
 * engines hand its core an `ioengine_ops` table (prep, queue, commit,
 * getevents, event): libaio's context (`AioQueue` in _aio_ring.ts) and an
 * io_uring ring (`UringQueue` in _uring.ts) each implement
 * {@linkcode KernelQueue}, and the loops over them are written once — a job's
 * in _async_engine.ts, a rank stream's in _stream.ts — with the timing, the
 * in-flight accounting and the errors.
 *
 * A queue has `depth` slots; slot s owns bytes [s × slotBytes, (s + 1) ×
 * slotBytes) of the queue's buffers and names its request in the completion.
 * Prepared requests wait in the queue, oldest first, until a submit hands them
 * to the kernel.
 *
 * @module
 */

/** The names a queue's failures carry: the system calls, as the user would look them up. */
export interface QueueCalls {
  /** The call a failed read completion reports, e.g. `pread (libaio)`. */
  readonly read: string;
  /** The call a failed write completion reports. */
  readonly write: string;
  /** The submitting call, e.g. `io_submit`. */
  readonly submit: string;
  /** The waiting call, e.g. `io_getevents`. */
  readonly wait: string;
  /** What to add to a failed wait's message where the call alone does not say it. */
  readonly waitDetail?: string;
}

/** A kernel I/O queue of `depth` slots with their buffers. */
export interface KernelQueue {
  /** How many requests the queue holds at once. */
  readonly depth: number;
  /** The bytes of each slot's buffer. */
  readonly slotBytes: number;
  /** Every slot's buffer, one after the other. */
  readonly bytes: Uint8Array<ArrayBuffer>;
  /** The names of the queue's calls, for errors. */
  readonly calls: QueueCalls;
  /** Whether a wait can end at a timeout (otherwise it lasts until a completion). */
  readonly timedWaits: boolean;
  /** The address of slot `slot`'s buffer. */
  address(slot: number): bigint;
  /**
   * Queues a request in slot `slot`: `len` bytes of its buffer to (`write`)
   * or from file `fd` at `offset`. `file` is the descriptor's index among the
   * files the queue registered, if it did (io_uring's registerfiles).
   */
  prepare(
    slot: number,
    write: boolean,
    fd: number,
    file: number,
    offset: number,
    len: number,
  ): void;
  /**
   * Hands the queued requests to the kernel, on this thread: how many it
   * took, oldest first (they are in flight from now; the rest stay queued),
   * or `-errno`.
   */
  submit(): number;
  /** The same on a thread of Deno's blocking pool, so this thread's event loop stays free. */
  submitAsync(): Promise<number>;
  /**
   * While `on`, every request prepared is one the kernel completes in the
   * submit itself, moving no byte (io_uring's NOP), where the queue has such
   * a request; the loop's calls stay the same. For a warm-up of zero-length
   * requests: on tmpfs each zero-length read is otherwise handed to an
   * io_uring worker thread, and the job sleeps until it has run.
   */
  warming?(on: boolean): void;
  /**
   * Takes the completions the kernel has already posted, without a system
   * call: how many are ready for {@linkcode eventSlot}, 0 when none is.
   */
  reapReady(): number;
  /**
   * Waits on this thread for at least one completion, at most `timeoutNs`
   * (without it, until one completes; a wait that can time out arms a timer
   * in the kernel each time): how many are ready for {@linkcode eventSlot}
   * (0 when the time ran out), or `-errno` (`-EINTR` on a signal). Call it
   * when {@linkcode reapReady} found none.
   */
  getevents(timeoutNs?: number): number;
  /** The same on a thread of Deno's blocking pool. */
  geteventsAsync(timeoutNs?: number): Promise<number>;
  /** The slot of ready completion `e`. */
  eventSlot(e: number): number;
  /** The result of ready completion `e`: bytes moved, or `-errno`. */
  eventResult(e: number): number;
  /** Gives the first `n` ready completions back once they are read. */
  release(n: number): void;
  /**
   * Waits for what is in flight (at most `limitMs`), then releases the
   * kernel's queue and the buffers (these only when nothing was left in flight).
   */
  close(limitMs?: number): void;
}
