/**
 * The replay of one thread of a trace (runs inside that thread's Worker):
 * its ops in the order it made them, synchronously, as the thread did —
 * pread/pwrite and the like through libc, io_submit batches of the recorded
 * size on one kernel AIO context per recorded context, and io_getevents
 * waiting for as many completions as the recorded call returned, so the
 * requests in flight follow the recording. At `1x` each op waits out the
 * think time the recording had before it (the pause since the thread's last
 * call ended); at `max` none.
 *
 * What is kept is bounded: a latency histogram per tier and direction,
 * counters, each phase's first start and last end, and at most
 * `timelineCap` spans for the timeline.
 *
 * @module
 */

import { waitForGate } from "../core/futex.ts";
import { IoError } from "../core/errors.ts";
import {
  type AlignedBuffer,
  allocAligned,
  cString,
  errnoName,
  freeAligned,
  lastErrno,
  libc,
  monoNow,
  O,
  strerror,
} from "../core/libc.ts";
import {
  type EncodedDirection,
  encodeDirection,
  LatencyBuckets,
  type LatencyCountsOfDirection,
  newLatencyCounts,
} from "../core/latency_buckets.ts";
import { AioRing, timespec } from "./_aio_ring.ts";
import { fillRandom } from "./_file.ts";
import { checkPattern, Coverage, fillPattern } from "./_trace_pattern.ts";
import {
  CTRL,
  IOCB_DIRECT,
  OP,
  OPEN_CREAT,
  OPEN_DIRECT,
  OPEN_TRUNC,
  PROGRESS,
  PROGRESS_SLOTS,
  REC,
  type ThreadReplayPlan,
} from "./trace_ops.ts";

/** One tier's figures in one direction, as a thread reports them. */
export interface ThreadDirection {
  bytes: number;
  ops: number;
  /** Reads that returned fewer bytes than asked (end of file). */
  short: number;
  /** HDR's counts of each latency: the main thread makes the histograms (`histogramsOfCounts`). */
  hist: EncodedDirection;
}

/** What one thread's replay reports. */
export interface ThreadReplayReport {
  thread: string;
  /** CLOCK_MONOTONIC ms of its first op's start and its last op's end (NaN without ops). */
  start: number;
  end: number;
  /** Recorded µs of its first op's start and its last op's end. */
  recordedStart: number;
  recordedEnd: number;
  ops: number;
  /** Per tier: read and write. */
  tiers: { read: ThreadDirection; write: ThreadDirection }[];
  /** Per phase: first start and last end (monoNow ms; Infinity / -Infinity when none). */
  phases: [number, number][];
  /** Timeline spans: start, end (monoNow ms), op code, bytes — at most the plan's cap. */
  spans: number[];
  spansCut: boolean;
  /** Metadata calls (unlink, mkdir, rename) that failed here though the recording's did not. */
  metaFailed: number;
  /** Completions reaped at the end (or to free a slot) rather than where the recording reaped them. */
  lateReaps: number;
  /** Files opened buffered because the file system refused O_DIRECT. */
  directRefused: number;
  /** --verify: bytes read and checked, and bytes read where this thread could not know the data. */
  verified: number;
  unverifiable: number;
}

const EIO = 5;
const EINVAL = 22;
/** How long one wait for completions may take before it is tried again (the watchdog judges). */
const WAIT = timespec(1e9);

interface DirAcc {
  bytes: number;
  ops: number;
  short: number;
  h: LatencyCountsOfDirection;
  lat: LatencyBuckets;
  clat: LatencyBuckets;
  slat: LatencyBuckets;
}

function dirAcc(): DirAcc {
  const h = newLatencyCounts();
  return {
    bytes: 0,
    ops: 0,
    short: 0,
    h,
    lat: new LatencyBuckets(h.lat),
    clat: new LatencyBuckets(h.clat),
    slat: new LatencyBuckets(h.slat),
  };
}

