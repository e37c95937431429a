/**
 * The one libaio ring of the engines folder: libaio.so.1 (or the same calls as
 * raw system calls) through Deno FFI, the layout of its structs on 64-bit
 * Linux, and {@linkcode AioRing}, a kernel AIO context with its iocbs, events
 * and buffers in C memory. The libaio job engine and the rank's libaio stream
 * both drive their I/O through it.
 *
 * libaio's wrappers return `-errno` instead of setting errno, and each
 * completion carries its own `res` (bytes or `-errno`), so every failure keeps
 * its own error number whichever thread runs it.
 *
 * ```
 * struct iocb (64 bytes)                    struct io_event (32 bytes)
 *   0  u64  data      (our slot index)        0  u64  data
 *   8  u32  key, u32 aio_rw_flags             8  u64  obj   (the iocb)
 *  16  i16  aio_lio_opcode (0 pread, 1 pwrite) 16  i64 res   (bytes or -errno)
 *  18  i16  aio_reqprio                      24  i64  res2
 *  20  i32  aio_fildes
 *  24  u64  buf
 *  32  u64  nbytes
 *  40  i64  offset
 *  48  i64  (padding)
 *  56  u32  flags, u32 resfd
 * ```
 *
 * @module
 */

import {
  type AlignedBuffer,
  allocAligned,
  allocIoBuffer,
  cString,
  freeAligned,
} from "../core/libc.ts";

const SYMBOLS = {
  io_setup: { parameters: ["i32", "buffer"], result: "i32" },
  io_destroy: { parameters: ["pointer"], result: "i32" },
  io_submit: { parameters: ["pointer", "i64", "buffer"], result: "i32" },
  /** The same submission on a thread of Deno's blocking pool. */
  io_submit_nb: {
    name: "io_submit",
    parameters: ["pointer", "i64", "pointer"],
    result: "i32",
    nonblocking: true,
  },
  io_getevents: {
    parameters: ["pointer", "i64", "i64", "buffer", "buffer"],
    result: "i32",
  },
  /** The same wait on a thread of Deno's blocking pool, without a timeout. */
  io_getevents_nb: {
    name: "io_getevents",
    parameters: ["pointer", "i64", "i64", "pointer", "pointer"],
    result: "i32",
    nonblocking: true,
  },
} as const satisfies Deno.ForeignLibraryInterface;

/**
 * The same four calls made as raw system calls through libc's `syscall()`,
 * for machines without libaio.so.1: libaio's functions are thin wrappers of
 * these. `syscall()` returns -1 and sets errno, read at once on this thread.
 */
const SYSCALL_SYMBOLS = {
  sys_io_setup: { name: "syscall", parameters: ["i64", "i64", "buffer"], result: "i32" },
  sys_io_destroy: { name: "syscall", parameters: ["i64", "pointer"], result: "i32" },
  sys_io_submit: {
    name: "syscall",
    parameters: ["i64", "pointer", "i64", "buffer"],
    result: "i32",
  },
  sys_io_submit_nb: {
    name: "syscall",
    parameters: ["i64", "pointer", "i64", "pointer"],
    result: "i32",
    nonblocking: true,
  },
  sys_io_getevents: {
    name: "syscall",
    parameters: ["i64", "pointer", "i64", "i64", "buffer", "buffer"],
    result: "i32",
  },
  sys_io_getevents_nb: {
    name: "syscall",
    parameters: ["i64", "pointer", "i64", "i64", "pointer", "pointer"],
    result: "i32",
    nonblocking: true,
  },
  __errno_location: { parameters: [], result: "pointer" },
} as const satisfies Deno.ForeignLibraryInterface;

/** System call numbers of the AIO calls per architecture. */
const NR = Deno.build.arch === "aarch64"
  ? { io_setup: 0n, io_destroy: 1n, io_submit: 2n, io_getevents: 4n }
  : { io_setup: 206n, io_destroy: 207n, io_getevents: 208n, io_submit: 209n };

/**
 * The AIO calls; each returns its result or `-errno`, as libaio's do. Counts
 * are BigInts: V8's fast FFI path takes 64-bit integers only as BigInt (see
 * core/libc.ts), so callers keep the few values they pass ready-made.
 */
