/**
 * The one io_uring ring of the engines folder: io_uring_setup, io_uring_enter
 * and io_uring_register as raw system calls through libc's `syscall()` (no
 * liburing: Debian 12's 2.3 has no FFI-callable build, and most of it is
 * inline), the rings mmap'ed into this process, and {@linkcode Uring}, which
 * fills submission entries and reads completions straight from that shared
 * memory. The io_uring job engine drives its I/O through it.
 *
 * The kernel and this thread share the rings: the kernel writes the SQ head
 * and the CQ tail, this thread the SQ tail and the CQ head. They are read and
 * written through a `Uint32Array` over the mapped memory
 * (`Deno.UnsafePointerView.getArrayBuffer`) with the ordering liburing gives
 * them, load-acquire and store-release: on x86-64, whose loads and stores
 * already have that order (TSO), plain loads and stores, as liburing's x86
 * build (a compiler barrier and a plain access; V8 keeps typed-array loads,
 * stores and calls in program order); elsewhere `Atomics`, sequentially
 * consistent. `Atomics.load` and `Atomics.store` are calls into V8's builtins
 * (about 10 ns each), and the loop makes four or five a request. The CQ head
 * is this thread's alone to write, so it is kept in a field too.
 *
 * ```
 * struct io_uring_params (120 bytes)      struct io_uring_sqe (64 bytes)
 *   0 u32 sq_entries   4 u32 cq_entries     0 u8 opcode  1 u8 flags  2 u16 ioprio
 *   8 u32 flags       12 u32 sq_thread_cpu  4 s32 fd
 *  16 u32 sq_thread_idle 20 u32 features    8 u64 off
 *  24 u32 wq_fd  28 u32 resv[3]            16 u64 addr
 *  40 io_sqring_offsets: head tail         24 u32 len   28 u32 rw_flags
 *     ring_mask ring_entries flags         32 u64 user_data
 *     dropped array resv1 (u32), u64       40 u16 buf_index  42 u16 personality
 *  80 io_cqring_offsets: head tail         44 s32 file_index  48.. zero
 *     ring_mask ring_entries overflow
 *     cqes flags resv1 (u32), u64          struct io_uring_cqe (16 bytes)
 *                                            0 u64 user_data  8 s32 res  12 u32 flags
 * ```
 *
 * @module
 */

import { type AlignedBuffer, allocAligned, freeAligned, libc } from "../core/libc.ts";

const SYMBOLS = {
  sys_setup: { name: "syscall", parameters: ["i64", "i64", "buffer"], result: "i32" },
  sys_enter: {
    name: "syscall",
    parameters: ["i64", "i64", "i64", "i64", "i64", "pointer", "i64"],
    result: "i32",
  },
  /** The same io_uring_enter on a thread of Deno's blocking pool (errno is lost there). */
  sys_enter_nb: {
    name: "syscall",
    parameters: ["i64", "i64", "i64", "i64", "i64", "pointer", "i64"],
    result: "i32",
    nonblocking: true,
  },
  sys_register: {
    name: "syscall",
    parameters: ["i64", "i64", "i64", "pointer", "i64"],
    result: "i32",
  },
  mmap: { parameters: ["pointer", "usize", "i32", "i32", "i32", "i64"], result: "pointer" },
  munmap: { parameters: ["pointer", "usize"], result: "i32" },
  __errno_location: { parameters: [], result: "pointer" },
} as const satisfies Deno.ForeignLibraryInterface;

type Sys = Deno.DynamicLibrary<typeof SYMBOLS>["symbols"];

let sys: Sys | undefined;

/** libc's `syscall()`, mmap and errno, opened once per thread. */
function calls(): Sys {
  sys ??= Deno.dlopen("libc.so.6", SYMBOLS).symbols;
  return sys;
}

/** errno of the last failed call on this thread. */
function errno(): number {
  const p = calls().__errno_location();
  return p === null ? EIO : new Deno.UnsafePointerView(p).getInt32();
}

/**
 * System call numbers: io_uring came after the tables were unified, so every
 * architecture (x86-64's own table and the generic one of aarch64) has the
 * same three.
 */
