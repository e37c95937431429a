/**
 * An io_uring ring as the engines' {@linkcode KernelQueue}:
 * {@linkcode UringQueue} over a `Uring` (_uring.ts) with its buffers, fio's
 * `fixedbufs` and `registerfiles` applied when the ring is set up, and the
 * line that says why the kernel refuses io_uring.
 *
 * @module
 */

import {
  type AlignedBuffer,
  allocAligned,
  allocIoBuffer,
  errnoName,
  freeAligned,
  readSmallFile,
} from "../core/libc.ts";
import type { KernelQueue, QueueCalls } from "./_kernel_queue.ts";
import {
  ETIME,
  IORING_FEAT_SQPOLL_NONFIXED,
  IOSQE_FIXED_FILE,
  OP,
  Uring,
  type UringSetup,
} from "./_uring.ts";

const EPERM = 1;
const EINTR = 4;
const ENOSYS = 38;
/** How long the wait that learns a lost errno lasts: 1 ms. */
const ERRNO_WAIT_NS = 1_000_000;
/** Where the kernel's switch lives. */
export const DISABLED_SYSCTL = "/proc/sys/kernel/io_uring_disabled";

/**
 * The line for an io_uring_setup that failed with `errno` while the sysctl
 * kernel.io_uring_disabled reads `disabled` (undefined when absent).
 *
 * @example
 * ```ts
 * import { refusalMessage } from "./_uring_queue.ts";
 * console.assert(refusalMessage(1, "2").includes("2: off for everyone"));
 * ```
 */
export function refusalMessage(errno: number, disabled: string | undefined): string {
  const why = errno === ENOSYS
    ? "this kernel has no io_uring (io_uring_setup: ENOSYS)"
    : `io_uring_setup failed with ${errnoName(errno)}`;
  const sysctl = disabled === undefined
    ? "sysctl kernel.io_uring_disabled is absent"
    : `sysctl kernel.io_uring_disabled = ${disabled}` +
      (disabled === "2"
        ? " (2: off for everyone)"
        : disabled === "1"
        ? " (1: only for members of kernel.io_uring_group)"
        : "");
  const hint = errno === EPERM || errno === ENOSYS
    ? "set kernel.io_uring_disabled = 0 or use --engine libaio"
    : "use --engine libaio";
  return `io_uring is not available: ${why}; ${sysctl}; ${hint}`;
}

/** How to set a queue up: the ring, its slots, and what to register. */
export interface UringQueueSetup extends UringSetup {
  /** The bytes of each slot's buffer. */
  readonly slotBytes: number;
  /** The buffers' alignment in bytes. */
  readonly alignment: number;
  /** fio's fixedbufs: the slots' buffers are registered, requests READ_FIXED/WRITE_FIXED. */
  readonly fixedbufs?: boolean;
  /** fio's registerfiles: `files` are registered, requests name them by index. */
  readonly registerfiles?: boolean;
  /** The descriptors to register (with `registerfiles`, or for SQPOLL on a kernel before 5.11). */
  readonly files?: readonly number[];
}

/** The names of io_uring's calls in failures. */
const URING_CALLS: QueueCalls = {
  read: "read (io_uring)",
  write: "write (io_uring)",
  submit: "io_uring_enter",
  wait: "io_uring_enter",
  waitDetail: "(wait)",
};

/**
 * A ring with `entries` slots of `slotBytes` each: prepared SQEs wait in the
 * SQ ring until an io_uring_enter takes them, and completions are read from
 * the CQ ring, all that are ready at once, entering the kernel to wait only
 * when none is.
 *
 * @example
 * ```ts ignore
 * const q = UringQueue.open({ entries: 8, slotBytes: 1 << 20, alignment: 4096 }, fail);
 * try {
 *   q.prepare(0, false, fd, 0, 0, 1 << 20);
 *   q.submit();
 *   const n = q.reapReady() || q.getevents();
 *   q.eventSlot(0); q.eventResult(0); q.release(n);
 * } finally { q.close(); }
 * ```
 */
export class UringQueue implements KernelQueue {
  readonly calls = URING_CALLS;
  readonly depth: number;
  readonly slotBytes: number;
  /** The ring itself. */
  readonly ring: Uring;
  readonly #buffers: AlignedBuffer;
  /** The address of slot 0's buffer as a number (exact below 2^53). */
  readonly #base: number;
  /** The opcodes prepared: READ(_FIXED) and WRITE(_FIXED), or NOP while warming. */
  #readOp: number;
  #writeOp: number;
  readonly #fixedbufs: boolean;
  /** Whether SQEs name registered files (IOSQE_FIXED_FILE). */
  readonly #fixedFiles: boolean;

  private constructor(
    ring: Uring,
    buffers: AlignedBuffer,
    setup: UringQueueSetup,
    fixedFiles: boolean,
  ) {
    this.ring = ring;
    this.depth = setup.entries;
    this.slotBytes = setup.slotBytes;
    this.#buffers = buffers;
    this.#base = Number(buffers.address);
    this.#fixedbufs = setup.fixedbufs === true;
    this.#readOp = this.#fixedbufs ? OP.READ_FIXED : OP.READ;
    this.#writeOp = this.#fixedbufs ? OP.WRITE_FIXED : OP.WRITE;
    this.#fixedFiles = fixedFiles;
  }

