/**
 * libc through Deno FFI: the few POSIX calls the file engines need.
 *
 * Every call here is *synchronous* on purpose. A `nonblocking` FFI call runs on
 * a thread of Deno's blocking pool, costs about 29 µs and loses errno (it is
 * set on that other thread). A synchronous call costs about 1.5 µs and errno
 * can be read right after it, on the same thread, through
 * `__errno_location()`. Parallelism comes from Workers (one per job, like
 * fio's threads) and from libaio, not from the blocking pool.
 *
 * `pread`/`pwrite` are declared with an `i32` result although they return
 * `ssize_t`: on x86-64 and aarch64 the low 32 bits of a transfer smaller than
 * 2 GiB (or of -1) are the exact value, and an `i32` result stays a plain JS
 * number instead of allocating a BigInt on every I/O. Their 64-bit parameters
 * take BigInts: since Deno 2, V8's fast call path takes 64-bit integers only
 * as BigInt, and a plain number sends every call down the slow path (about
 * 50 ns instead of 7) and makes V8 throw away the caller's optimised code.
 *
 * @module
 */

const SYMBOLS = {
  open: { parameters: ["buffer", "i32", "i32"], result: "i32" },
  close: { parameters: ["i32"], result: "i32" },
  pread: { parameters: ["i32", "pointer", "usize", "i64"], result: "i32" },
  pwrite: { parameters: ["i32", "pointer", "usize", "i64"], result: "i32" },
  fsync: { parameters: ["i32"], result: "i32" },
  fdatasync: { parameters: ["i32"], result: "i32" },
  ftruncate: { parameters: ["i32", "i64"], result: "i32" },
  fallocate: { parameters: ["i32", "i32", "i64", "i64"], result: "i32" },
  posix_fadvise: { parameters: ["i32", "i64", "i64", "i32"], result: "i32" },
  unlink: { parameters: ["buffer"], result: "i32" },
  posix_fallocate: { parameters: ["i32", "i64", "i64"], result: "i32" },
  posix_memalign: { parameters: ["buffer", "usize", "usize"], result: "i32" },
  free: { parameters: ["pointer"], result: "void" },
  __errno_location: { parameters: [], result: "pointer" },
  strerror: { parameters: ["i32"], result: "pointer" },
  read: { parameters: ["i32", "buffer", "usize"], result: "i32" },
  getrusage: { parameters: ["i32", "buffer"], result: "i32" },
  realpath: { parameters: ["buffer", "pointer"], result: "pointer" },
  clock_gettime: { parameters: ["i32", "buffer"], result: "i32" },
  access: { parameters: ["buffer", "i32"], result: "i32" },
  statvfs: { parameters: ["buffer", "buffer"], result: "i32" },
  getpagesize: { parameters: [], result: "i32" },
  sysconf: { parameters: ["i32"], result: "i64" },
  sched_setaffinity: { parameters: ["i32", "usize", "buffer"], result: "i32" },
  sched_getaffinity: { parameters: ["i32", "usize", "buffer"], result: "i32" },
  /** `syscall(SYS_futex, addr, op, val, timeout)` (core/futex.ts). */
  futex: { name: "syscall", parameters: ["i64", "buffer", "i64", "i64", "i64"], result: "i64" },
} as const satisfies Deno.ForeignLibraryInterface;

/** The libc symbols, opened once per thread (each Worker opens its own). */
export type Libc = Deno.DynamicLibrary<typeof SYMBOLS>["symbols"];

let lib: Libc | undefined;

/** Opens libc once per thread and returns its symbols. */
export function libc(): Libc {
  lib ??= Deno.dlopen("libc.so.6", SYMBOLS).symbols;
  return lib;
}

const CLOCK_MONOTONIC = 1;
const timespec = new Int32Array(4);
const timespecBytes = new Uint8Array(timespec.buffer);