export const NR = { setup: 425n, enter: 426n, register: 427n } as const;

const EIO = 5;
/** The wait of {@linkcode Uring.wait} ran out of time. */
export const ETIME = 62;

/** `IORING_OP_*` opcodes used here. */
export const OP = { NOP: 0, READ_FIXED: 4, WRITE_FIXED: 5, READ: 22, WRITE: 23 } as const;
/** `IOSQE_FIXED_FILE`: the SQE's fd is an index into the registered files. */
export const IOSQE_FIXED_FILE = 1;
/** `IORING_SETUP_SQPOLL`: a kernel thread polls the submission queue. */
export const IORING_SETUP_SQPOLL = 2;
/** `IORING_SETUP_COOP_TASKRUN`: completions wait for the task's next kernel entry, no IPI (5.19). */
const IORING_SETUP_COOP_TASKRUN = 1 << 8;
/** `IORING_SETUP_SINGLE_ISSUER`: one task submits (6.0). */
const IORING_SETUP_SINGLE_ISSUER = 1 << 12;
/** `IORING_SETUP_DEFER_TASKRUN`: completions are posted only when that task asks for them (6.1). */
const IORING_SETUP_DEFER_TASKRUN = 1 << 13;
const EINVAL = 22;
const IORING_ENTER_GETEVENTS = 1;
const IORING_ENTER_SQ_WAKEUP = 2;
const IORING_ENTER_EXT_ARG = 8;
const IORING_SQ_NEED_WAKEUP = 1;
const IORING_REGISTER_BUFFERS = 0;
const IORING_REGISTER_FILES = 2;
const IORING_OFF_SQ_RING = 0n;
const IORING_OFF_CQ_RING = 0x8000000n;
const IORING_OFF_SQES = 0x10000000n;
const PROT_READ_WRITE = 0x1 | 0x2;
const MAP_SHARED_POPULATE = 0x01 | 0x8000;
const MAP_FAILED = 0xffffffffffffffffn;

/** `IORING_FEAT_SINGLE_MMAP`: the SQ and CQ rings are one mapping. */
export const IORING_FEAT_SINGLE_MMAP = 1 << 0;
/** `IORING_FEAT_EXT_ARG`: io_uring_enter takes a timeout. */
export const IORING_FEAT_EXT_ARG = 1 << 8;
/** `IORING_FEAT_SQPOLL_NONFIXED`: SQPOLL works without registered files. */
export const IORING_FEAT_SQPOLL_NONFIXED = 1 << 7;

/** The names of `io_uring_params.features` bits, bit 0 first, as the kernel's IORING_FEAT_*. */
const FEATURE_NAMES = [
  "SINGLE_MMAP",
  "NODROP",
  "SUBMIT_STABLE",
  "RW_CUR_POS",
  "CUR_PERSONALITY",
  "FAST_POLL",
  "POLL_32BITS",
  "SQPOLL_NONFIXED",
  "EXT_ARG",
  "NATIVE_WORKERS",
  "RSRC_TAGS",
  "CQE_SKIP",
  "LINKED_FILE",
  "REG_REG_RING",
  "RECVSEND_BUNDLE",
  "MIN_TIMEOUT",
  "RW_ATTR",
  "NO_IOWAIT",
] as const;

/**
 * The names of the bits set in an `io_uring_params.features` mask, lowest
 * first; a bit this build does not know is named `BIT<n>`.
 *
 * @example
 * ```ts
 * import { featureNames } from "./_uring.ts";
 * console.assert(featureNames(0b11).join() === "SINGLE_MMAP,NODROP");
 * ```
 */
export function featureNames(mask: number): string[] {
  const out: string[] = [];
  for (let bit = 0; bit < 32; bit++) {
    if ((mask >>> bit) & 1) out.push(FEATURE_NAMES[bit] ?? `BIT${bit}`);
  }
  return out;
}

/** Whether plain loads and stores have acquire and release order here (x86's TSO). */
const TSO = Deno.build.arch === "x86_64";

const PARAMS_SIZE = 120;
const SQE_SIZE = 64;
const CQE_SIZE = 16;

