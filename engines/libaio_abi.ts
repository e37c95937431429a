/**
 * libaio.so.1 through Deno FFI, and the layout of its structs on 64-bit
 * Linux.
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

const SYMBOLS = {
  io_setup: { parameters: ["i32", "buffer"], result: "i32" },
  io_destroy: { parameters: ["pointer"], result: "i32" },
  io_submit: { parameters: ["pointer", "i64", "buffer"], result: "i32" },
  io_getevents: {
    parameters: ["pointer", "i64", "i64", "buffer", "buffer"],
    result: "i32",
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
  sys_io_getevents: {
    name: "syscall",
    parameters: ["i64", "pointer", "i64", "i64", "buffer", "buffer"],
    result: "i32",
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
 * tiers/_libc.ts), so callers keep the few values they pass ready-made.
 */
export interface Libaio {
  /** Where the calls come from: libaio.so.1, or raw system calls through libc. */
  readonly source: string;
  io_setup(nr: number, ctxOut: Uint8Array<ArrayBuffer>): number;
  io_destroy(ctx: Deno.PointerObject): number;
  io_submit(ctx: Deno.PointerObject, nr: bigint, iocbs: Uint8Array<ArrayBuffer>): number;
  io_getevents(
    ctx: Deno.PointerObject,
    minNr: bigint,
    nr: bigint,
    events: Uint8Array<ArrayBuffer>,
    timeout: Uint8Array<ArrayBuffer>,
  ): number;
}

/** Library names to try, newest Debian/Ubuntu first. */
const NAMES = ["libaio.so.1t64", "libaio.so.1"];

let cached: Libaio | undefined;

/** The calls from libaio.so.1, or undefined when it is not installed. */
export function fromLibaio(): Libaio | undefined {
  for (const name of NAMES) {
    try {
      const s = Deno.dlopen(name, SYMBOLS).symbols;
      return {
        source: name,
        io_setup: (nr, out) => s.io_setup(nr, out),
        io_destroy: (ctx) => s.io_destroy(ctx),
        io_submit: (ctx, nr, iocbs) => s.io_submit(ctx, nr, iocbs),
        io_getevents: (ctx, min, nr, ev, t) => s.io_getevents(ctx, min, nr, ev, t),
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
    io_getevents: (ctx, min, nr, ev, t) =>
      ret(s.sys_io_getevents(NR.io_getevents, ctx, min, nr, ev, t)),
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