export interface Libaio {
  /** Where the calls come from: libaio.so.1, or raw system calls through libc. */
  readonly source: string;
  io_setup(nr: number, ctxOut: Uint8Array<ArrayBuffer>): number;
  io_destroy(ctx: Deno.PointerObject): number;
  io_submit(ctx: Deno.PointerObject, nr: bigint, iocbs: Uint8Array<ArrayBuffer>): number;
  /**
   * `io_submit` on a thread of Deno's blocking pool, `iocbs` an array of
   * iocb addresses in C memory. A submission can block until its I/O is
   * done (O_DIRECT on FUSE, a buffered file, an extending write), and this
   * leaves the calling thread's event loop free meanwhile. Through raw
   * system calls errno is set on the pool's thread and lost: a failed
   * submission returns `-EIO`.
   */
  io_submit_async(ctx: Deno.PointerObject, nr: bigint, iocbs: Deno.PointerObject): Promise<number>;
  io_getevents(
    ctx: Deno.PointerObject,
    minNr: bigint,
    nr: bigint,
    events: Uint8Array<ArrayBuffer>,
    timeout: Uint8Array<ArrayBuffer> | null,
  ): number;
  /**
   * `io_getevents` on a thread of Deno's blocking pool, so the calling
   * thread's event loop stays free; `timeout` a `struct timespec` in C memory,
   * or null for none. Through raw system calls errno is set on the pool's
   * thread and lost: a failed wait returns `-EIO`.
   */
  io_getevents_async(
    ctx: Deno.PointerObject,
    minNr: bigint,
    nr: bigint,
    events: Deno.PointerObject,
    timeout: Deno.PointerObject | null,
  ): Promise<number>;
}

const EIO = 5;
const EINVAL = 22;

/** Library names to try, newest Debian/Ubuntu first. */
export const LIBAIO_NAMES: readonly string[] = ["libaio.so.1t64", "libaio.so.1"];

let cached: Libaio | undefined;

/** glibc's `RTLD_LAZY | RTLD_NODELETE`. */
const RTLD_LAZY_NODELETE = 0x0001 | 0x1000;

/**
 * Marks the library `name` never to be unloaded, whoever closes it.
 *
 * Each Worker that opens libaio holds it through its own handle, and a
 * Worker's end closes that handle; the last close would unmap libaio's code
 * while a wait of that Worker (`io_getevents_async`) may still be running in
 * it on Deno's blocking pool, and that thread would crash the process on
 * its return. Loaded once with RTLD_NODELETE, it stays mapped until exit.
 */
function pinLoaded(name: string): void {
  try {
    const dl = Deno.dlopen("libc.so.6", {
      dlopen: { parameters: ["buffer", "i32"], result: "pointer" },
    });
    dl.symbols.dlopen(cString(name), RTLD_LAZY_NODELETE);
    dl.close();
  } catch {
    // a libc without dlopen (glibc before 2.34): the waits are drained before any Worker ends
  }
}

/** The calls from libaio.so.1, or undefined when it is not installed. */
export function fromLibaio(): Libaio | undefined {
  for (const name of LIBAIO_NAMES) {
    try {
      const s = Deno.dlopen(name, SYMBOLS).symbols;
      pinLoaded(name);
      return {
        source: name,
        io_setup: (nr, out) => s.io_setup(nr, out),
        io_destroy: (ctx) => s.io_destroy(ctx),
        io_submit: (ctx, nr, iocbs) => s.io_submit(ctx, nr, iocbs),
        io_submit_async: (ctx, nr, iocbs) => s.io_submit_nb(ctx, nr, iocbs),
        io_getevents: (ctx, min, nr, ev, t) => s.io_getevents(ctx, min, nr, ev, t),
        io_getevents_async: (ctx, min, nr, ev, t) => s.io_getevents_nb(ctx, min, nr, ev, t),
      };
    } catch {
      // try the next name
    }
  }
  return undefined;
}