  /**
   * Sets the ring up, allocates its buffers and registers what `setup`
   * asks. A refused io_uring (EPERM, ENOSYS) throws an Error naming
   * kernel.io_uring_disabled; any other failed call goes to `fail` with its
   * errno, which throws the caller's own error.
   */
  static open(setup: UringQueueSetup, fail: (syscall: string, errno: number) => never): UringQueue {
    const failed = (syscall: string, errno: number): never => {
      if (syscall === "io_uring_setup" && (errno === EPERM || errno === ENOSYS)) {
        throw new Error(refusalMessage(errno, readSmallFile(DISABLED_SYSCTL)?.trim()));
      }
      return fail(syscall, errno);
    };
    const ring = Uring.open(setup, failed);
    let buffers: AlignedBuffer | undefined;
    try {
      buffers = allocIoBuffer(setup.entries * setup.slotBytes, setup.alignment);
      if (setup.fixedbufs) registerBuffers(ring, buffers, setup, failed);
      // Before IORING_FEAT_SQPOLL_NONFIXED (5.11) the SQ thread took registered files only.
      const fixedFiles = setup.registerfiles === true ||
        (setup.sqpoll === true && (ring.features & IORING_FEAT_SQPOLL_NONFIXED) === 0);
      if (fixedFiles) {
        const rc = ring.registerFiles(setup.files ?? []);
        if (rc < 0) failed("io_uring_register (files)", -rc);
      }
      return new UringQueue(ring, buffers, setup, fixedFiles);
    } catch (e) {
      const drained = ring.close();
      if (buffers && drained) freeAligned(buffers);
      throw e;
    }
  }

  get bytes(): Uint8Array<ArrayBuffer> {
    return this.#buffers.bytes;
  }

  /** Whether waits may time out (IORING_FEAT_EXT_ARG, Linux 5.11). */
  get timedWaits(): boolean {
    return this.ring.timedWaits;
  }

  address(slot: number): bigint {
    return this.#buffers.address + BigInt(slot * this.slotBytes);
  }

  prepare(slot: number, write: boolean, fd: number, file: number, offset: number, len: number) {
    const fixed = this.#fixedFiles;
    this.ring.prepare(
      write ? this.#writeOp : this.#readOp,
      fixed ? file : fd,
      fixed ? IOSQE_FIXED_FILE : 0,
      this.#base + slot * this.slotBytes,
      len,
      offset,
      slot,
      slot,
    );
  }

  submit(): number {
    return this.ring.submit();
  }

  submitAsync(): Promise<number> {
    return this.ring.submitAsync();
  }

  /**
   * While `on`, requests are IORING_OP_NOP, completed in the submit that takes
   * them (res 0, as a zero-length read's), so a warm-up's waits return at once
   * instead of sleeping on the io-wq worker that a tmpfs read is handed to.
   * The same fields are read per request, so the code V8 compiles is the same.
   */
  warming(on: boolean): void {
    this.#readOp = on ? OP.NOP : this.#fixedbufs ? OP.READ_FIXED : OP.READ;
    this.#writeOp = on ? OP.NOP : this.#fixedbufs ? OP.WRITE_FIXED : OP.WRITE;
  }

  reapReady(): number {
    return this.ring.ready();
  }

  getevents(timeoutNs?: number): number {
    const ring = this.ring;
    const rc = ring.wait(1, timeoutNs);
    if (rc === -ETIME) return 0;
    return rc < 0 ? rc : ring.ready();
  }

  async geteventsAsync(timeoutNs?: number): Promise<number> {
    const ring = this.ring;
    let n = 0;
    const timed = timeoutNs !== undefined && ring.timedWaits;
    const waited = await ring.waitAsync(timed ? timeoutNs : undefined);
    n = ring.ready();
    if (n > 0 || timed || waited >= 0) return n;
    // The pool's thread lost errno: a short wait here says what it was.
    const rc = ring.wait(1, ERRNO_WAIT_NS);
    if (rc < 0 && rc !== -ETIME && rc !== -EINTR) return rc;
    return ring.ready();
  }

  eventSlot(e: number): number {
    return this.ring.cqeData(e);
  }

  eventResult(e: number): number {
    return this.ring.cqeResult(e);
  }

  release(n: number): void {
    this.ring.advance(n);
  }

  close(limitMs?: number): void {
    // The kernel may still write into the buffers until what is in flight completes.
    if (this.ring.close(limitMs)) freeAligned(this.#buffers);
  }
}

/** Registers the slots' buffers as fixed buffers 0..depth-1. */
function registerBuffers(
  ring: Uring,
  buffers: AlignedBuffer,
  setup: UringQueueSetup,
  fail: (syscall: string, errno: number) => never,
): void {
  const iovecs = allocAligned(setup.entries * 16, 16);
  try {
    const v = new DataView(iovecs.bytes.buffer);
    for (let s = 0; s < setup.entries; s++) {
      v.setBigUint64(s * 16, buffers.address + BigInt(s * setup.slotBytes), true);
      v.setBigUint64(s * 16 + 8, BigInt(setup.slotBytes), true);
    }
    const rc = ring.registerBuffers(iovecs, setup.entries);
    if (rc < 0) fail("io_uring_register (buffers)", -rc);
  } finally {
    freeAligned(iovecs);
  }
}