/** A context's ring and what each slot holds. */
interface Ring {
  readonly ring: AioRing;
  readonly free: number[];
  readonly prep: Float64Array;
  readonly submitted: Float64Array;
  readonly file: Int32Array;
  readonly offset: Float64Array;
  readonly length: Float64Array;
  readonly write: Uint8Array;
  inflight: number;
}

/** Ring buffers a thread allocates before the start, bytes in all (the rest on first use). */
const RINGS_OPENED_BEFORE = 1 << 30;

function ns(ms: number): number {
  const v = Math.round(ms * 1e6);
  return v < 1 ? 1 : v;
}

/**
 * Replays one thread: {@linkcode TraceThreadReplay.run} it with a source
 * of op chunks (engines/trace_ops.ts), then {@linkcode TraceThreadReplay.close}.
 */
export class TraceThreadReplay {
  readonly #plan: ThreadReplayPlan;
  readonly #ctrl: Int32Array<SharedArrayBuffer>;
  readonly #progress: Float64Array<SharedArrayBuffer>;
  readonly #base: number;
  readonly #fds = new Map<number, number>();
  readonly #rings = new Map<number, Ring>();
  readonly #buf: AlignedBuffer;
  readonly #acc: { read: DirAcc; write: DirAcc }[];
  readonly #phases: Float64Array;
  readonly #coverage = new Map<number, Coverage>();
  readonly #spans: number[] = [];
  #spansCut = false;
  #start = NaN;
  #end = NaN;
  #recStart = NaN;
  #recEnd = NaN;
  #ops = 0;
  #metaFailed = 0;
  #lateReaps = 0;
  #directRefused = 0;
  #verified = 0;
  #unverifiable = 0;
  /** At 1x: the recorded end of the last op and when it ended here (monoNow ms). */
  #recPrevEnd = NaN;
  #prevEnd = NaN;
  #origin = 0;
  /** When the last synchronous call returned (monoNow ms). */
  #t1 = 0;
  readonly #libc = libc();
  readonly #tierOf: Int32Array;