/** The calls as raw system calls through libc's `syscall()`. */
export function fromSyscalls(): Libaio {
  const s = Deno.dlopen("libc.so.6", SYSCALL_SYMBOLS).symbols;
  const errno = () => {
    const p = s.__errno_location();
    return p === null ? 5 : new Deno.UnsafePointerView(p).getInt32();
  };
  const ret = (rc: number) => (rc < 0 ? -errno() : rc);
  return {
    source: "syscall (libaio.so.1 not installed)",
    io_setup: (nr, out) => ret(s.sys_io_setup(NR.io_setup, BigInt(nr), out)),
    io_destroy: (ctx) => ret(s.sys_io_destroy(NR.io_destroy, ctx)),
    io_submit: (ctx, nr, iocbs) => ret(s.sys_io_submit(NR.io_submit, ctx, nr, iocbs)),
    io_submit_async: async (ctx, nr, iocbs) => {
      const rc = await s.sys_io_submit_nb(NR.io_submit, ctx, nr, iocbs);
      return rc < 0 ? -EIO : rc;
    },
    io_getevents: (ctx, min, nr, ev, t) =>
      ret(s.sys_io_getevents(NR.io_getevents, ctx, min, nr, ev, t)),
    io_getevents_async: async (ctx, min, nr, ev, t) => {
      const rc = await s.sys_io_getevents_nb(NR.io_getevents, ctx, min, nr, ev, t);
      return rc < 0 ? -EIO : rc;
    },
  };
}

/**
 * The AIO calls for this thread: from libaio.so.1 when installed, else the
 * same calls as raw system calls.
 */
export function libaio(): Libaio {
  cached ??= fromLibaio() ?? fromSyscalls();
  return cached;
}

/** Size of `struct iocb`. */
export const IOCB_SIZE = 64;
/** Size of `struct io_event`. */
export const IO_EVENT_SIZE = 32;
/** `IO_CMD_PREAD`. */
export const IO_CMD_PREAD = 0;
/** `IO_CMD_PWRITE`. */
export const IO_CMD_PWRITE = 1;

/** Field offsets in `struct iocb`. */
export const IOCB = {
  data: 0,
  opcode: 16,
  fildes: 20,
  buf: 24,
  nbytes: 32,
  offset: 40,
} as const;

/** Field offsets in `struct io_event`. */
export const IO_EVENT = { data: 0, res: 16 } as const;

/** `AIO_RING_MAGIC`: the completion ring's header is the layout read here. */
const AIO_RING_MAGIC = 0xa10a10a1;
/**
 * Word offsets (u32) in `struct aio_ring`, the context's completion ring in
 * this process's memory (the context's id is its address): id, nr, head,
 * tail, magic, compat_features, incompat_features, header_length, then `nr`
 * io_events of 8 words each.
 */
const AIO_RING = { nr: 1, head: 2, tail: 3, magic: 4, events: 8 } as const;

/** One, as the BigInt the fast FFI path wants for a 64-bit count. */
const ONE = 1n;

/** A `struct timespec` of `ns` nanoseconds, for {@linkcode AioRing.reap}. */
export function timespec(ns: number): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(16);
  const v = new DataView(out.buffer);
  v.setBigInt64(0, BigInt(Math.floor(ns / 1e9)), true);
  v.setBigInt64(8, BigInt(ns % 1e9), true);
  return out;
}

/** Sets `out`, a {@linkcode timespec}, to `ns` nanoseconds (no allocation per wait). */
export function setTimespec(out: Uint8Array<ArrayBuffer>, ns: number): void {
  const v = new DataView(out.buffer, out.byteOffset, 16);
  const whole = Math.max(0, Math.floor(ns));
  v.setBigInt64(0, BigInt(Math.floor(whole / 1e9)), true);
  v.setBigInt64(8, BigInt(whole % 1e9), true);
}

/**
 * A kernel AIO context of `depth` slots. Slot s owns iocb s and bytes
 * [s × slotBytes, (s + 1) × slotBytes) of {@linkcode AioRing.buffers}, all in
 * C memory so their addresses never move while the kernel holds them; its
 * iocb's `data` is s, so each completion names its slot.
 *
 * @example
 * ```ts ignore
 * const ring = AioRing.open(8, 1 << 20, 4096, (syscall, errno) => { throw ... });
 * try {
 *   ring.prepare(0, fd, false, 0, 1 << 20);
 *   ring.submitOne(0);
 *   const n = await ring.wait();
 *   ring.eventSlot(0); ring.eventResult(0);
 * } finally { ring.close(); }
 * ```
 */