/** How to set a ring up. */
export interface UringSetup {
  /** SQ entries asked for (the kernel rounds up to a power of two). */
  readonly entries: number;
  /** IORING_SETUP_SQPOLL: a kernel thread submits; enter only to wake it. */
  readonly sqpoll?: boolean;
  /** How long the SQ thread spins idle before it sleeps, in ms (kernel default when absent). */
  readonly sqThreadIdleMs?: number;
  /**
   * Only the thread that sets the ring up submits to it and waits on it (no
   * {@linkcode Uring.waitAsync}): asks for IORING_SETUP_SINGLE_ISSUER,
   * DEFER_TASKRUN and COOP_TASKRUN, as fio does, dropping what the kernel
   * refuses; ignored with `sqpoll`.
   */
  readonly singleIssuer?: boolean;
}

/** A mapping made by mmap. */
interface Mapping {
  readonly pointer: Deno.PointerObject;
  readonly length: number;
}

/**
 * One io_uring instance with its rings mapped. SQEs are filled in ring order;
 * each carries a 32-bit `user_data` that its CQE gives back.
 *
 * @example
 * ```ts ignore
 * const ring = Uring.open({ entries: 8 }, (syscall, errno) => { throw ... });
 * try {
 *   ring.prepare(OP.READ, fd, 0, buf.address, 4096, 0, 7, 0);
 *   ring.submit();
 *   ring.wait(1);
 *   ring.cqeData(0); ring.cqeResult(0); ring.advance(1);
 * } finally { ring.close(); }
 * ```
 */
export class Uring {
  /** The ring's file descriptor. */
  readonly fd: number;
  /** `io_uring_params.features` as the kernel returned it. */
  readonly features: number;
  /** SQ entries the kernel gave. */
  readonly sqEntries: number;
  /** CQ entries the kernel gave. */
  readonly cqEntries: number;
  /** Whether a kernel thread polls the SQ (IORING_SETUP_SQPOLL). */
  readonly sqpoll: boolean;
  /** Whether completions are posted only inside io_uring_enter(GETEVENTS) (IORING_SETUP_DEFER_TASKRUN). */
  readonly deferTaskrun: boolean;
  readonly #sys: Sys;
  readonly #maps: Mapping[];
  /** The SQ ring's words (and the CQ ring's with a single mapping). */
  readonly #sq: Uint32Array<ArrayBuffer>;
  readonly #cq: Uint32Array<ArrayBuffer>;
  readonly #cqRes: Int32Array<ArrayBuffer>;
  readonly #sqe: Uint32Array<ArrayBuffer>;
  readonly #sqHead: number;
  readonly #sqTail: number;
  readonly #sqFlags: number;
  readonly #sqMask: number;
  readonly #cqHead: number;
  readonly #cqTail: number;
  readonly #cqMask: number;
  /** Word index of the first CQE in #cq. */
  readonly #cqes: number;
  /** The SQ tail as filled (a u32, wrapping as the kernel's). */
  #tail: number;
  /** The SQ tail as last published to the kernel: only this thread writes it. */
  #published: number;
  /** The CQ head as this thread last wrote it (only this thread writes it). */
  #head: number;
  /** The ring's descriptor as io_uring_enter's argument. */
  readonly #fdArg: bigint;
  /** SQEs published and not yet consumed by an io_uring_enter (no SQPOLL). */
  #unsubmitted = 0;
  /** Requests the kernel holds: taken by a submit, not yet reaped. */
  #inFlight = 0;
  /** io_uring_getevents_arg (24 bytes) then a __kernel_timespec, in C memory. */
  readonly #waitArg: AlignedBuffer;
  readonly #waitView: DataView;
  /** The same for {@linkcode Uring.waitAsync}'s timeout. */
  readonly #asyncWaitArg: AlignedBuffer;
  readonly #big: bigint[];
  #closed = false;