/**
 * CLOCK_MONOTONIC in milliseconds with nanosecond resolution: the same clock
 * in every thread (Workers' `performance.now()` each count from their own
 * origin), and about 30 ns a call here against about 85 ns for
 * `performance.now()`.
 *
 * @example
 * ```ts
 * import { monoNow } from "./libc.ts";
 * const a = monoNow(), b = monoNow();
 * console.assert(b >= a);
 * ```
 */
export function monoNow(): number {
  (lib ?? libc()).clock_gettime(CLOCK_MONOTONIC, timespecBytes);
  // tv_sec and tv_nsec are 64-bit; uptime in seconds and nanoseconds fit their low halves.
  return timespec[0]! * 1000 + timespec[2]! / 1e6;
}

/** open(2) flags used by tierbench, with O_DIRECT for this CPU architecture. */
export const O = {
  RDONLY: 0,
  WRONLY: 0o1,
  RDWR: 0o2,
  CREAT: 0o100,
  EXCL: 0o200,
  TRUNC: 0o1000,
  /** The same on x86-64 and aarch64. */
  NONBLOCK: 0o4000,
  CLOEXEC: 0o2000000,
  /** O_DIRECT differs between architectures: 0o40000 on x86-64, 0o200000 on aarch64. */
  DIRECT: Deno.build.arch === "aarch64" ? 0o200000 : 0o40000,
  DSYNC: 0o10000,
  SYNC: 0o4010000,
} as const;

/** posix_fadvise's advice. */
export const FADV = { NORMAL: 0, RANDOM: 1, SEQUENTIAL: 2, DONTNEED: 4 } as const;

/** fallocate's FALLOC_FL_KEEP_SIZE. */
export const FALLOC_FL_KEEP_SIZE = 1;

/** errno of the last failed synchronous libc call on this thread. */
export function lastErrno(): number {
  const p = libc().__errno_location();
  return p === null ? 0 : new Deno.UnsafePointerView(p).getInt32();
}

const encoder = new TextEncoder();

/** A NUL-terminated copy of a path for FFI. */
export function cString(s: string): Uint8Array<ArrayBuffer> {
  return encoder.encode(s + "\0");
}

/** strerror(3): the C library's text for an errno. */
export function strerror(errno: number): string {
  const p = libc().strerror(errno);
  return p === null ? `errno ${errno}` : Deno.UnsafePointerView.getCString(p);
}

/** Names of the errno values a storage benchmark meets (Linux numbering). */
const ERRNO_NAMES: Record<number, string> = {
  1: "EPERM",
  2: "ENOENT",
  4: "EINTR",
  5: "EIO",
  9: "EBADF",
  11: "EAGAIN",
  12: "ENOMEM",
  13: "EACCES",
  14: "EFAULT",
  16: "EBUSY",
  17: "EEXIST",
  20: "ENOTDIR",
  21: "EISDIR",
  22: "EINVAL",
  24: "EMFILE",
  27: "EFBIG",
  28: "ENOSPC",
  30: "EROFS",
  95: "EOPNOTSUPP",
  103: "ECONNABORTED",
  107: "ENOTCONN",
  110: "ETIMEDOUT",
  116: "ESTALE",
  122: "EDQUOT",
};

/** The symbolic name of an errno, such as `"ENOSPC"`, or `"E<n>"` when unknown. */
export function errnoName(errno: number): string {
  return ERRNO_NAMES[errno] ?? `E${errno}`;
}

/**
 * A block of memory from posix_memalign, aligned for O_DIRECT, with a view
 * for JS to fill. Free it with {@linkcode freeAligned}.
 */
export interface AlignedBuffer {
  /** Start address, aligned to `alignment`. */
  readonly pointer: Deno.PointerObject;
  /** The same memory as bytes. */
  readonly bytes: Uint8Array<ArrayBuffer>;
  /** Address as a number, for computing slot addresses. */
  readonly address: bigint;
}