export class AioRing {
  /** How many I/Os the context holds at once. */
  readonly depth: number;
  /** The bytes of each slot's buffer. */
  readonly slotBytes: number;
  /** The slots' buffers, one after the other, aligned as asked. */
  readonly buffers: AlignedBuffer;
  readonly #aio: Libaio;
  readonly #ctx: Deno.PointerObject;
  /** `depth` iocbs. */
  readonly #iocbs: AlignedBuffer;
  readonly #iocb: DataView;
  /** `depth` io_events, in C memory for the wait on the blocking pool. */
  readonly #events: AlignedBuffer;
  readonly #event: DataView;
  /** The timeout of {@linkcode AioRing.wait}, a `struct timespec` in C memory. */
  readonly #waitTimeout: AlignedBuffer;
  readonly #depthBig: bigint;
  /** For each slot, a one-entry array holding its iocb's address, for io_submit. */
  readonly #slotPtrs: Uint8Array<ArrayBuffer>[];
  /**
   * The iocb addresses of one batch for io_submit, in C memory so that a
   * submission on the blocking pool ({@linkcode AioRing.submitAsync}) can
   * read them too.
   */
  readonly #batchMem: AlignedBuffer;
  readonly #batch: BigUint64Array<ArrayBuffer>;
  /**
   * The completion ring's words, where the kernel posts each completion
   * before io_getevents copies it out; undefined when its header is not the
   * one this reads (then every reap is a system call).
   */
  readonly #completions: Uint32Array<ArrayBuffer> | undefined;
  /** Its number of io_events. */
  readonly #ringNr: number;
  /** The ring index of the first completion {@linkcode takeReady} took; -1 after a system call. */
  #ringAt = -1;
  #closed = false;

