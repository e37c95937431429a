/**
 * The I/O loop of the asynchronous job engines, written once over a
 * {@linkcode KernelQueue}: libaio (libaio.ts) and io_uring (io_uring.ts) each
 * supply only their queue, as fio's engines plug their `ioengine_ops` into
 * one core loop. The loop keeps `iodepth` I/Os in flight, times them, shows
 * the watchdog what it waits on, and turns a failed call or completion into a
 * {@linkcode SyscallFailure}.
 *
 * Each I/O is handed to the kernel on its own as soon as a slot is free, as
 * fio does by default (iodepth_batch_submit=1): a batch filled behind a reap
 * reaches the device only when its last request is in, so the device would
 * see a lower depth. Completions are taken all that are ready at once.
 *
 * Timing follows fio: slat is from preparing an I/O to the submit returning,
 * clat from then to the moment its completion is reaped, lat the sum.
 *
 * A job file's pattern (JobRuntime.next) gives each I/O its file, offset and
 * length; an fsync or fdatasync in it waits, as fio's, until what is in
 * flight has completed, and then runs on this thread. Writes get fresh
 * contents before each one where the job's buffer options ask for it
 * (refill_buffers, scramble_buffers), and a failed I/O that
 * continue_on_error tolerates is counted and its slot reused.
 *
 * Under a rate (--rate, --rate-iops) at any depth, as fio: each request goes
 * at its intended start while up to `iodepth` are in flight; between starts
 * the job reaps completions, the wait timing out at the next start (where the
 * queue's waits can time out) instead of a blind sleep, so a completion is
 * timed when it happens. When every slot is busy at an intended start, the
 * request waits for a slot, and the wait counts in its latency (from the
 * intended start) and the job's lag.
 *
 * @module
 */

import type { JobPlan } from "../core/job_protocol.ts";
import { monoNow } from "../core/libc.ts";
import { type BlockVerifier, verifierOf } from "../core/verify.ts";
import { OP } from "../core/io_pattern.ts";
import { endJob, fillBlocks, JobFiles } from "./_file.ts";
import { type WriteFiller, writeFiller } from "./_data_fill.ts";
import type { KernelQueue } from "./_kernel_queue.ts";
import { type JobEngine, type JobRuntime, SyscallFailure, TIMES } from "./types.ts";

/**
 * Under a rate, with requests in flight, the job reaps completions until this
 * long before the next intended start, then lets the runtime's wait take the
 * rest (it spins the last stretch).
 */
const PACE_EARLY_MS = 0.1;
/** Slots the warm-up loop uses (see {@linkcode AsyncEngine.warm}). */
const WARM_SLOTS = 2;
const EINTR = 4;
const EAGAIN = 11;
const EBUSY = 16;

/**
 * A job engine over a kernel queue of `iodepth` slots of `bs` bytes. The
 * engines extend it with the `open` that sets their queue up.
 */
export class AsyncEngine implements JobEngine {
  readonly #plan: JobPlan;
  readonly #files: JobFiles;
  readonly #queue: KernelQueue;
  readonly #verifier: BlockVerifier | undefined;
  /** Fresh contents before each write, where the job's buffer options ask for them. */
  readonly #fill: WriteFiller | undefined;
  /** Each slot's buffer, where --verify or #fill writes into it; else empty. */
  readonly #blocks: Uint8Array[];
  // Per slot: when it was prepared and submitted, its direction, file, offset in that file
  // and in the job's space, and whether the kernel holds it.
  readonly #prepAt: Float64Array;
  readonly #submitAt: Float64Array;
  readonly #isRead: Uint8Array;
  readonly #fileOf: Int32Array;
  readonly #offsets: Float64Array;
  readonly #jobOffsets: Float64Array;
  readonly #lengths: Float64Array;
  readonly #inKernel: Uint8Array;
  /** Free slots, a stack. */
  readonly #free: Int32Array;
  #nFree = 0;
  /** Slots prepared and not yet taken by the kernel, in order (a ring of #qLen from #qHead). */
  readonly #queued: Int32Array;
  #qHead = 0;
  #qLen = 0;
  #inFlight = 0;
  #issuing = true;
  /** Under a rate, and the queue's waits can time out: reap until each intended start. */
  #paced = false;
  /** A sync of the pattern waiting for what is in flight: its file (-1: none), fdatasync. */
  #syncFile = -1;
  #syncData = false;
  /** While warming: every request is zero bytes long and a sync is skipped. */
  #zeroLength = false;
  /** Reaps made warming (see {@linkcode AsyncEngine.warm}'s loop). */
  #warmReaps = 0;
  /**
   * Under --verify, the I/Os in flight per block (see {@linkcode blockKeys}):
   * an I/O on a block that one still in flight covers waits for it, as fio's
   * serialize_overlap. Two writes of one block in flight at once may land in
   * either order (the kernel and the device keep none), so the older could be
   * what stays, one generation behind what verify expects; a time-based job
   * over a small file comes back to a block while one slow write of it is
   * still out.
   */
  readonly #busy: Map<number, number> | undefined;
  /** The I/O the runtime chose waits for an overlapping one to complete (#busy). */
  #held = false;
  /** When the held I/O was let through (its latency runs from then). */
  #heldAt = 0;

