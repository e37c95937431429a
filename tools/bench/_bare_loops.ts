/**
 * The bare loops of tools/bench/ffi_floor.ts: an engine's calls through
 * Deno's FFI, with the clock reads a latency needs or without them, and
 * nothing else — no histogram, no checks beyond each read's length, offsets
 * in order (tierbench's SequentialOffsets) or from xorshift32. Each returns
 * the calling thread's CPU per read.
 *
 * @module
 */

import { cpuTimes, errnoName, lastErrno, libc, monoNow } from "../../core/libc.ts";
import { SequentialOffsets } from "../../core/offsets.ts";
import type { UringQueue } from "../../engines/mod.ts";
import type { CpuPerIo } from "./_fio.ts";

/** How long a loop runs: `seconds` (read on its clock), or `count` reads. */
export interface LoopRun {
  readonly seconds?: number;
  readonly count?: number;
  /** Whether it reads the clock where fio and tierbench do; without it, it ends by count. */
  readonly clock: boolean;
}

/** What a loop did: its reads and the calling thread's CPU per read. */
export interface LoopResult {
  ios: number;
  cpu: CpuPerIo;
}

/** One engine's bare loop. */
export type BareLoop = (run: LoopRun) => LoopResult;

/**
 * The offsets of `bs`-byte reads over `size` bytes: in order, wrapping at the
 * end (`read`), or at random with xorshift32 (`randread`).
 *
 * @example
 * ```ts
 * import { offsets } from "./_bare_loops.ts";
 * const next = offsets("read", 4096, 8192);
 * console.assert(next() === 0 && next() === 4096 && next() === 0);
 * ```
 */
export function offsets(rw: "read" | "randread", bs: number, size: number): () => number {
  if (rw === "read") {
    const inOrder = new SequentialOffsets(size, bs);
    return () => inOrder.next();
  }
  const blocks = Math.max(1, Math.floor(size / bs));
  let x = 2463534242;
  return () => {
    x ^= x << 13; // every block, in an order no cache predicts
    x ^= x >>> 17;
    x ^= x << 5;
    return ((x >>> 0) % blocks) * bs;
  };
}

/** Runs `body` between two readings of the thread's CPU; `body` gets its end time and returns its reads. */
function measured(run: LoopRun, body: (end: number) => number): LoopResult {
  const end = monoNow() + (run.seconds ?? 0) * 1000;
  const c0 = cpuTimes("thread");
  const ios = body(end);
  const c1 = cpuTimes("thread");
  const n = Math.max(ios, 1);
  return { ios, cpu: { usr: (c1.usr_ns - c0.usr_ns) / n, sys: (c1.sys_ns - c0.sys_ns) / n } };
}

/** A read that failed (`rc` a negative errno) or came back short (`rc` bytes of `bs`). */
function failed(call: string, rc: number, bs: number): Error {
  return callFailed(call, rc, `${rc} of ${bs} bytes`);
}

/** A call that failed (`rc` a negative errno), or returned what it should not (`otherwise`). */
function callFailed(call: string, rc: number, otherwise: string): Error {
  return new Error(`${call}: ${rc < 0 ? errnoName(-rc) : otherwise}`);
}

/**
 * psync's loop: pread(2) of `bs` bytes into `ptr` at `next()`, the clock read
 * before and after each.
 *
 * @example
 * ```ts
 * import { offsets, psyncLoop } from "./_bare_loops.ts";
 * import { allocIoBuffer, cString, freeAligned, libc } from "../../core/libc.ts";
 * const path = Deno.makeTempFileSync();
 * Deno.writeFileSync(path, new Uint8Array(1 << 16));
 * const fd = libc().open(cString(path), 0, 0);
 * const buf = allocIoBuffer(4096, 4096);
 * const r = psyncLoop(fd, buf.pointer, 4096, offsets("randread", 4096, 1 << 16))({
 *   count: 10,
 *   clock: true,
 * });
 * libc().close(fd);
 * freeAligned(buf);
 * Deno.removeSync(path);
 * console.assert(r.ios === 10);
 * ```
 */
export function psyncLoop(
  fd: number,
  ptr: Deno.PointerValue,
  bs: number,
  next: () => number,
): BareLoop {
  const { pread } = libc();
  const count = BigInt(bs);
  return (run) =>
    measured(run, (end) => {
      let ios = 0;
      while (run.count === undefined || ios < run.count) {
        if (run.clock) monoNow();
        const got = pread(fd, ptr, count, BigInt(next()));
        if (got !== bs) throw failed("pread", got < 0 ? -lastErrno() : got, bs);
        ios++;
        // Without a clock the loop ends by its count; with one, by time, checked on every read.
        if (run.clock && monoNow() >= end && run.count === undefined) break;
      }
      return ios;
    });
}

/**
 * io_uring's loop through the engine's own queue `q` (set up with `depth`
 * slots of `bs` bytes): `depth` reads in flight, one submit each, as the
 * engine makes them; each reap waits only when nothing is ready. The clock
 * is read after each reap (the completions' time), before the first read a
 * reap lets go (its start) and after each submit (the submission's end), as
 * fio and tierbench read it for lat, clat and slat.
 *
 * @example
 * ```ts ignore
 * const q = UringQueue.open({ entries: 8, slotBytes: 1 << 20, alignment: 4096 }, fail);
 * const r = uringLoop(q, fd, 1 << 20, 8, offsets("read", 1 << 20, size))({ count: 100, clock: true });
 * ```
 */
export function uringLoop(
  q: UringQueue,
  fd: number,
  bs: number,
  depth: number,
  next: () => number,
): BareLoop {
  const freed = new Int32Array(depth);
  return (run) =>
    measured(run, (end) => {
      let issued = 0;
      let done = 0;
      const goes = (now: number) => run.count === undefined ? now < end : issued < run.count;
      const issue = (slot: number) => {
        q.prepare(slot, false, fd, 0, next(), bs);
        const rc = q.submit();
        if (rc !== 1) throw callFailed("io_uring_enter (submit)", rc, "it took no request");
        if (run.clock) monoNow();
        issued++;
      };
      if (run.clock) monoNow();
      for (let s = 0; s < depth && goes(0); s++) issue(s);
      while (done < issued) {
        const n = q.reapReady() || q.getevents();
        if (n <= 0) throw callFailed("io_uring_enter (wait)", n, "nothing was ready");
        const now = run.clock ? monoNow() : 0;
        for (let e = 0; e < n; e++) {
          const res = q.eventResult(e);
          if (res !== bs) throw failed("read (io_uring)", res, bs);
          freed[e] = q.eventSlot(e);
        }
        q.release(n);
        done += n;
        if (run.clock && goes(now)) monoNow();
        for (let e = 0; e < n && goes(now); e++) issue(freed[e]!);
      }
      return done;
    });
}

/**
 * Warms `loop` up, both ways, so that neither measured run compiles: five
 * short runs of each, then one second with the clock and as many reads (at
 * least 10,000) without it.
 */
export function warmUp(loop: BareLoop): void {
  for (let i = 0; i < 5; i++) {
    loop({ count: 1_000, clock: true });
    loop({ count: 1_000, clock: false });
  }
  const { ios } = loop({ seconds: 1, clock: true });
  loop({ count: Math.max(ios, 10_000), clock: false });
}