  /**
   * The replay of thread `slot` of `plan`, its control words in `ctrl`
   * (engines/trace_ops.ts CTRL) and progress in `progress`; files already
   * laid out are `laidOut` ([file, bytes] pairs, for --verify).
   */
  constructor(
    plan: ThreadReplayPlan,
    ctrl: Int32Array<SharedArrayBuffer>,
    progress: Float64Array<SharedArrayBuffer>,
    slot: number,
    laidOut: readonly [number, number][] = [],
  ) {
    this.#plan = plan;
    this.#ctrl = ctrl;
    this.#progress = progress;
    this.#base = slot * PROGRESS_SLOTS;
    this.#tierOf = Int32Array.from(plan.fileTier);
    this.#buf = allocAligned(Math.max(4096, Math.ceil(plan.syncBytes / 4096) * 4096), 4096);
    fillRandom(this.#buf.bytes, 0x7e57 + slot);
    this.#acc = Array.from({ length: plan.tiers }, () => ({ read: dirAcc(), write: dirAcc() }));
    this.#phases = new Float64Array(plan.phases * 2);
    for (let p = 0; p < plan.phases; p++) {
      this.#phases[2 * p] = Infinity;
      this.#phases[2 * p + 1] = -Infinity;
    }
    if (plan.verify) { for (const [f, bytes] of laidOut) this.#cover(f).add(0, bytes); }
    this.#openRings();
  }

  /**
   * Opens the rings of the contexts this thread submits on before the start:
   * io_setup is microseconds in the kernel, but allocating and filling a
   * ring's buffers is not, and is no part of what the trace did. Rings past
   * RINGS_OPENED_BEFORE bytes in all open on first use.
   */
  #openRings(): void {
    let left = RINGS_OPENED_BEFORE;
    for (const [ctx, c] of Object.entries(this.#plan.contexts)) {
      const bytes = c.depth * c.slotBytes;
      if (bytes > left) continue;
      left -= bytes;
      this.#ring(Number(ctx));
    }
  }

  #cover(file: number): Coverage {
    let c = this.#coverage.get(file);
    if (!c) this.#coverage.set(file, c = new Coverage());
    return c;
  }

  /** Waits for the start, then runs every op `next` hands out (undefined: no more). */
  run(next: () => Float64Array | undefined): ThreadReplayReport {
    waitForGate(this.#ctrl, CTRL.GO);
    this.#origin = monoNow();
    for (let chunk = next(); chunk !== undefined; chunk = next()) {
      for (let i = 0; i < chunk.length; i += REC) {
        if (Atomics.load(this.#ctrl, CTRL.STOP) !== 0) return this.report();
        i = this.#op(chunk, i);
      }
    }
    this.#drain();
    return this.report();
  }

  /** Runs the op at `i` (and the iocbs after a submit); the index of its last record. */
  #op(r: Float64Array, i: number): number {
    const code = r[i]!, t = r[i + 1]!, dur = r[i + 2]!;
    if (code === OP.WAIT) {
      this.#after(r[i + 3]!, r[i + 4]!);
      return i;
    }
    this.#think(t);
    const t0 = monoNow();
    let bytes = 0, last = i, t1 = 0;
    switch (code) {
      case OP.READ:
      case OP.WRITE:
        bytes = this.#sync(code === OP.WRITE, r[i + 3]!, r[i + 4]!, r[i + 5]!, r[i + 6]! === 1, t0);
        t1 = this.#t1;
        break;
      case OP.SUBMIT: {
        // the compiler keeps a submit and its iocbs in one chunk
        const n = r[i + 4]!;
        bytes = this.#submit(r[i + 3]!, r, i + REC, n);
        last = i + n * REC;
        break;
      }
      case OP.REAP:
        bytes = this.#reap(r[i + 3]!, r[i + 4]!);
        break;
      default:
        this.#meta(code, r[i + 3]!, r[i + 4]!, r[i + 5]!, r[i + 6]!);
    }
    if (t1 === 0) t1 = monoNow();
    this.#done(code, t, dur, r[i + 7]!, t0, t1, bytes);
    return last;
  }

  /**
   * Waits until thread `thread` has done `ops` ops (or the replay stops):
   * the next op reads what that thread wrote, or works on a file it cut,
   * after it in the recording (bench/_trace_order.ts).
   */
  #after(thread: number, ops: number): void {
    const word = CTRL.DONE + thread;
    for (let now = Atomics.load(this.#ctrl, word); now < ops;) {
      if (Atomics.load(this.#ctrl, CTRL.STOP) !== 0) return;
      Atomics.wait(this.#ctrl, word, now, 100);
      now = Atomics.load(this.#ctrl, word);
    }
  }

  /** At 1x, waits out the recorded pause before an op that started at `t` (µs). */
  #think(t: number): void {
    if (Number.isNaN(this.#recStart)) this.#recStart = t;
    if (this.#plan.speed !== "1x") return;
    const due = Number.isNaN(this.#recPrevEnd)
      ? this.#origin + t / 1000
      : this.#prevEnd + Math.max(0, t - this.#recPrevEnd) / 1000;
    const wait = due - monoNow();
    if (wait > 0) Atomics.wait(this.#ctrl, CTRL.STOP, 0, wait);
  }

  #done(
    code: number,
    t: number,
    dur: number,
    phase: number,
    t0: number,
    t1: number,
    bytes: number,
  ): void {
    if (Number.isNaN(this.#start)) this.#start = t0;
    this.#end = t1;
    this.#recPrevEnd = t + Math.max(0, dur);
    this.#recEnd = Number.isNaN(this.#recEnd)
      ? this.#recPrevEnd
      : Math.max(this.#recEnd, this.#recPrevEnd);
    this.#prevEnd = t1;
    this.#ops++;
    const ph = this.#phases;
    if (t0 < ph[2 * phase]!) ph[2 * phase] = t0;
    if (t1 > ph[2 * phase + 1]!) ph[2 * phase + 1] = t1;
    const p = this.#progress, b = this.#base;
    p[b + PROGRESS.OPS] = this.#ops;
    if (this.#plan.waitedOn) {
      Atomics.store(this.#ctrl, CTRL.DONE + this.#plan.index, this.#ops);
      Atomics.notify(this.#ctrl, CTRL.DONE + this.#plan.index);
    }
    if (this.#spans.length < this.#plan.timelineCap * 4) this.#spans.push(t0, t1, code, bytes);
    else this.#spansCut = true;
  }

  #busy(since: number, file: number, offset: number): void {
    const p = this.#progress, b = this.#base;
    p[b + PROGRESS.BUSY_FILE] = file;
    p[b + PROGRESS.BUSY_OFFSET] = offset;
    p[b + PROGRESS.BUSY_SINCE] = since;
  }

  #idle(): void {
    this.#progress[this.#base + PROGRESS.BUSY_SINCE] = 0;
  }

  #fail(call: string, file: number, offset?: number, errno = lastErrno()): never {
    throw new IoError({
      syscall: call,
      errno,
      code: errnoName(errno),
      path: this.#plan.files[file] ?? "",
      offset,
      detail: `(${strerror(errno)})`,
    });
  }

  /** This thread's descriptor on `file` (O_DIRECT or not), opened on first use. */
  #fd(file: number, direct: boolean, flags = O.RDWR | O.CREAT): number {
    const key = file * 2 + (direct ? 1 : 0);
    let fd = this.#fds.get(key);
    if (fd === undefined) {
      fd = this.#open(file, flags, direct);
      if (fd < 0) this.#fail("open", file);
      this.#fds.set(key, fd);
    }
    return fd;
  }

  /**
   * open(2) of `file`; where its file system refuses O_DIRECT (EINVAL), the
   * file is opened buffered instead, and the report counts it.
   */
  #open(file: number, flags: number, direct: boolean): number {
    const path = cString(this.#plan.files[file]!);
    const fd = libc().open(path, flags | O.CLOEXEC | (direct ? O.DIRECT : 0), 0o600);
    if (fd >= 0 || !direct || lastErrno() !== EINVAL) return fd;
    this.#directRefused++;
    return libc().open(path, flags | O.CLOEXEC, 0o600);
  }

  #closeFile(file: number): void {
    for (const key of [file * 2, file * 2 + 1]) {
      const fd = this.#fds.get(key);
      if (fd !== undefined) {
        libc().close(fd);
        this.#fds.delete(key);
      }
    }
  }

  #record(
    file: number,
    write: boolean,
    bytes: number,
    lat: number,
    clat: number,
    slat: number,
  ): void {
    const a = this.#acc[this.#tierOf[file]!]!;
    const d = write ? a.write : a.read;
    d.bytes += bytes;
    this.#progress[this.#base + (write ? PROGRESS.WRITE : PROGRESS.READ)]! += bytes;
    d.ops++;
    d.lat.record(ns(lat));
    if (slat >= 0) {
      d.clat.record(ns(clat));
      d.slat.record(ns(slat));
    }
  }

  #sync(
    write: boolean,
    file: number,
    offset: number,
    length: number,
    direct: boolean,
    t0: number,
  ): number {
    const fd = this.#fds.get(file * 2 + (direct ? 1 : 0)) ?? this.#fd(file, direct);
    const verify = this.#plan.verify;
    if (write && verify) fillPattern(this.#buf.bytes.subarray(0, length), file + 1, offset);
    this.#busy(t0, file, offset);
    const c = this.#libc;
    const n = write
      ? c.pwrite(fd, this.#buf.pointer, BigInt(length), BigInt(offset))
      : c.pread(fd, this.#buf.pointer, BigInt(length), BigInt(offset));
    const t1 = this.#t1 = monoNow();
    this.#idle();
    if (n < 0) this.#fail(write ? "pwrite" : "pread", file, offset);
    if (write && n < length) this.#fail("pwrite", file, offset, EIO);
    this.#record(file, write, n, t1 - t0, 0, -1);
    if (!write && n < length) this.#acc[this.#plan.fileTier[file]!]!.read.short++;
    if (verify) this.#verify(write, file, offset, this.#buf.bytes.subarray(0, n));
    return n;
  }

  #verify(write: boolean, file: number, offset: number, data: Uint8Array): void {
    const cov = this.#cover(file);
    if (write) return cov.add(offset, offset + data.length);
    let checked = 0;
    for (const [a, b] of cov.covered(offset, offset + data.length)) {
      const bad = checkPattern(data.subarray(a - offset, b - offset), file + 1, a);
      if (bad >= 0) {
        throw new IoError({
          syscall: "verify",
          errno: EIO,
          code: "EIO",
          path: this.#plan.files[file]!,
          offset: a + bad,
          detail: "(the data read back is not what the replay wrote there)",
        });
      }
      checked += b - a;
    }
    this.#verified += checked;
    this.#unverifiable += data.length - checked;
  }

  // --- libaio -------------------------------------------------------------------------------

  #ring(ctx: number): Ring {
    let r = this.#rings.get(ctx);
    if (!r) {
      const c = this.#plan.contexts[ctx] ?? { depth: 8, slotBytes: 1 << 20 };
      const slotBytes = Math.max(4096, Math.ceil(c.slotBytes / 4096) * 4096);
      const ring = AioRing.open(
        c.depth,
        slotBytes,
        4096,
        (syscall, errno) => this.#fail(syscall, -1, undefined, errno),
      );
      fillRandom(ring.buffers.bytes, 0x5eed ^ ctx);
      const d = c.depth;
      r = {
        ring,
        free: Array.from({ length: d }, (_, k) => d - 1 - k),
        prep: new Float64Array(d),
        submitted: new Float64Array(d),
        file: new Int32Array(d),
        offset: new Float64Array(d),
        length: new Float64Array(d),
        write: new Uint8Array(d),
        inflight: 0,
      };
      this.#rings.set(ctx, r);
    }
    return r;
  }

  /** A free slot of `r`, reaping one completion first when none is (counted as late). */
  #slot(r: Ring): number {
    if (r.free.length === 0) this.#lateReaps += this.#wait(r, 1);
    return r.free.pop()!;
  }

  #submit(ctx: number, rec: Float64Array, from: number, n: number): number {
    const r = this.#ring(ctx);
    const slots: number[] = [];
    let bytes = 0;
    for (let k = 0; k < n; k++) {
      const j = from + k * REC;
      const file = rec[j + 3]!, offset = rec[j + 4]!, length = rec[j + 5]!, d = rec[j + 6]!;
      const op = d & 15, direct = (d & IOCB_DIRECT) !== 0;
      const fd = this.#fd(file, direct);
      if (op === OP.FSYNC || op === OP.FDATASYNC) {
        if ((op === OP.FSYNC ? libc().fsync(fd) : libc().fdatasync(fd)) < 0) {
          this.#fail("fsync", file);
        }
        continue;
      }
      const slot = this.#slot(r);
      const write = op === OP.WRITE;
      if (write && this.#plan.verify) {
        fillPattern(r.ring.buffer(slot).subarray(0, length), file + 1, offset);
      }
      r.ring.prepare(slot, fd, write, offset, length);
      r.file[slot] = file;
      r.offset[slot] = offset;
      r.length[slot] = length;
      r.write[slot] = write ? 1 : 0;
      slots.push(slot);
      bytes += length;
    }
    const t0 = monoNow();
    this.#busy(t0, r.file[slots[0] ?? 0]!, r.offset[slots[0] ?? 0]!);
    for (let done = 0; done < slots.length;) {
      const rc = r.ring.submit(done === 0 ? slots : slots.slice(done));
      if (rc < 0) {
        if (-rc === 11 && r.inflight > 0) this.#lateReaps += this.#wait(r, 1);
        else this.#fail("io_submit", r.file[slots[done]!]!, r.offset[slots[done]!]!, -rc);
        continue;
      }
      done += rc;
    }
    const t1 = monoNow();
    this.#idle();
    for (const s of slots) {
      r.prep[s] = t0;
      r.submitted[s] = t1;
    }
    r.inflight += slots.length;
    return bytes;
  }

  /** Reaps as many completions as the recorded call did (fewer when fewer are in flight). */
  #reap(ctx: number, count: number): number {
    const r = this.#rings.get(ctx);
    if (!r || r.inflight === 0 || count <= 0) return 0;
    return this.#wait(r, Math.min(count, r.inflight), true);
  }

  /** Waits for `n` completions of `r` and records them: their bytes, or their number. */
  #wait(r: Ring, n: number, bytes = false): number {
    let got = 0, moved = 0;
    this.#busy(monoNow(), -1, -1);
    while (got < n) {
      const k = r.ring.reapBetween(n - got, n - got, WAIT);
      if (k < 0) this.#fail("io_getevents", -1, undefined, -k);
      const now = monoNow();
      for (let e = 0; e < k; e++) {
        moved += this.#complete(r, r.ring.eventSlot(e), r.ring.eventResult(e), now);
      }
      got += k;
      if (k === 0 && Atomics.load(this.#ctrl, CTRL.STOP) !== 0) break;
    }
    this.#idle();
    return bytes ? moved : got;
  }

  #complete(r: Ring, slot: number, res: number, now: number): number {
    const file = r.file[slot]!, offset = r.offset[slot]!, length = r.length[slot]!;
    const write = r.write[slot] === 1;
    if (res < 0) this.#fail(write ? "pwrite (aio)" : "pread (aio)", file, offset, -res);
    if (write && res < length) this.#fail("pwrite (aio)", file, offset, EIO);
    this.#record(
      file,
      write,
      res,
      now - r.prep[slot]!,
      now - r.submitted[slot]!,
      r.submitted[slot]! - r.prep[slot]!,
    );
    if (!write && res < length) this.#acc[this.#plan.fileTier[file]!]!.read.short++;
    if (this.#plan.verify) this.#verify(write, file, offset, r.ring.buffer(slot).subarray(0, res));
    r.free.push(slot);
    r.inflight--;
    return res;
  }

  /** At the end: what is still in flight is reaped (late), every ring closed. */
  #drain(): void {
    for (const r of this.#rings.values()) {
      if (r.inflight > 0) this.#lateReaps += this.#wait(r, r.inflight);
    }
  }

  // --- metadata -----------------------------------------------------------------------------

  #meta(code: number, a: number, b: number, c: number, d: number): void {
    const path = this.#plan.files[a]!;
    const soft = (f: () => void) => {
      try {
        f();
      } catch {
        this.#metaFailed++;
      }
    };
    switch (code) {
      case OP.OPEN: {
        const direct = (d & OPEN_DIRECT) !== 0;
        this.#closeFile(a);
        const flags = O.RDWR | ((d & OPEN_CREAT) !== 0 ? O.CREAT : 0) |
          ((d & OPEN_TRUNC) !== 0 ? O.TRUNC : 0);
        const fd = this.#open(a, flags, direct);
        if (fd < 0) return void this.#metaFailed++;
        this.#fds.set(a * 2 + (direct ? 1 : 0), fd);
        if ((d & OPEN_TRUNC) !== 0) this.#coverage.get(a)?.clear();
        return;
      }
      case OP.CLOSE:
        return this.#closeFile(a);
      case OP.FSYNC:
      case OP.FDATASYNC: {
        const fd = this.#fds.get(a * 2) ?? this.#fds.get(a * 2 + 1) ?? this.#fd(a, false);
        if ((code === OP.FSYNC ? libc().fsync(fd) : libc().fdatasync(fd)) < 0) {
          this.#fail("fsync", a);
        }
        return;
      }
      case OP.FTRUNCATE:
        if (libc().ftruncate(this.#fd(a, false), BigInt(b)) < 0) this.#fail("ftruncate", a);
        this.#coverage.get(a)?.clear();
        return;
      case OP.FALLOCATE:
        if (libc().fallocate(this.#fd(a, false), d, BigInt(b), BigInt(c)) < 0) this.#metaFailed++;
        return;
      case OP.UNLINK:
        this.#closeFile(a);
        this.#coverage.get(a)?.clear();
        return soft(() => Deno.removeSync(path));
      case OP.MKDIR:
        return soft(() => Deno.mkdirSync(path, { recursive: true }));
      case OP.RENAME:
        this.#closeFile(a);
        this.#closeFile(b);
        this.#coverage.get(a)?.clear();
        this.#coverage.get(b)?.clear();
        return soft(() => Deno.renameSync(path, this.#plan.files[b]!));
      case OP.SETUP:
        // a thread that sets a context up for others to submit on needs no ring of its own
        if (this.#plan.contexts[a] !== undefined) this.#ring(a);
        return;
      case OP.DESTROY: {
        const r = this.#rings.get(a);
        if (r) {
          if (r.inflight > 0) this.#lateReaps += this.#wait(r, r.inflight);
          r.ring.close();
          this.#rings.delete(a);
        }
        return;
      }
    }
  }

  // --- the end ------------------------------------------------------------------------------

  /** What the thread did so far. */
  report(): ThreadReplayReport {
    const dir = (
      d: DirAcc,
    ): { bytes: number; ops: number; short: number; hist: EncodedDirection } => {
      d.lat.foldInto();
      d.clat.foldInto();
      d.slat.foldInto();
      if (d.h.clat.totalCount === 0 && d.h.slat.totalCount === 0) d.h.clat.add(d.h.lat);
      return { bytes: d.bytes, ops: d.ops, short: d.short, hist: encodeDirection(d.h) };
    };
    const phases: [number, number][] = [];
    for (let p = 0; p < this.#plan.phases; p++) {
      phases.push([this.#phases[2 * p]!, this.#phases[2 * p + 1]!]);
    }
    return {
      thread: this.#plan.thread,
      start: this.#start,
      end: this.#end,
      recordedStart: this.#recStart,
      recordedEnd: this.#recEnd,
      ops: this.#ops,
      tiers: this.#acc.map((a) => ({ read: dir(a.read), write: dir(a.write) })),
      phases,
      spans: this.#spans,
      spansCut: this.#spansCut,
      metaFailed: this.#metaFailed,
      lateReaps: this.#lateReaps,
      directRefused: this.#directRefused,
      verified: this.#verified,
      unverifiable: this.#unverifiable,
    };
  }

  /** Closes the rings (waiting for what is in flight) and descriptors, frees the buffer. */
  close(): void {
    for (const r of this.#rings.values()) r.ring.close();
    this.#rings.clear();
    for (const fd of this.#fds.values()) libc().close(fd);
    this.#fds.clear();
    freeAligned(this.#buf);
  }
}

/**
 * Lays out `bytes` of file `path` before a replay (unmeasured): the
 * pattern of file index `file` under --verify, random bytes otherwise,
 * written 1 MiB at a time.
 */
export async function layOutTraceFile(
  path: string,
  file: number,
  bytes: number,
  verify: boolean,
): Promise<void> {
  using f = await Deno.open(path, { write: true, create: true });
  const chunk = new Uint8Array(1 << 20);
  if (!verify) fillRandom(chunk, 0x1a40 + file);
  for (let at = 0; at < bytes; at += chunk.length) {
    const part = chunk.subarray(0, Math.min(chunk.length, bytes - at));
    if (verify) fillPattern(part, file + 1, at);
    for (let done = 0; done < part.length;) done += await f.write(part.subarray(done));
  }
}