  /** An engine on the job's opened `files` and its set-up `queue`. */
  protected constructor(plan: JobPlan, files: JobFiles, queue: KernelQueue) {
    const depth = plan.iodepth;
    this.#plan = plan;
    this.#files = files;
    this.#queue = queue;
    this.#verifier = verifierOf(plan);
    this.#busy = this.#verifier === undefined ? undefined : new Map();
    const fill = writeFiller(plan);
    this.#fill = fill?.perWrite ? fill : undefined;
    const slotBuffers = this.#verifier !== undefined || this.#fill !== undefined;
    this.#blocks = !slotBuffers ? [] : Array.from(
      { length: depth },
      (_, s) => queue.bytes.subarray(s * queue.slotBytes, (s + 1) * queue.slotBytes),
    );
    this.#prepAt = new Float64Array(depth);
    this.#submitAt = new Float64Array(depth);
    this.#isRead = new Uint8Array(depth);
    this.#fileOf = new Int32Array(depth);
    this.#offsets = new Float64Array(depth);
    this.#jobOffsets = new Float64Array(depth);
    this.#lengths = new Float64Array(depth);
    this.#inKernel = new Uint8Array(depth);
    this.#free = new Int32Array(depth);
    this.#queued = new Int32Array(depth);
  }

  /**
   * Opens the job's files, lays them out, sets the queue up with `makeQueue`
   * and fills its buffers (the verify pattern, or random bytes); closes the
   * files when anything fails.
   */
  protected static openParts(
    plan: JobPlan,
    makeQueue: (files: JobFiles) => KernelQueue,
  ): { files: JobFiles; queue: KernelQueue } {
    const files = JobFiles.open(plan);
    try {
      files.layOut();
      const queue = makeQueue(files);
      fillBlocks(plan, queue.bytes);
      return { files, queue };
    } catch (e) {
      files.close();
      throw e;
    }
  }

  run(rt: JobRuntime): void {
    this.#loop(rt);
    endJob(rt, this.#plan, this.#files);
  }

  /**
   * The loop on a throwaway runtime before the start barrier (see
   * warmUp in types.ts), every request zero bytes long: the same calls
   * into the kernel from the same code, so that V8 compiles the loop and
   * its FFI calls optimised before the measured run, and no byte is read or
   * written, no sync run. Where the queue has requests the kernel completes
   * in the submit ({@linkcode KernelQueue.warming}: io_uring's NOP) they are
   * those, so the waits the warm-up makes return at once instead of sleeping
   * on a kernel worker (at 64 jobs on tmpfs, 2.1 M context switches before
   * the start barrier). A job that verifies is not warmed (its checks
   * would find nothing read).
   */
  warm(rt: JobRuntime): void {
    if (this.#verifier !== undefined) return;
    this.#zeroLength = true;
    this.#queue.warming?.(true);
    try {
      this.#loop(rt);
    } finally {
      this.#queue.warming?.(false);
      this.#zeroLength = false;
      this.#issuing = true;
    }
  }

  #loop(rt: JobRuntime): void {
    const depth = this.#plan.iodepth;
    for (let i = 0; i < depth; i++) this.#free[i] = depth - 1 - i;
    // Warming, two slots: V8 tiers a function up by its calls, and with every slot in use a
    // reap (of all that are ready) is called iodepth times less often than the loop's
    // other methods (at depth 32 the reap and the queue's wait stayed in Maglev's code
    // through the measured window of 64 jobs, each too slow to make the calls there). Two,
    // not one, so that a burst's second request (its time the last submit's return) and
    // a reap of several are compiled too: with one, TurboFan took that time for an integer
    // and threw #issue away at the first burst of the measured run.
    this.#nFree = this.#zeroLength ? Math.min(WARM_SLOTS, depth) : depth;
    this.#paced = rt.paced && this.#queue.timedWaits;
    while (this.#issuing || this.#inFlight > 0 || this.#qLen > 0 || this.#syncFile >= 0) {
      if (this.#syncFile >= 0 && this.#inFlight === 0 && this.#qLen === 0) this.#sync(rt);
      const reapForMs = this.#issue(rt);
      if (this.#inFlight > 0) this.#reap(rt, reapForMs);
    }
  }

  /**
   * Prepares and submits I/Os while slots are free and the runtime lets
   * them go. Returns how long (ms) to reap before the next intended start
   * under a rate, else 0.
   */
  #issue(rt: JobRuntime): number {
    const q = this.#queue;
    const queued = this.#queued;
    // When the last submit returned: the next I/O's preparation begins right then, so
    // closed-loop its time is that one clock read (paced, the pacer reads its own).
    let returned = -1;
    while (this.#qLen > 0 || (this.#issuing && this.#nFree > 0 && this.#syncFile < 0)) {
      if (this.#qLen === 0) {
        if (!this.#held) {
          if (this.#paced && this.#inFlight > 0) {
            const wait = rt.untilDue(monoNow());
            if (wait > PACE_EARLY_MS) return wait - PACE_EARLY_MS;
          }
          const now = returned >= 0 ? returned : monoNow();
          rt.times[TIMES.ISSUE] = now;
          if (!rt.mayIssue()) {
            this.#issuing = false;
            break;
          }
          rt.next();
          if (rt.op >= OP.FSYNC) {
            this.#syncFile = rt.file;
            this.#syncData = rt.op === OP.FDATASYNC;
            break;
          }
          this.#heldAt = now;
        }
        // what is in flight is all in the kernel here, so a reap frees the block
        this.#held = this.#overlapsInFlight(rt);
        if (this.#held) break;
        this.#prepare(rt);
      }
      const first = queued[this.#qHead]!;
      // The submit can block (buffered I/O done inline, a FUSE mount): the watchdog sees it.
      this.#showBusy(rt, first, this.#prepAt);
      const rc = q.submit();
      rt.idle();
      if (rc > 0) {
        this.#submitted(rc);
        if (!rt.paced) returned = this.#submitAt[first]!;
        continue;
      }
      if ((rc === -EAGAIN || rc === -EBUSY || rc === -EINTR || rc === 0) && this.#inFlight > 0) {
        break; // retry once completions have freed kernel resources
      }
      this.#fail(q.calls.submit, rc < 0 ? -rc : EAGAIN, first, `(submitting ${this.#qLen})`);
    }
    return 0;
  }

  /**
   * Takes a free slot for the I/O the runtime chose ({@linkcode JobRuntime.next}), let through
   * at #heldAt, and queues it.
   */
  #prepare(rt: JobRuntime): void {
    const slot = this.#free[--this.#nFree]!;
    const read = rt.isRead;
    const f = rt.file;
    const where = rt.offset;
    // rt.length is read in the warm-up too: V8 compiles no read it never saw, and would throw
    // the warmed loop away at the first real request to add it.
    const length = rt.length;
    const len = this.#zeroLength ? 0 : length;
    this.#isRead[slot] = read ? 1 : 0;
    this.#offsets[slot] = where;
    this.#fileOf[slot] = f;
    this.#jobOffsets[slot] = rt.jobOffset;
    this.#lengths[slot] = len;
    if (this.#busy !== undefined) this.#mark(f, rt.jobOffset, len, 1);
    if (!read) {
      if (this.#verifier !== undefined) {
        this.#verifier.prepareWrite(this.#blocks[slot]!, where, rt.jobOffset);
      } else if (this.#fill !== undefined) this.#fill.fill(this.#blocks[slot]!, len, where);
    }
    this.#queue.prepare(slot, !read, this.#files.fds[f]!, f, where, len);
    this.#prepAt[slot] = this.#heldAt;
    const depth = this.#queued.length;
    const at = this.#qHead + this.#qLen++;
    this.#queued[at < depth ? at : at - depth] = slot;
  }

  /** Under --verify: whether the I/O the runtime chose covers a block an I/O in flight covers. */
  #overlapsInFlight(rt: JobRuntime): boolean {
    const busy = this.#busy;
    if (busy === undefined || busy.size === 0) return false;
    for (
      const k of blockKeys(this.#plan.bs, this.#files.fds.length, rt.file, rt.jobOffset, rt.length)
    ) {
      if (busy.has(k)) return true;
    }
    return false;
  }

  /** Counts an I/O of `len` bytes at `jobOffset` of file `f` in (+1) or out (-1) of #busy. */
  #mark(f: number, jobOffset: number, len: number, by: 1 | -1): void {
    const busy = this.#busy!;
    for (const k of blockKeys(this.#plan.bs, this.#files.fds.length, f, jobOffset, len)) {
      const n = (busy.get(k) ?? 0) + by;
      if (n > 0) busy.set(k, n);
      else busy.delete(k);
    }
  }

  /** Runs the pattern's sync once nothing is in flight (fio's fsync= and fdatasync=). */
  #sync(rt: JobRuntime): void {
    rt.busy(monoNow(), false, this.#syncFile, -1);
    if (!this.#zeroLength) this.#files.sync(this.#syncFile, this.#syncData);
    rt.idle();
    rt.completeSync(monoNow());
    this.#syncFile = -1;
  }

  /** The `n` oldest queued slots are in the kernel from now. */
  #submitted(n: number): void {
    const t = monoNow();
    const depth = this.#queued.length;
    for (let i = 0; i < n; i++) {
      const slot = this.#queued[this.#qHead]!;
      this.#qHead = this.#qHead + 1 === depth ? 0 : this.#qHead + 1;
      this.#submitAt[slot] = t;
      this.#inKernel[slot] = 1;
    }
    this.#qLen -= n;
    this.#inFlight += n;
  }

  /**
   * Waits for completions (under a rate with `reapForMs` > 0, only until the
   * next intended start) and records every one that is ready.
   */
  #reap(rt: JobRuntime, reapForMs: number): void {
    const q = this.#queue;
    // Warming, every other reap waits as if nothing were ready (zero-length requests always
    // are): the waiting path is compiled before the barrier, not in the measured window.
    let n = this.#zeroLength && (this.#warmReaps++ & 1) === 1 ? 0 : q.reapReady();
    if (n === 0) {
      // Under a rate, wait only until the next intended start. Otherwise wait for a
      // completion as fio does, without a timeout (arming one costs each wait a timer in
      // the kernel), and show the watchdog the oldest I/O in flight meanwhile.
      const timed = reapForMs > 0;
      if (!timed) this.#showOldest(rt);
      n = q.getevents(timed ? Math.max(1, Math.floor(reapForMs * 1e6)) : undefined);
      if (n < 0) {
        if (n === -EINTR) return;
        const path = this.#files.paths[0]!;
        throw new SyscallFailure(q.calls.wait, -n, path, undefined, q.calls.waitDetail);
      }
      if (n === 0) return; // the next intended start has come
    }
    rt.times[TIMES.DONE] = monoNow();
    rt.idle();
    this.#complete(rt, n);
  }

  /** Records the `n` ready completions, reaped at the runtime's `DONE`, and frees their slots. */
  #complete(rt: JobRuntime, n: number): void {
    const q = this.#queue;
    const times = rt.times;
    const t = times[TIMES.DONE]!;
    for (let e = 0; e < n; e++) {
      const slot = q.eventSlot(e);
      const res = q.eventResult(e);
      const read = this.#isRead[slot] === 1;
      const len = this.#lengths[slot]!;
      if (res !== len) {
        if (res < 0 && this.#tolerated(rt, slot, -res)) continue;
        q.release(e + 1);
        this.#fail(
          read ? q.calls.read : q.calls.write,
          res < 0 ? -res : 0,
          slot,
          res < 0 ? undefined : `(short ${read ? "read" : "write"}: ${res} of ${len})`,
        );
      }
      const prep = this.#prepAt[slot]!;
      times[TIMES.LAT] = (t - prep) * 1e6;
      times[TIMES.SLAT] = (this.#submitAt[slot]! - prep) * 1e6;
      rt.complete(read, len, this.#offsets[slot]!);
      if (this.#verifier !== undefined && read) {
        const file = this.#files.paths[this.#fileOf[slot]!]!;
        this.#verifier.checkRead(
          this.#blocks[slot]!,
          file,
          this.#offsets[slot]!,
          this.#jobOffsets[slot]!,
        );
      }
      this.#freeSlot(slot);
    }
    q.release(n);
    this.#inFlight -= n;
  }

  /**
   * Whether slot `slot`'s failure with `errno` is one the job goes on after
   * (continue_on_error): then it is counted and the slot is free again.
   */
  #tolerated(rt: JobRuntime, slot: number, errno: number): boolean {
    const read = this.#isRead[slot] === 1;
    const call = read ? this.#queue.calls.read : this.#queue.calls.write;
    if (!rt.tolerates(read, errno, `${call} ${this.#files.paths[this.#fileOf[slot]!]}`)) {
      return false;
    }
    this.#freeSlot(slot);
    return true;
  }

  /** Slot `slot`'s I/O is done: the slot is free again, its blocks no longer in flight. */
  #freeSlot(slot: number): void {
    if (this.#busy !== undefined) {
      this.#mark(this.#fileOf[slot]!, this.#jobOffsets[slot]!, this.#lengths[slot]!, -1);
    }
    this.#inKernel[slot] = 0;
    this.#free[this.#nFree++] = slot;
  }

  /** Tells the watchdog the job waits on slot `slot`'s I/O, begun at `since[slot]`. */
  #showBusy(rt: JobRuntime, slot: number, since: Float64Array): void {
    rt.busy(since[slot]!, this.#isRead[slot] === 1, this.#fileOf[slot]!, this.#offsets[slot]!);
  }

  /** Shows the watchdog the oldest I/O in flight. */
  #showOldest(rt: JobRuntime): void {
    let oldest = -1;
    const at = this.#submitAt;
    for (let s = 0; s < this.#inKernel.length; s++) {
      if (this.#inKernel[s] === 1 && (oldest < 0 || at[s]! < at[oldest]!)) oldest = s;
    }
    if (oldest >= 0) this.#showBusy(rt, oldest, at);
  }

  /** Throws the failure of `syscall` with `errno` on slot `slot`'s I/O. */
  #fail(syscall: string, errno: number, slot: number, detail?: string): never {
    const path = this.#files.paths[this.#fileOf[slot]!]!;
    throw new SyscallFailure(syscall, errno, path, this.#offsets[slot]!, detail);
  }

  close(): void {
    this.#queue.close(this.#plan.timeoutMs ?? 30_000);
    this.#files.close();
  }
}

/**
 * The keys of the `bs` blocks an I/O of `len` bytes at `jobOffset` of file
 * `f` (of `files`) covers: one per block, the same for every I/O that covers
 * that block of that file.
 *
 * @example
 * ```ts
 * import { blockKeys } from "./_async_engine.ts";
 * console.assert(blockKeys(4096, 1, 0, 8192, 8192).join() === "2,3");
 * ```
 */
export function blockKeys(
  bs: number,
  files: number,
  f: number,
  jobOffset: number,
  len: number,
): number[] {
  const first = Math.floor(jobOffset / bs);
  const last = Math.floor((jobOffset + Math.max(len, 1) - 1) / bs);
  const keys: number[] = [];
  for (let b = first; b <= last; b++) keys.push(b * files + f);
  return keys;
}