  private constructor(fd: number, params: DataView, maps: Mapping[], sys: Sys) {
    this.fd = fd;
    this.#sys = sys;
    this.#maps = maps;
    this.sqEntries = params.getUint32(0, true);
    this.cqEntries = params.getUint32(4, true);
    this.sqpoll = (params.getUint32(8, true) & IORING_SETUP_SQPOLL) !== 0;
    this.deferTaskrun = (params.getUint32(8, true) & IORING_SETUP_DEFER_TASKRUN) !== 0;
    this.features = params.getUint32(20, true);
    const u32 = (at: number) => params.getUint32(at, true) / 4;
    const view = (m: Mapping) =>
      new Uint32Array(Deno.UnsafePointerView.getArrayBuffer(m.pointer, m.length));
    this.#sq = view(maps[0]!);
    this.#cq = maps.length === 3 ? view(maps[1]!) : this.#sq;
    this.#cqRes = new Int32Array(this.#cq.buffer);
    this.#sqe = view(maps[maps.length - 1]!);
    this.#sqHead = u32(40);
    this.#sqTail = u32(44);
    this.#sqMask = this.#sq[u32(48)]!;
    this.#sqFlags = u32(56);
    const array = u32(64);
    this.#cqHead = u32(80);
    this.#cqTail = u32(84);
    this.#cqMask = this.#cq[u32(88)]!;
    this.#cqes = u32(100);
    // SQ index i always names SQE i: the indirection array is set once.
    for (let i = 0; i < this.sqEntries; i++) this.#sq[array + i] = i;
    this.#tail = Atomics.load(this.#sq, this.#sqTail);
    this.#published = this.#tail;
    this.#head = Atomics.load(this.#cq, this.#cqHead);
    this.#fdArg = BigInt(fd);
    this.#waitArg = allocAligned(64, 64);
    this.#waitArg.bytes.fill(0);
    this.#waitView = new DataView(this.#waitArg.bytes.buffer);
    this.#asyncWaitArg = allocAligned(64, 64);
    this.#asyncWaitArg.bytes.fill(0);
    // Counts and flags as arguments, made once: a BigInt made per call is an allocation.
    this.#big = Array.from({ length: Math.max(this.cqEntries + 1, 16) }, (_, i) => BigInt(i));
  }

  /**
   * Sets a ring up and maps it. A failed system call goes to `fail` with its
   * errno (io_uring_setup: EPERM when kernel.io_uring_disabled forbids it,
   * ENOSYS when the kernel lacks io_uring), which throws the caller's error.
   */
  static open(
    setup: UringSetup,
    fail: (syscall: "io_uring_setup" | "mmap", errno: number) => never,
  ): Uring {
    const s = calls();
    const params = new Uint8Array(PARAMS_SIZE);
    const p = new DataView(params.buffer);
    let flags = setup.sqpoll ? IORING_SETUP_SQPOLL : 0;
    if (setup.singleIssuer && !setup.sqpoll) {
      flags |= IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    }
    let fd: number;
    for (;;) {
      params.fill(0);
      p.setUint32(8, flags, true);
      if (setup.sqpoll && setup.sqThreadIdleMs !== undefined) {
        p.setUint32(16, setup.sqThreadIdleMs, true);
      }
      fd = s.sys_setup(NR.setup, BigInt(setup.entries), params);
      if (fd >= 0) break;
      const e = errno();
      // A kernel refuses the flags it does not know: drop the newest first, as fio does.
      if (e === EINVAL && flags & IORING_SETUP_DEFER_TASKRUN) {
        flags &= ~(IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SINGLE_ISSUER);
      } else if (e === EINVAL && flags & IORING_SETUP_COOP_TASKRUN) {
        flags &= ~IORING_SETUP_COOP_TASKRUN;
      } else {
        return fail("io_uring_setup", e);
      }
    }
    const maps: Mapping[] = [];
    const map = (length: number, offset: bigint): Mapping => {
      const ptr = s.mmap(null, BigInt(length), PROT_READ_WRITE, MAP_SHARED_POPULATE, fd, offset);
      if (ptr === null || Deno.UnsafePointer.value(ptr) === MAP_FAILED) {
        return fail("mmap", errno());
      }
      const m = { pointer: ptr, length };
      maps.push(m);
      return m;
    };
    try {
      const sqEntries = p.getUint32(0, true);
      const cqEntries = p.getUint32(4, true);
      const sqSize = p.getUint32(40 + 24, true) + sqEntries * 4;
      const cqSize = p.getUint32(80 + 20, true) + cqEntries * CQE_SIZE;
      if (p.getUint32(20, true) & IORING_FEAT_SINGLE_MMAP) {
        map(Math.max(sqSize, cqSize), IORING_OFF_SQ_RING);
      } else {
        map(sqSize, IORING_OFF_SQ_RING);
        map(cqSize, IORING_OFF_CQ_RING);
      }
      map(sqEntries * SQE_SIZE, IORING_OFF_SQES);
      return new Uring(fd, p, maps, s);
    } catch (e) {
      for (const m of maps) s.munmap(m.pointer, BigInt(m.length));
      libc().close(fd);
      throw e;
    }
  }

