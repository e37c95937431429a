/**
 * libaio's context as the engines' {@linkcode KernelQueue}: {@linkcode AioQueue}
 * over an `AioRing` (_aio_ring.ts).
 *
 * @module
 */

import { AioRing, setTimespec, timespec } from "./_aio_ring.ts";
import type { KernelQueue, QueueCalls } from "./_kernel_queue.ts";

/** The names of libaio's calls in failures. */
const AIO_CALLS: QueueCalls = {
  read: "pread (libaio)",
  write: "pwrite (libaio)",
  submit: "io_submit",
  wait: "io_getevents",
};

/**
 * An {@linkcode AioRing} as a {@linkcode KernelQueue}: prepared iocbs wait in
 * order until one io_submit hands them all to the kernel (a lone one through
 * its slot's ready-made address array). Completions already posted are read
 * from the context's ring in this process's memory, without a system call;
 * only when none is does io_getevents wait for one.
 *
 * @example
 * ```ts ignore
 * const q = AioQueue.open(8, 1 << 20, 4096, (syscall, errno) => { throw ... });
 * try {
 *   q.prepare(0, false, fd, 0, 0, 1 << 20);
 *   q.submit();
 *   const n = q.reapReady() || q.getevents();
 *   q.eventSlot(0); q.eventResult(0); q.release(n);
 * } finally { q.close(); }
 * ```
 */
export class AioQueue implements KernelQueue {
  readonly calls = AIO_CALLS;
  readonly timedWaits = true;
  readonly #ring: AioRing;
  /**
   * Prepared slots not yet taken by the kernel, oldest first: the first
   * #nQueued entries. A typed array, not a JS array emptied by `length = 0`:
   * that frees the array's backing store, and the next push allocates a new
   * one, a garbage object per I/O (at 64 jobs the scavenges it caused, and
   * the TLB shootdowns of the pages they gave back, grew the CPU per I/O).
   */
  readonly #queued: Int32Array;
  #nQueued = 0;
  /** The timeout of the last {@linkcode getevents}, kept until another is asked for. */
  readonly #timeout = timespec(0);
  #timeoutNs = 0;

  private constructor(ring: AioRing) {
    this.#ring = ring;
    this.#queued = new Int32Array(ring.depth);
  }

  /** Sets up a context of `depth` slots of `slotBytes` (see {@linkcode AioRing.open}). */
  static open(
    depth: number,
    slotBytes: number,
    alignment: number,
    fail: (syscall: "io_setup", errno: number) => never,
  ): AioQueue {
    return new AioQueue(AioRing.open(depth, slotBytes, alignment, fail));
  }

  get depth(): number {
    return this.#ring.depth;
  }

  get slotBytes(): number {
    return this.#ring.slotBytes;
  }

  get bytes(): Uint8Array<ArrayBuffer> {
    return this.#ring.buffers.bytes;
  }

  address(slot: number): bigint {
    return this.#ring.address(slot);
  }

  prepare(slot: number, write: boolean, fd: number, _file: number, offset: number, len: number) {
    this.#ring.prepare(slot, fd, write, offset, len);
    this.#queued[this.#nQueued++] = slot;
  }

  submit(): number {
    const q = this.#queued;
    const n = this.#nQueued;
    return this.#took(n === 1 ? this.#ring.submitOne(q[0]!) : this.#ring.submit(q, n));
  }

  async submitAsync(): Promise<number> {
    return this.#took(await this.#ring.submitAsync(this.#queued, this.#nQueued));
  }

  /** How many prepared slots wait for a submit. */
  get queued(): number {
    return this.#nQueued;
  }

  /** Drops the `rc` oldest queued slots, which the kernel took. */
  #took(rc: number): number {
    if (rc <= 0) return rc;
    if (rc < this.#nQueued) this.#queued.copyWithin(0, rc, this.#nQueued);
    this.#nQueued -= rc;
    return rc;
  }

  reapReady(): number {
    return this.#ring.takeReady();
  }

  getevents(timeoutNs?: number): number {
    if (timeoutNs === undefined) return this.#ring.reap(null);
    if (timeoutNs !== this.#timeoutNs) {
      setTimespec(this.#timeout, timeoutNs);
      this.#timeoutNs = timeoutNs;
    }
    return this.#ring.reap(this.#timeout);
  }

  geteventsAsync(timeoutNs?: number): Promise<number> {
    return this.#ring.wait(timeoutNs);
  }

  eventSlot(e: number): number {
    return this.#ring.eventSlot(e);
  }

  eventResult(e: number): number {
    return this.#ring.eventResult(e);
  }

  release(n: number): void {
    this.#ring.release(n);
  }

  close(): void {
    this.#ring.close();
  }
}