/** Allocates `length` bytes aligned to `alignment` (a power of two, ≥ 8). */
export function allocAligned(length: number, alignment: number): AlignedBuffer {
  const out = new BigUint64Array(1);
  const rc = libc().posix_memalign(new Uint8Array(out.buffer), BigInt(alignment), BigInt(length));
  if (rc !== 0) {
    throw new RangeError(
      `posix_memalign(${alignment}, ${length}) failed: ${errnoName(rc)} ${strerror(rc)}`,
    );
  }
  const pointer = Deno.UnsafePointer.create(out[0]!);
  if (pointer === null) throw new RangeError("posix_memalign returned NULL");
  const bytes = new Uint8Array(Deno.UnsafePointerView.getArrayBuffer(pointer, length));
  return { pointer, bytes, address: out[0]! };
}

let pageBytes: number | undefined;

/** The system's page size in bytes (`getpagesize()`), read once per thread. */
export function pageSize(): number {
  pageBytes ??= libc().getpagesize();
  return pageBytes;
}

/**
 * Allocates an I/O buffer: `length` bytes starting on a page boundary (or on
 * `alignment` where that is larger), as fio places its I/O buffers for direct
 * I/O. Aligned only to a 512-byte sector, a 1 MiB request would span 257
 * pages and a 4 KiB one two, each one more page for the kernel to pin, dirty
 * and add to the bio on every O_DIRECT request. Free it with
 * {@linkcode freeAligned}.
 *
 * @example
 * ```ts
 * import { allocIoBuffer, freeAligned, pageSize } from "./libc.ts";
 * const b = allocIoBuffer(1 << 20, 512);
 * console.assert(b.address % BigInt(pageSize()) === 0n);
 * freeAligned(b);
 * ```
 */
export function allocIoBuffer(length: number, alignment: number): AlignedBuffer {
  return allocAligned(length, Math.max(alignment, pageSize()));
}

/** Releases a buffer from {@linkcode allocAligned}. */
export function freeAligned(buf: AlignedBuffer): void {
  libc().free(buf.pointer);
}

/**
 * Reads a small text file through libc. Deno refuses /proc and /sys to
 * anything short of --allow-all; the FFI permission this tool needs anyway
 * reaches them.
 * Returns undefined when the file cannot be read.
 */
export function readSmallFile(path: string, limit = 1 << 20): string | undefined {
  const c = libc();
  const fd = c.open(cString(path), O.RDONLY | O.CLOEXEC, 0);
  if (fd < 0) return undefined;
  try {
    const chunks: Uint8Array[] = [];
    let total = 0;
    const buf = new Uint8Array(65536);
    for (;;) {
      const n = c.read(fd, buf, BigInt(buf.length));
      if (n < 0) return undefined;
      if (n === 0 || total >= limit) break;
      chunks.push(buf.slice(0, n));
      total += n;
    }
    const all = new Uint8Array(total);
    let at = 0;
    for (const ch of chunks) {
      all.set(ch, at);
      at += ch.length;
    }
    return new TextDecoder().decode(all);
  } finally {
    c.close(fd);
  }
}

/** realpath(3) through libc (Deno refuses /sys paths short of --allow-all). */
export function realPath(path: string): string | undefined {
  const c = libc();
  const p = c.realpath(cString(path), null);
  if (p === null) return undefined;
  try {
    return Deno.UnsafePointerView.getCString(p);
  } finally {
    c.free(p);
  }
}

/** CPU time in ns, in user mode and in the kernel. */
export interface CpuTimes {
  /** User-mode CPU time, ns. */
  readonly usr_ns: number;
  /** Kernel-mode CPU time, ns. */
  readonly sys_ns: number;
}

/** getrusage's `who`: this thread, this process, or its children that have been waited for. */
const RUSAGE = { thread: 1, process: 0, children: -1 } as const;