  /** Registers `iovecs` (struct iovec[], 16 bytes each) as fixed buffers 0..n-1: 0 or -errno. */
  registerBuffers(iovecs: AlignedBuffer, count: number): number {
    return this.#register(IORING_REGISTER_BUFFERS, iovecs.pointer, count);
  }

  /** Registers `fds` as fixed files 0..n-1: 0 or -errno. */
  registerFiles(fds: readonly number[]): number {
    const buf = allocAligned(Math.max(8, fds.length * 4), 8);
    try {
      new Int32Array(buf.bytes.buffer, 0, fds.length).set(fds);
      return this.#register(IORING_REGISTER_FILES, buf.pointer, fds.length);
    } finally {
      freeAligned(buf);
    }
  }

  #register(opcode: number, arg: Deno.PointerObject, count: number): number {
    const rc = this.#sys.sys_register(
      NR.register,
      BigInt(this.fd),
      BigInt(opcode),
      arg,
      BigInt(count),
    );
    return rc < 0 ? -errno() : rc;
  }

  /** SQEs that may still be filled before the SQ is full. */
  get space(): number {
    return this.sqEntries - ((this.#tail - Atomics.load(this.#sq, this.#sqHead)) >>> 0);
  }

  /** Requests the kernel holds: submitted and not yet reaped. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /**
   * Fills the next SQE: `opcode` on `fd` (an index into the registered files
   * with `flags` IOSQE_FIXED_FILE), `len` bytes at address `addr`, file
   * offset `offset`, buffer `bufIndex` for the _FIXED opcodes. Check
   * {@linkcode Uring.space} first.
   */
  prepare(
    opcode: number,
    fd: number,
    flags: number,
    addr: number,
    len: number,
    offset: number,
    userData: number,
    bufIndex: number,
  ): void {
    const w = (this.#tail & this.#sqMask) * (SQE_SIZE / 4);
    const q = this.#sqe;
    // Plain numbers in 32-bit halves: this runs once per I/O. Words 11..15 stay zero.
    q[w] = opcode | (flags << 8);
    q[w + 1] = fd;
    q[w + 2] = offset % 4294967296;
    q[w + 3] = Math.floor(offset / 4294967296);
    q[w + 4] = addr % 4294967296;
    q[w + 5] = Math.floor(addr / 4294967296);
    q[w + 6] = len;
    q[w + 7] = 0;
    q[w + 8] = userData;
    q[w + 9] = 0;
    q[w + 10] = bufIndex;
    this.#tail = (this.#tail + 1) >>> 0;
  }

  /**
   * Hands every filled SQE to the kernel: how many it took (they are in
   * flight from now), or `-errno`. What it did not take stays queued for the
   * next call. With SQPOLL the kernel thread takes them all, woken when it
   * sleeps. With {@linkcode Uring.deferTaskrun} the same io_uring_enter
   * posts the completions that are done, for {@linkcode Uring.ready}.
   */
  submit(): number {
    const added = this.#publish();
    if (this.sqpoll) {
      if (Atomics.load(this.#sq, this.#sqFlags) & IORING_SQ_NEED_WAKEUP) {
        const rc = this.#enter(0, 0, IORING_ENTER_SQ_WAKEUP, null, 0n);
        if (rc < 0) return rc;
      }
      this.#inFlight += added;
      return added;
    }
    this.#unsubmitted += added;
    if (this.#unsubmitted === 0) return 0;
    // DEFER_TASKRUN: GETEVENTS (with no minimum) also posts the completions that are done.
    const rc = this.#enter(
      this.#unsubmitted,
      0,
      this.deferTaskrun ? IORING_ENTER_GETEVENTS : 0,
      null,
      0n,
    );
    if (rc > 0) {
      this.#unsubmitted -= rc;
      this.#inFlight += rc;
    }
    return rc;
  }

  /**
   * {@linkcode Uring.submit} with the io_uring_enter on a thread of Deno's
   * blocking pool, so this thread's event loop stays free while it runs: the
   * kernel may issue a request inline and return only when it is done
   * (O_DIRECT on ceph-fuse blocked it for up to 170 ms under strace). For a
   * ring whose waits also run on the pool ({@linkcode Uring.waitAsync}); a
   * ring set up with SQPOLL or DEFER_TASKRUN submits here, on this thread.
   * A failed enter takes no SQE, so a failure is repeated with `submit()`
   * here, where errno can be read.
   */
  async submitAsync(): Promise<number> {
    if (this.sqpoll || this.deferTaskrun) return this.submit();
    this.#unsubmitted += this.#publish();
    if (this.#unsubmitted === 0) return 0;
    const rc = await this.#sys.sys_enter_nb(
      NR.enter,
      BigInt(this.fd),
      BigInt(this.#unsubmitted),
      0n,
      0n,
      null,
      0n,
    );
    if (rc < 0) return this.submit();
    this.#unsubmitted -= rc;
    this.#inFlight += rc;
    return rc;
  }

  /** Publishes the SQEs filled since the last call to the kernel: how many. */
  #publish(): number {
    // The release store of the tail: the SQEs' contents are visible before it.
    const added = (this.#tail - this.#published) >>> 0;
    this.#published = this.#tail;
    if (TSO) this.#sq[this.#sqTail] = this.#tail;
    else Atomics.store(this.#sq, this.#sqTail, this.#tail);
    return added;
  }

  /** SQEs handed to submit() that the kernel has not taken yet (no SQPOLL). */
  get unsubmitted(): number {
    return this.#unsubmitted;
  }

  /**
   * Waits until at least `min` completions are ready, or `timeoutNs` passes
   * (when the kernel has IORING_FEAT_EXT_ARG; otherwise without limit): 0, or
   * `-errno` (`-ETIME` when the time ran out, `-EINTR` on a signal).
   */
  wait(min: number, timeoutNs?: number): number {
    if (timeoutNs === undefined || (this.features & IORING_FEAT_EXT_ARG) === 0) {
      return this.#enter(0, min, IORING_ENTER_GETEVENTS, null, 0n);
    }
    const a = this.#waitView;
    // struct io_uring_getevents_arg { u64 sigmask; u32 sigmask_sz; u32 pad; u64 ts; }
    a.setBigUint64(16, this.#waitArg.address + 32n, true);
    a.setBigInt64(32, BigInt(Math.floor(timeoutNs / 1e9)), true);
    a.setBigInt64(40, BigInt(timeoutNs % 1e9), true);
    return this.#enter(
      0,
      min,
      IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG,
      this.#waitArg.pointer,
      24n,
    );
  }

  /**
   * Waits until at least one completion is ready, on a thread of Deno's
   * blocking pool, so this thread's event loop stays free (a rank's other
   * streams, timers, barriers): 0, or -1 when the wait failed. errno is set
   * on the pool's thread and lost; read {@linkcode Uring.ready}, and learn
   * the errno with a short {@linkcode Uring.wait} when nothing is ready.
   * Call it only with requests in flight. With `timeoutNs`, and a kernel with
   * IORING_FEAT_EXT_ARG ({@linkcode Uring.timedWaits}), it returns once that
   * has passed even when nothing completed (then too -1: look at `ready()`).
   */
  async waitAsync(timeoutNs?: number): Promise<number> {
    const timed = timeoutNs !== undefined && this.timedWaits;
    if (timed) {
      const a = new DataView(this.#asyncWaitArg.bytes.buffer);
      a.setBigUint64(16, this.#asyncWaitArg.address + 32n, true);
      const ns = Math.max(0, Math.floor(timeoutNs));
      a.setBigInt64(32, BigInt(Math.floor(ns / 1e9)), true);
      a.setBigInt64(40, BigInt(ns % 1e9), true);
    }
    const rc = await this.#sys.sys_enter_nb(
      NR.enter,
      BigInt(this.fd),
      0n,
      1n,
      BigInt(IORING_ENTER_GETEVENTS | (timed ? IORING_ENTER_EXT_ARG : 0)),
      timed ? this.#asyncWaitArg.pointer : null,
      timed ? 24n : 0n,
    );
    return rc < 0 ? -1 : 0;
  }

  /** Whether waits may time out (IORING_FEAT_EXT_ARG, Linux 5.11); otherwise they wait for a completion. */
  get timedWaits(): boolean {
    return (this.features & IORING_FEAT_EXT_ARG) !== 0;
  }

  #enter(
    toSubmit: number,
    min: number,
    flags: number,
    arg: Deno.PointerObject | null,
    argSize: bigint,
  ): number {
    const big = this.#big;
    const rc = this.#sys.sys_enter(
      NR.enter,
      this.#fdArg,
      big[toSubmit] ?? BigInt(toSubmit),
      big[min] ?? BigInt(min),
      big[flags] ?? BigInt(flags),
      arg,
      argSize,
    );
    return rc < 0 ? -errno() : rc;
  }

  /** Completions ready to read, from the CQ head on. */
  ready(): number {
    // The acquire load of the tail: the CQEs before it are complete.
    const tail = TSO ? this.#cq[this.#cqTail]! : Atomics.load(this.#cq, this.#cqTail);
    return (tail - this.#head) >>> 0;
  }

  /** The `user_data` (low 32 bits) of ready completion `i`. */
  cqeData(i: number): number {
    return this.#cq[this.#cqes + ((this.#head + i) & this.#cqMask) * (CQE_SIZE / 4)]!;
  }

  /** The `res` of ready completion `i`: bytes moved, or `-errno`. */
  cqeResult(i: number): number {
    return this.#cqRes[this.#cqes + ((this.#head + i) & this.#cqMask) * (CQE_SIZE / 4) + 2]!;
  }

  /** Gives `n` read completions back to the kernel. */
  advance(n: number): void {
    // The release store of the head: the CQEs are read before the kernel may reuse them.
    const head = (this.#head + n) >>> 0;
    this.#head = head;
    if (TSO) this.#cq[this.#cqHead] = head;
    else Atomics.store(this.#cq, this.#cqHead, head);
    this.#inFlight -= n;
  }

  /**
   * Waits for what is in flight (at most `limitMs`), then unmaps the rings and
   * closes the ring: true when nothing was left in flight, so the buffers the
   * requests named may be freed.
   */
  close(limitMs = 30_000): boolean {
    if (this.#closed) return this.#inFlight === 0;
    this.#closed = true;
    const give = Date.now() + limitMs;
    while (this.#inFlight > 0 && Date.now() < give) {
      const n = this.ready();
      if (n > 0) {
        this.advance(n);
        continue;
      }
      const rc = this.wait(1, 100_000_000);
      if (rc < 0 && rc !== -ETIME && rc !== -4) break;
    }
    const drained = this.#inFlight === 0;
    for (const m of this.#maps) this.#sys.munmap(m.pointer, BigInt(m.length));
    libc().close(this.fd);
    freeAligned(this.#waitArg);
    freeAligned(this.#asyncWaitArg);
    return drained;
  }
}

/** What io_uring_setup of a small ring says on this machine. */
export type UringProbe =
  | { readonly ok: true; readonly features: number }
  | { readonly ok: false; readonly errno: number };

let probed: UringProbe | undefined;

/** Sets a 4-entry ring up and tears it down once per thread: its features, or the errno. */
export function probeUring(): UringProbe {
  if (probed) return probed;
  try {
    const ring = Uring.open({ entries: 4 }, (_syscall, e) => {
      throw new RangeError("io_uring unavailable", { cause: e });
    });
    probed = { ok: true, features: ring.features };
    ring.close();
  } catch (e) {
    if (!(e instanceof RangeError) || typeof e.cause !== "number") throw e;
    probed = { ok: false, errno: e.cause };
  }
  return probed;
}