  private constructor(
    aio: Libaio,
    ctx: Deno.PointerObject,
    depth: number,
    slotBytes: number,
    alignment: number,
  ) {
    this.#aio = aio;
    this.#ctx = ctx;
    this.depth = depth;
    this.slotBytes = slotBytes;
    this.#depthBig = BigInt(depth);
    const ring = new Deno.UnsafePointerView(ctx);
    this.#ringNr = ring.getUint32(AIO_RING.nr * 4);
    this.#completions = ring.getUint32(AIO_RING.magic * 4) === AIO_RING_MAGIC
      ? new Uint32Array(
        Deno.UnsafePointerView.getArrayBuffer(ctx, (AIO_RING.events + this.#ringNr * 8) * 4),
      )
      : undefined;
    this.buffers = allocIoBuffer(depth * slotBytes, alignment);
    this.#iocbs = allocAligned(depth * IOCB_SIZE, IOCB_SIZE);
    this.#events = allocAligned(depth * IO_EVENT_SIZE, IOCB_SIZE);
    this.#waitTimeout = allocAligned(16, 16);
    this.#iocbs.bytes.fill(0);
    this.#iocb = new DataView(this.#iocbs.bytes.buffer);
    this.#event = new DataView(this.#events.bytes.buffer);
    this.#batchMem = allocAligned(depth * 8, 8);
    this.#batch = new BigUint64Array(
      this.#batchMem.bytes.buffer,
      this.#batchMem.bytes.byteOffset,
      depth,
    );
    this.#slotPtrs = [];
    for (let slot = 0; slot < depth; slot++) {
      const at = slot * IOCB_SIZE;
      const ptr = new Uint8Array(8);
      new DataView(ptr.buffer).setBigUint64(0, this.#iocbs.address + BigInt(at), true);
      this.#slotPtrs.push(ptr);
      // Fixed per slot: the slot index comes back in io_event.data.
      this.#iocb.setBigUint64(at + IOCB.data, BigInt(slot), true);
      this.#iocb.setBigUint64(at + IOCB.buf, this.address(slot), true);
    }
  }

  /**
   * Sets up a context of `depth` slots with `slotBytes` of buffer each,
   * aligned to `alignment`. A failed io_setup goes to `fail` with its errno
   * (EINVAL for a null context), which throws the caller's own error.
   */
  static open(
    depth: number,
    slotBytes: number,
    alignment: number,
    fail: (syscall: "io_setup", errno: number) => never,
  ): AioRing {
    const aio = libaio();
    const out = new BigUint64Array(1);
    const rc = aio.io_setup(depth, new Uint8Array(out.buffer));
    if (rc < 0) fail("io_setup", -rc);
    const ctx = Deno.UnsafePointer.create(out[0]!);
    if (ctx === null) fail("io_setup", EINVAL);
    try {
      return new AioRing(aio, ctx, depth, slotBytes, alignment);
    } catch (e) {
      aio.io_destroy(ctx);
      throw e;
    }
  }

  /** The address of slot `slot`'s buffer. */
  address(slot: number): bigint {
    return this.buffers.address + BigInt(slot * this.slotBytes);
  }

  /** Slot `slot`'s buffer. */
  buffer(slot: number): Uint8Array<ArrayBuffer> {
    return this.buffers.bytes.subarray(slot * this.slotBytes, (slot + 1) * this.slotBytes);
  }

  /** Fills slot `slot`'s iocb: `nbytes` of its buffer to or from `offset` of `fd`. */
  prepare(slot: number, fd: number, write: boolean, offset: number, nbytes: number): void {
    const at = slot * IOCB_SIZE;
    const v = this.#iocb;
    // Halves, not BigInts: this runs once per I/O.
    v.setInt32(at + IOCB.fildes, fd, true);
    v.setInt16(at + IOCB.opcode, write ? IO_CMD_PWRITE : IO_CMD_PREAD, true);
    v.setUint32(at + IOCB.offset, offset % 4294967296, true);
    v.setUint32(at + IOCB.offset + 4, Math.floor(offset / 4294967296), true);
    v.setUint32(at + IOCB.nbytes, nbytes % 4294967296, true);
    v.setUint32(at + IOCB.nbytes + 4, Math.floor(nbytes / 4294967296), true);
  }

  /** io_submit of slot `slot`'s prepared iocb alone: 1, or 0 or `-errno`. */
  submitOne(slot: number): number {
    return this.#aio.io_submit(this.#ctx, ONE, this.#slotPtrs[slot]!);
  }

  /**
   * One io_submit of the first `count` prepared `slots` (at most `depth`;
   * all of them by default), in order: how many the kernel took (the first
   * ones), or `-errno`.
   */
  submit(slots: ArrayLike<number>, count: number = slots.length): number {
    this.#fillBatch(slots, count);
    return this.#aio.io_submit(this.#ctx, BigInt(count), this.#batchMem.bytes);
  }

  /** Puts the iocb addresses of the first `count` of `slots` in the batch array, in order. */
  #fillBatch(slots: ArrayLike<number>, count: number): void {
    const base = this.#iocbs.address;
    for (let i = 0; i < count; i++) this.#batch[i] = base + BigInt(slots[i]! * IOCB_SIZE);
  }

  /**
   * The same io_submit of the prepared `slots` on a thread of Deno's blocking
   * pool, so a submission that blocks until its I/O is done (O_DIRECT on a
   * FUSE file system such as ceph-fuse does) holds up none of this thread's
   * other work: how many the kernel took, or `-errno`. A rank's streams use
   * it, as each of DeepSpeed's aio threads submits on its own thread. A
   * failure is repeated here, where errno can be read: io_submit takes none
   * of the batch when it fails, so the repeat submits nothing twice.
   */
  async submitAsync(slots: ArrayLike<number>, count: number = slots.length): Promise<number> {
    this.#fillBatch(slots, count);
    const n = BigInt(count);
    const rc = await this.#aio.io_submit_async(this.#ctx, n, this.#batchMem.pointer);
    return rc < 0 ? this.submit(slots, count) : rc;
  }

  /**
   * Waits on this thread for at least one completion, at most `timeout` (a
   * {@linkcode timespec}; null: until one completes), and takes all that are
   * ready: how many, or `-errno`.
   */
  reap(timeout: Uint8Array<ArrayBuffer> | null): number {
    this.#ringAt = -1;
    return this.#aio.io_getevents(this.#ctx, ONE, this.#depthBig, this.#events.bytes, timeout);
  }

  /**
   * Takes the completions the kernel has already posted, straight from the
   * context's ring in this process's memory, without a system call (as fio's
   * `userspace_reap`): how many, 0 when none is ready (or the ring's layout
   * is unknown). Read them with {@linkcode eventSlot} and
   * {@linkcode eventResult}, then hand their places back with
   * {@linkcode release}. io_getevents reads the same ring, so either way of
   * reaping may follow the other.
   */
  takeReady(): number {
    const w = this.#completions;
    if (w === undefined) return 0;
    const head = Atomics.load(w, AIO_RING.head);
    // The load of the tail orders the reads of the completions before it.
    const tail = Atomics.load(w, AIO_RING.tail);
    if (head === tail || head >= this.#ringNr) return 0;
    this.#ringAt = head;
    return tail > head ? tail - head : this.#ringNr - head + tail;
  }

  /** After {@linkcode takeReady}: gives the ring's places of its first `n` completions back. */
  release(n: number): void {
    if (this.#ringAt < 0) return;
    const at = this.#ringAt + n;
    Atomics.store(this.#completions!, AIO_RING.head, at >= this.#ringNr ? at - this.#ringNr : at);
    this.#ringAt = -1;
  }

  /** Word index of completion `e` of the last takeReady in the ring. */
  #ringWord(e: number): number {
    const i = this.#ringAt + e;
    return AIO_RING.events + (i >= this.#ringNr ? i - this.#ringNr : i) * 8;
  }

  /**
   * Waits on this thread for at least `min` of at most `max` completions, at
   * most `timeout` (a {@linkcode timespec}): how many, or `-errno`. A replay
   * waits for as many as the recorded io_getevents returned.
   */
  reapBetween(min: number, max: number, timeout: Uint8Array<ArrayBuffer>): number {
    this.#ringAt = -1;
    return this.#aio.io_getevents(
      this.#ctx,
      BigInt(min),
      BigInt(Math.min(max, this.depth)),
      this.#events.bytes,
      timeout,
    );
  }

  /**
   * Waits for at least one completion on Deno's blocking pool, leaving this
   * thread's event loop free, and takes all that are ready: how many (0 when
   * `timeoutNs` passed first), or `-errno`.
   */
  wait(timeoutNs?: number): Promise<number> {
    this.#ringAt = -1;
    let timeout: Deno.PointerObject | null = null;
    if (timeoutNs !== undefined) {
      setTimespec(this.#waitTimeout.bytes, timeoutNs);
      timeout = this.#waitTimeout.pointer;
    }
    return this.#aio.io_getevents_async(
      this.#ctx,
      ONE,
      this.#depthBig,
      this.#events.pointer,
      timeout,
    );
  }

  /** The slot of completion `e` of the last reap, wait or takeReady. */
  eventSlot(e: number): number {
    if (this.#ringAt >= 0) return this.#completions![this.#ringWord(e)]!;
    return this.#event.getUint32(e * IO_EVENT_SIZE + IO_EVENT.data, true);
  }

  /** The result of completion `e` of the last reap, wait or takeReady: bytes moved, or `-errno`. */
  eventResult(e: number): number {
    if (this.#ringAt >= 0) {
      const w = this.#ringWord(e) + IO_EVENT.res / 4;
      return (this.#completions![w + 1]! | 0) * 4294967296 + this.#completions![w]!;
    }
    const at = e * IO_EVENT_SIZE + IO_EVENT.res;
    // res is a long: exact as a number for any transfer below 2^53 bytes.
    return this.#event.getInt32(at + 4, true) * 4294967296 + this.#event.getUint32(at, true);
  }

  /** Destroys the context (the kernel waits for what is in flight) and frees the memory. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#aio.io_destroy(this.#ctx);
    freeAligned(this.buffers);
    freeAligned(this.#iocbs);
    freeAligned(this.#events);
    freeAligned(this.#waitTimeout);
    freeAligned(this.#batchMem);
  }
}