/**
 * The CPU time of the calling thread so far (getrusage RUSAGE_THREAD, the
 * call fio's jobs count their usr_cpu and sys_cpu with), of the whole
 * process, or of its children that ended and were waited for;
 * microsecond resolution.
 *
 * @example
 * ```ts
 * import { cpuTimes } from "./libc.ts";
 * const t = cpuTimes();
 * console.assert(t.usr_ns >= 0 && t.sys_ns >= 0);
 * console.assert(cpuTimes("process").usr_ns >= t.usr_ns);
 * ```
 */
export function cpuTimes(who: keyof typeof RUSAGE = "thread"): CpuTimes {
  const usage = new BigInt64Array(18);
  const bytes = new Uint8Array(usage.buffer);
  if (libc().getrusage(RUSAGE[who], bytes) !== 0) {
    return { usr_ns: 0, sys_ns: 0 };
  }
  // struct rusage: ru_utime then ru_stime, each a struct timeval { tv_sec, tv_usec }.
  const us = (at: number) => Number(usage[at]!) * 1e6 + Number(usage[at + 1]!);
  return { usr_ns: us(0) * 1000, sys_ns: us(2) * 1000 };
}

/** Context switches counted by getrusage: voluntary (it waited) and involuntary (preempted). */
export interface ContextSwitches {
  voluntary: number;
  involuntary: number;
}

/**
 * The context switches of this thread, this process or its children that
 * have been waited for (getrusage's ru_nvcsw and ru_nivcsw).
 *
 * @example
 * ```ts
 * import { contextSwitches } from "./libc.ts";
 * const c = contextSwitches("process");
 * console.assert(c.voluntary >= 0 && c.involuntary >= 0);
 * ```
 */
export function contextSwitches(who: keyof typeof RUSAGE = "thread"): ContextSwitches {
  const usage = new BigInt64Array(18);
  if (libc().getrusage(RUSAGE[who], new Uint8Array(usage.buffer)) !== 0) {
    return { voluntary: 0, involuntary: 0 };
  }
  // struct rusage on 64-bit Linux: 4 longs of timevals, then 14 longs, ru_nvcsw and ru_nivcsw last.
  return { voluntary: Number(usage[16]!), involuntary: Number(usage[17]!) };
}

/** access(2) modes. */
export const ACCESS = { W_OK: 2, X_OK: 1 } as const;

/**
 * access(2): 0 when this process may use `path` as `mode` asks, else the
 * errno that says why not (EACCES, EROFS, ENOENT, …).
 */
export function accessErrno(path: string, mode: number): number {
  return libc().access(cString(path), mode) === 0 ? 0 : lastErrno();
}

/**
 * Bytes an unprivileged process may still allocate on the file system of
 * `path` (statvfs's f_bavail × f_frsize), or undefined when it cannot be
 * asked (no such path) or keeps no count (ramfs).
 *
 * @example
 * ```ts
 * import { freeBytes } from "./libc.ts";
 * console.assert((freeBytes("/") ?? 0) > 0);
 * ```
 */
export function freeBytes(path: string): number | undefined {
  // struct statvfs on LP64 glibc: unsigned longs and 64-bit counts, f_frsize at 8, f_bavail at 32
  const buf = new Uint8Array(112);
  if (libc().statvfs(cString(path), buf) !== 0) return undefined;
  const v = new DataView(buf.buffer);
  // f_blocks 0: a file system that keeps no count (ramfs, procfs) cannot say
  if (v.getBigUint64(16, true) === 0n) return undefined;
  return Number(v.getBigUint64(8, true)) * Number(v.getBigUint64(32, true));
}

/** Peak resident set size of this process in bytes (getrusage's ru_maxrss). */
export function peakRss(): number {
  const usage = new Uint8Array(144);
  if (libc().getrusage(0, usage) !== 0) return 0;
  // struct rusage: two struct timeval (16 bytes each), then long ru_maxrss in KiB.
  return Number(new DataView(usage.buffer).getBigInt64(32, true)) * 1024;
}
