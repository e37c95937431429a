/**
 * The public contract between the job worker (bench/_job_worker.ts) and an
 * engine: the worker opens an engine for the job's plan, hands its
 * {@linkcode JobEngine.run} a {@linkcode JobRuntime}, and reads a failed
 * system call as a {@linkcode SyscallFailure}. Every engine of this folder
 * (libaio, psync, s3, noop) implements {@linkcode JobEngine} and nothing more.
 *
 * The runtime is the state an engine's I/O loop consults and updates for each
 * I/O: what to do next (offset, direction), whether to go on, and where to
 * record.
 *
 * Runs inside a job Worker. Times are {@linkcode monoNow} (CLOCK_MONOTONIC in
 * milliseconds, nanosecond resolution); engines pass the times they read from
 * it. The measured window is set by
 * each job from its own clock when it passes the start barrier (ramp, then
 * runtime), so no comparison across threads' clocks decides what counts.
 *
 * @module
 */

import {
  CTL,
  JOB,
  jobBase,
  type JobPlan,
  newSharedCounters,
  RETRY_CAUSES,
  type RetryCause,
  RUN,
  type SharedCounters,
} from "../core/job_protocol.ts";
import {
  type OffsetStream,
  RandomOffsets,
  SequentialOffsets,
  XorShift32,
} from "../core/offsets.ts";
import { IntervalLog, type IntervalSnapshots } from "../core/interval_log.ts";
import {
  LatencyBuckets,
  type LatencyCountsOfDirection,
  newLatencyCounts,
} from "../core/latency_buckets.ts";
import { type CpuTimes, cpuTimes, monoNow } from "../core/libc.ts";
import { waitForGate } from "../core/futex.ts";
import { type JobSchedule, Pacer } from "../core/rate.ts";
import { OP, OpStream } from "../core/io_pattern.ts";
import { IoLog } from "./_io_log.ts";

/**
 * The times an engine hands its runtime per I/O, their places in
 * {@linkcode JobRuntime.times}: `ISSUE`, the moment {@linkcode
 * JobRuntime.mayIssue} judges, and `DONE`, when the I/O {@linkcode
 * JobRuntime.complete} records completed, in ms on `monoNow`'s clock; the
 * I/O's latencies in ns, `SLAT` and `TTFB` -1 where it has none.
 *
 * @example
 * ```ts
 * import { TIMES } from "./types.ts";
 * const times = Float64Array.of(0, 0, 0, -1, -1);
 * times[TIMES.DONE] = 1000.5;
 * times[TIMES.LAT] = 12_000;
 * console.assert(times[TIMES.SLAT] === -1);
 * ```
 */
export const TIMES = { ISSUE: 0, DONE: 1, LAT: 2, SLAT: 3, TTFB: 4 } as const;

/** Per-job bookkeeping shared by every engine. */
export class JobRuntime {
  /** The job's plan, as the runner sent it. */
  readonly plan: JobPlan;
  /**
   * Latencies of the measured reads, complete once {@linkcode finish} has
   * run: HDR's counts, for the main thread's HDR histograms (no HDR library
   * in a job Worker: see `LatencyCounts`).
   */
  readonly read: LatencyCountsOfDirection = newLatencyCounts();
  /** Latencies of the measured writes; complete once {@linkcode finish} has run. */
  readonly write: LatencyCountsOfDirection = newLatencyCounts();
  /** The hot path's buckets of lat, slat and clat, folded into the histograms by finish(). */
  readonly #readBuckets = bucketsOf(this.read);
  readonly #writeBuckets = bucketsOf(this.write);
  readonly #offsets: OffsetStream;
  readonly #mix: XorShift32;
  readonly #mixThreshold: number;
  readonly #ctl: Int32Array<SharedArrayBuffer>;
  readonly #f64: Float64Array<SharedArrayBuffer>;
  readonly #base: number;
  #measureStart = 0;
  #measureEnd = Infinity;
  /**
   * Bytes issued in the measured window. It starts as -0, a double, so that V8 compiles its sum
   * as one of doubles: from a small integer it would throw the compiled loop away when the count
   * passes 2^30 (half a second of a 64-job run), and recompile it on threads the jobs starve.
   */
  #issuedMeasured = -0;
  /** plan.bs and plan.ioSize, read per I/O from this object's own fields, not from the plan's. */
  readonly #bs: number;
  readonly #ioSize: number;
  #snapshotTaken = false;
  /** monoNow() of the last measured completion (or of the end-of-job fsync). */
  #lastCompletion = -1;
  /** The open-loop schedule (--rate, --rate-iops); undefined when closed-loop. */
  readonly #pacer: Pacer | undefined;
  /** Latency snapshots per logging interval (plan.logAvgMsec); opened at the start barrier. */
  #intervals: IntervalLog | undefined;
  /** The end of the open logging interval (Infinity without one): one comparison per I/O. */
  #intervalEnd = Infinity;
  /** This thread's CPU time when the measured window began; undefined before. */
  #cpuAtStart: CpuTimes | undefined;
  /** What it spent from then to the job's end; undefined until finish(). */
  #cpuSpent: CpuTimes | undefined;
  /** A job file's I/O pattern (fio's choice of file, offset, size); undefined: --rw and --bs. */
  readonly #ops: OpStream | undefined;
  /** Files of the job and the region's start, for the striped space of a job given by options. */
  readonly #nfiles: number;
  readonly #region: number;
  /** fio's logs of this clone (write_bw_log, write_iops_log, write_lat_log). */
  readonly #log: IoLog | undefined;
  /** Token flow between jobs: [this flow's I/Os, its total weight] shared; this clone's count. */
  readonly #flow: BigInt64Array<SharedArrayBuffer> | undefined;
  #flowOwn = 0;
  /** Think time: I/Os counted towards the next pause. */
  #thinkCount = 0;
  /** Errors counted and gone on after (continue_on_error), per direction. */
  readonly errors = { read: 0, write: 0, first: "", firstErrno: 0 };

  /** The next I/O, set by {@linkcode next}: a read (else a write, or a sync when `op` says so). */
  isRead = true;
  /** {@linkcode OP}: read, write, fsync, fdatasync. */
  op: number = OP.READ;
  /** Its file's index among the job's files. */
  file = 0;
  /** Its offset in that file. */
  offset = 0;
  /** Its length in bytes. */
  length = 0;
  /** Its offset in the job's space (verify's block numbering). */
  jobOffset = 0;
  /**
   * The times of the I/O at hand, placed by {@linkcode TIMES}: the engine
   * writes them here before {@linkcode mayIssue} and {@linkcode complete}
   * instead of passing them. A fraction passed to a method V8 does not
   * inline is boxed, a heap number per value and call: 32 bytes of garbage
   * per I/O on the null tier and 65 with libaio and io_uring, a
   * young-generation GC every 60,000 to 130,000 I/Os.
   */
  readonly times: Float64Array = Float64Array.of(0, 0, 0, -1, -1);

  /** The runtime of job `plan.job`, counting into the run's `shared` counters. */
  constructor(plan: JobPlan, shared: SharedCounters) {
    this.plan = plan;
    this.#bs = plan.bs;
    this.#ioSize = plan.ioSize;
    this.#ops = plan.pattern && new OpStream(plan.pattern);
    this.#nfiles = Math.max(1, plan.target.paths.length);
    this.#region = plan.target.regionOffset;
    this.#log = plan.log && new IoLog(plan.log);
    this.#flow = plan.flow?.shared;
    this.#offsets = plan.rw.startsWith("rand")
      ? new RandomOffsets(plan.size, plan.bs, plan.seed + plan.job * 7919)
      : new SequentialOffsets(plan.size, plan.bs);
    this.#mix = new XorShift32(plan.seed ^ (plan.job + 1) * 0x51ed27);
    // Direction by comparing a uniform 32-bit draw with rwmixread % of 2^32.
    this.#mixThreshold = Math.round((plan.rwmixread / 100) * 2 ** 32);
    this.#ctl = shared.ctl;
    this.#f64 = shared.f64;
    this.#base = jobBase(plan.job);
    this.#pacer = plan.rate && new Pacer(plan.rate, plan.seed ^ (plan.job + 1) * 0x2545f491);
  }

  /**
   * Blocks this Worker until the runner opens the start barrier; false if
   * told to stop. The window is the run's, not counted from this thread's
   * wake: 64 jobs on 2 cores woke over 1.3 s, and windows counted from each
   * wake overlapped so little that the run's IOPS read 2.3 times too high.
   */
  waitForStart(): boolean {
    waitForGate(this.#ctl, CTL.GO);
    const runs = this.#f64[RUN.MEASURE_START]!;
    this.#measureStart = runs > 0 ? runs : monoNow() + this.#f64[RUN.RAMP_MS]!;
    this.#measureEnd = this.#measureStart + this.#f64[RUN.RUNTIME_MS]!;
    if (this.plan.logAvgMsec !== undefined) {
      this.#intervals = new IntervalLog(this.plan.logAvgMsec, this.#measureStart);
      this.#intervalEnd = this.#intervals.end;
    }
    this.#log?.start(this.#measureStart);
    if (this.#pacer) {
      this.#pacer.start(
        this.#measureStart - this.#f64[RUN.RAMP_MS]!,
        this.#measureStart,
        this.#measureEnd,
      );
      this.#f64[this.#base + JOB.NEXT_DUE] = this.#pacer.due;
    }
    return Atomics.load(this.#ctl, CTL.STOP) === 0;
  }

  /** The offset of the next I/O in the job's space (engines without files; see {@linkcode next}). */
  nextOffset(): number {
    return this.#offsets.next();
  }

  /**
   * Chooses the I/O {@linkcode mayIssue} let through: sets `isRead`, `op`,
   * `file`, `offset`, `length` and `jobOffset`. A job file's pattern picks
   * them as fio does; a job given by options reads by rwmixread and stripes
   * its space over its files block by block.
   */
  next(): void {
    const ops = this.#ops;
    if (ops) {
      this.op = ops.op;
      this.isRead = ops.op === OP.READ;
      this.file = ops.file;
      this.offset = ops.offset;
      this.length = ops.length;
      this.jobOffset = ops.offset;
      return;
    }
    const read = this.nextIsRead();
    const off = this.#offsets.next();
    const bs = this.#bs;
    const n = this.#nfiles;
    this.isRead = read;
    this.op = read ? OP.READ : OP.WRITE;
    this.jobOffset = off;
    this.length = bs;
    this.file = n === 1 ? 0 : (off / bs) % n;
    this.offset = (n === 1 ? off : Math.floor(off / bs / n) * bs) + this.#region;
  }

  /** Whether the next I/O reads (by rwmixread). */
  nextIsRead(): boolean {
    return this.#mixThreshold >= 2 ** 32 ||
      (this.#mixThreshold > 0 && this.#mix.next() < this.#mixThreshold);
  }

  /**
   * Whether an I/O may start at `now`, {@linkcode times}' `ISSUE`: not
   * stopped, not past the end of a time-based run, and short of io_size for
   * a size-based one. Counts it.
   *
   * Under a rate (--rate, --rate-iops) it first waits for the request's
   * intended start (core/rate.ts), and refuses a request intended at or
   * after the end of a time-based run.
   */
  mayIssue(): boolean {
    const now = this.times[TIMES.ISSUE]!;
    if (Atomics.load(this.#ctl, CTL.STOP) !== 0 || now >= this.#measureEnd) {
      this.#stopPacing(now);
      return false;
    }
    if (this.#cpuAtStart === undefined && now >= this.#measureStart) {
      this.#cpuAtStart = cpuTimes();
    }
    if (this.#ops) {
      if (!this.#ops.next()) {
        this.#stopPacing(now);
        return false;
      }
      if (this.plan.thinktime && !this.#think()) return false;
      if (this.#flow && !this.#flowTurn()) return false;
    }
    if (this.#pacer) return this.#paced(now);
    if (now < this.#measureStart) return true; // ramp: does not count toward io_size
    if (this.#ioSize > 0 && this.#issuedMeasured >= this.#ioSize) return false;
    this.#issuedMeasured += this.#bs;
    return true;
  }

  /**
   * Under a rate: how long (ms) until the next request's intended start, so
   * that an engine with requests in flight reaps completions while it waits
   * (its wait for completions times out then) instead of blocking in
   * {@linkcode mayIssue}. 0 when the request may go now, when the job is
   * about to stop (told to, past its end, io_size reached: `mayIssue` then
   * refuses at once), and always for a closed-loop job.
   */
  untilDue(now: number): number {
    const p = this.#pacer;
    if (p === undefined || Atomics.load(this.#ctl, CTL.STOP) !== 0) return 0;
    const due = p.due;
    if (due >= this.#measureEnd || now >= this.#measureEnd) return 0;
    const full = this.#ioSize > 0 && this.#issuedMeasured >= this.#ioSize;
    if (full && Math.max(due, now) >= this.#measureStart) return 0;
    return Math.max(0, due - now);
  }

  /** Whether the job runs on an open-loop schedule (--rate, --rate-iops). */
  get paced(): boolean {
    return this.#pacer !== undefined;
  }

  #paced(prep: number): boolean {
    const p = this.#pacer!;
    const due = p.due;
    const full = this.#ioSize > 0 && this.#issuedMeasured >= this.#ioSize;
    if (due >= this.#measureEnd || (full && Math.max(due, prep) >= this.#measureStart)) {
      this.#stopPacing(prep);
      return false;
    }
    const ctl = this.#ctl;
    const at = p.waitForDue((ms) => Atomics.wait(ctl, CTL.STOP, 0, ms) !== "timed-out");
    if (at < 0) {
      this.#stopPacing(monoNow());
      return false;
    }
    p.issue(prep, at);
    this.#f64[this.#base + JOB.NEXT_DUE] = p.due;
    if (at >= this.#measureStart) this.#issuedMeasured += this.#bs;
    return true;
  }

  /**
   * fio's think time: after every `blocks` I/Os, a pause (its spin part
   * busy). False when told to stop meanwhile.
   */
  #think(): boolean {
    const t = this.plan.thinktime!;
    if (this.#thinkCount === 0 || this.#thinkCount % t.blocks !== 0) {
      this.#thinkCount++;
      return true;
    }
    this.#thinkCount++;
    const start = 0;
    const sleepMs = (t.us - t.spinUs) / 1000;
    if (sleepMs > 0 && Atomics.wait(this.#ctl, CTL.STOP, 0, sleepMs) !== "timed-out") return false;
    const spinEnd = monoNow() + t.spinUs / 1000;
    while (monoNow() < spinEnd) { /* spin, as fio's thinktime_spin */ }
    void start;
    return Atomics.load(this.#ctl, CTL.STOP) === 0;
  }

  /**
   * fio's flow: while this clone's share of its flow's I/Os is above its
   * weight's share, it waits (flow_sleep, or spinning); then counts its I/O.
   */
  #flowTurn(): boolean {
    const f = this.plan.flow!;
    const shared = this.#flow!;
    for (;;) {
      if (Atomics.load(this.#ctl, CTL.STOP) !== 0 || monoNow() >= this.#measureEnd) return false;
      const total = Number(Atomics.load(shared, 0));
      const weights = Number(Atomics.load(shared, 1));
      if (total === 0 || this.#flowOwn / total <= f.weight / weights) break;
      // flow_sleep, or (as fio) spin
      if (f.sleepUs > 0) Atomics.wait(this.#ctl, CTL.STOP, 0, f.sleepUs / 1000);
    }
    Atomics.add(shared, 0, 1n);
    this.#flowOwn++;
    return true;
  }

  /**
   * Whether a failed I/O is one the job goes on after (continue_on_error,
   * ignore_error): then it is counted and the engine goes on.
   */
  tolerates(isRead: boolean, errno: number, what: string): boolean {
    const e = this.plan.errors;
    if (!e) return false;
    const list = isRead ? e.ignoreRead : e.ignoreWrite;
    const ok = isRead ? e.read : e.write;
    if (!ok || !list.includes(errno)) return false;
    if (isRead) this.errors.read++;
    else this.errors.write++;
    if (!this.errors.first) {
      this.errors.first = what;
      this.errors.firstErrno = errno;
    }
    this.#f64[this.#base + JOB.ERRORS]! += 1;
    return true;
  }

  /** Records a completed fsync or fdatasync of the pattern (fio's sync; not a read or write). */
  completeSync(now: number): void {
    this.#lastCompletion = now;
  }

  /** Under a rate: the job issues no more; the sampler's lag stops growing there. */
  #stopPacing(now: number): void {
    if (this.#pacer === undefined) return;
    this.#f64[this.#base + JOB.ISSUE_END] = this.#pacer.stop(now);
  }

  /** Whether the runner has told jobs to stop (end, error elsewhere, or a signal). */
  get stopped(): boolean {
    return Atomics.load(this.#ctl, CTL.STOP) !== 0;
  }

  /**
   * Records one completed I/O of `bytes` at `offset`, its times read from
   * {@linkcode times}: `DONE` when it completed, its latencies in ns; `SLAT`
   * < 0 when the engine has no separate submission step (then clat = lat, as
   * fio reports for synchronous engines, copied once in finish() instead of
   * per I/O); `TTFB` ≥ 0 only for requests with a first byte (S3 GETs). I/Os
   * that complete in the ramp, or after the end of a time-based run, are not
   * recorded. Under a rate, lat runs from the request's intended start
   * instead (the engine's `LAT` and `SLAT` are from the `ISSUE` it gave
   * {@linkcode mayIssue}, which may precede the wait).
   */
  complete(isRead: boolean, bytes: number = this.#bs, offset = -1): void {
    const d = this.times;
    const now = d[TIMES.DONE]!;
    let latNs = d[TIMES.LAT]!;
    const slatNs = d[TIMES.SLAT]!;
    const ttfbNs = d[TIMES.TTFB]!;
    // Under a rate: lat from the intended start; slat and clat from the real issue.
    const paced = this.#pacer?.settle(now, latNs);
    if (now < this.#measureStart || now > this.#measureEnd) return;
    if (now >= this.#intervalEnd) this.#closeIntervals(now);
    const h = isRead ? this.#readBuckets : this.#writeBuckets;
    const f = this.#f64;
    const b = this.#base;
    if (paced !== undefined) {
      const clatNs = slatNs >= 0 ? latNs - slatNs : (now - paced.issuedAt) * 1e6;
      if (slatNs >= 0) h.slat.record(ns(slatNs - (paced.issuedAt - paced.prep) * 1e6));
      h.clat.record(ns(clatNs));
      latNs = (now - paced.intended) * 1e6;
      f[b + (isRead ? JOB.READ_LAT_SUM : JOB.WRITE_LAT_SUM)]! += latNs;
      h.lat.record(ns(latNs));
    } else {
      const lat = ns(latNs);
      h.lat.record(lat);
      if (slatNs >= 0) {
        const slat = ns(slatNs);
        h.slat.record(slat);
        h.clat.record(lat > slat ? lat - slat : 1);
      }
    }
    if (ttfbNs >= 0) (isRead ? this.read : this.write).ttfb.recordValue(ns(ttfbNs));
    if (isRead) {
      f[b + JOB.READ_BYTES]! += bytes;
      f[b + JOB.READ_OPS]! += 1;
    } else {
      f[b + JOB.WRITE_BYTES]! += bytes;
      f[b + JOB.WRITE_OPS]! += 1;
    }
    this.#log?.add(now, isRead, latNs, slatNs, bytes, offset);
    this.#lastCompletion = now;
    if (!this.#snapshotTaken && Atomics.load(this.#ctl, CTL.FIRST_DONE) !== 0) {
      this.#takeFirstDoneSnapshot();
    }
  }

  /**
   * Records how long the end-of-job fsync took, in ms. As fio's end_fsync, it
   * moves the job's end, so a size-based run's bandwidth includes the flush.
   */
  recordFsync(ms: number): void {
    this.#f64[this.#base + JOB.FSYNC_MS] = ms;
    if (ms > 0) this.#lastCompletion = monoNow();
  }

  /**
   * Says the job is about to block on a request that began at `since`
   * (monoNow): a read or write at `offset` of file `file` (-1 when it is not
   * one I/O, e.g. the end-of-job fsync). The runner's watchdog reads it.
   */
  busy(since: number, isRead: boolean, file: number, offset: number): void {
    const f = this.#f64;
    const b = this.#base;
    // Under a rate the engine's prep time may precede the wait for the intended start.
    if (this.#pacer !== undefined) since = this.#pacer.issuedAtOf(since);
    f[b + JOB.BUSY_OFFSET] = offset;
    f[b + JOB.BUSY_FILE] = file;
    f[b + JOB.BUSY_READ] = isRead ? 1 : 0;
    f[b + JOB.BUSY_SINCE] = since;
  }

  /** Says the job is no longer blocked on a request. */
  idle(): void {
    this.#f64[this.#base + JOB.BUSY_SINCE] = 0;
  }

  /** Counts a request retried after a transient error, and why. */
  countRetry(cause: RetryCause): void {
    this.#f64[this.#base + JOB.RETRIES]! += 1;
    this.#f64[this.#base + JOB.RETRY_CAUSES_AT + RETRY_CAUSES.indexOf(cause)]! += 1;
  }

  /** At an interval boundary only: snapshots the intervals that ended by `now`. */
  #closeIntervals(now: number): void {
    // The interval's samples are what the hot path counted of total latency since the last
    // fold, sparse (clat and slat wait for finish()).
    const log = this.#intervals!;
    this.#readBuckets.lat.foldInto(log.read);
    this.#writeBuckets.lat.foldInto(log.write);
    log.close(now);
    this.#intervalEnd = log.end;
  }

  /**
   * The total-latency snapshots at each logging interval's end (the last one
   * at the job's end when it ended inside an interval); undefined when the
   * plan logs no intervals or the job never started.
   */
  intervals(): IntervalSnapshots | undefined {
    return this.#intervals?.snapshots();
  }

  /** How far the job kept to its rate; undefined when it had none. */
  schedule(): JobSchedule | undefined {
    return this.#pacer?.summary(monoNow());
  }

  /** Writes this clone's fio logs (write_bw_log and the like), if it keeps any. */
  writeLogs(): void {
    this.#log?.finish(Math.min(monoNow(), this.#measureEnd));
  }

  /**
   * The CPU time this job's thread spent from the first I/O of its measured
   * window to its end (getrusage RUSAGE_THREAD, as fio counts a job's
   * usr_cpu and sys_cpu: from the end of the ramp); undefined until
   * {@linkcode finish}, or when no I/O began in the window.
   */
  cpu(): CpuTimes | undefined {
    return this.#cpuSpent;
  }

  /** Marks this job finished; the first job to finish fixes the first-done moment. */
  finish(): void {
    if (this.#flow && this.#flowOwn >= 0) {
      // fio's flow_put: this clone's I/Os and weight leave the flow (no one waits on it)
      Atomics.sub(this.#flow, 0, BigInt(this.#flowOwn));
      Atomics.sub(this.#flow, 1, BigInt(this.plan.flow!.weight));
      this.#flowOwn = -1;
    }
    const start = this.#cpuAtStart;
    if (start !== undefined && this.#cpuSpent === undefined) {
      const end = cpuTimes();
      this.#cpuSpent = { usr_ns: end.usr_ns - start.usr_ns, sys_ns: end.sys_ns - start.sys_ns };
    }
    this.#stopPacing(monoNow());
    this.#foldBuckets();
    if (this.#intervals && this.#intervalEnd !== Infinity) {
      // the intervals that ended within the measured window, then the one it ended in
      this.#intervals.close(Math.min(monoNow(), this.#measureEnd));
      this.#intervals.finish();
      this.#intervalEnd = Infinity;
    }
    if (this.#lastCompletion >= 0) this.#f64[this.#base + JOB.END] = this.#lastCompletion;
    // Synchronous engines record one latency: their completion time is the total.
    for (const h of [this.read, this.write]) {
      if (h.clat.totalCount === 0 && h.slat.totalCount === 0) h.clat.add(h.lat);
    }
    Atomics.compareExchange(this.#ctl, CTL.FIRST_DONE, 0, this.plan.job + 1);
    if (!this.#snapshotTaken) this.#takeFirstDoneSnapshot();
  }

  /** Adds what the hot path counted since the last fold to the histograms. */
  #foldBuckets(): void {
    // total latency's samples go to the open logging interval too, when there is one
    const log = this.#intervalEnd === Infinity ? undefined : this.#intervals;
    for (
      const [b, sink] of [[this.#readBuckets, log?.read], [this.#writeBuckets, log?.write]] as const
    ) {
      b.lat.foldInto(sink);
      b.clat.foldInto();
      b.slat.foldInto();
    }
  }

  /**
   * Throws the runtime's unfolded latencies away, giving their buckets'
   * memory to this thread's next runtime: for a warm-up's throwaway runtimes.
   */
  discard(): void {
    for (const b of [this.#readBuckets, this.#writeBuckets]) {
      b.lat.discard();
      b.clat.discard();
      b.slat.discard();
    }
  }

  #takeFirstDoneSnapshot(): void {
    const f = this.#f64;
    const b = this.#base;
    f[b + JOB.FD_READ_BYTES] = f[b + JOB.READ_BYTES]!;
    f[b + JOB.FD_WRITE_BYTES] = f[b + JOB.WRITE_BYTES]!;
    f[b + JOB.FD_READ_OPS] = f[b + JOB.READ_OPS]!;
    f[b + JOB.FD_WRITE_OPS] = f[b + JOB.WRITE_OPS]!;
    f[b + JOB.FD_TAKEN] = 1;
    this.#snapshotTaken = true;
  }
}

/**
 * How many throwaway I/Os {@linkcode warmUp} makes: enough for V8 to compile
 * the runtime's per-I/O methods optimised (about 10 ms unoptimised).
 */
const WARM_UP_IOS = 30_000;
/** The throwaway runtimes' ramp, ms: a few thousand of their I/Os. */
const WARM_UP_RAMP_MS = 1;
/** Calls that give a function V8's feedback (its `--invocation-count-for-feedback-allocation`), and some. */
const WARM_UP_FEEDBACK_CALLS = 16;
/**
 * Calls of an engine's loop in {@linkcode warmUp}, the I/Os shared among
 * them. V8 marks a function for TurboFan while it runs and compiles it at
 * its next call. With ten, the null engine's loop was marked too late in
 * 18 of 22 starts and stayed Maglev's code: the window's call entered that,
 * and a running Maglev frame is never moved up, so the whole window ran at
 * twice the CPU per I/O (190 → 380 ns). With twenty it was TurboFan's in
 * 22 of 22 (docs/validation.md, "The null engine's loop left in Maglev's
 * code by the warm-up").
 */
export const WARM_UP_CALLS = 20;
/**
 * The clock of {@linkcode warmUp}'s own loop, ms per I/O: its ramp is a
 * thousand I/Os, and one interval of {@linkcode WARM_UP_LOG_MS} five hundred.
 */
const WARM_UP_STEP_MS = 0.001;
/**
 * The logging interval of warmUp's loop, ms, when the job logs intervals:
 * dozens of snapshots, so that the snapshot code is compiled before the
 * barrier and `complete` knows the branch that takes one (the job's first
 * snapshot cost 10 ms, and threw `complete`'s optimised code away).
 */
const WARM_UP_LOG_MS = 0.5;

/** The engine classes whose loop this thread has warmed. */
const loopsWarmed = new Set<unknown>();

/**
 * Calls each function that a job's loop calls once a window often enough
 * for V8 to compile it with what it does: {@linkcode cpuTimes}, as the
 * window starts. V8 keeps feedback for a function only from its eighth
 * call; the loop's TurboFan code, with cpuTimes inlined and no feedback for
 * it, was thrown away at cpuTimes's first run (`--trace-deopt`: "Insufficient
 * type feedback for construct"), and a loop entered again in Maglev's code
 * stays there for the whole call: V8 does not move a running Maglev frame up
 * to TurboFan. On the null tier, 64 jobs on 2 cores, 29 jobs ran their
 * window in Maglev's code and the jobs' CPU per I/O was 1.3× one job's; with
 * cpuTimes warmed, 2 jobs, and 1.05×.
 */
function warmOnceAWindow(): void {
  for (let i = 0; i < WARM_UP_FEEDBACK_CALLS; i++) cpuTimes();
}

/**
 * Runs the per-I/O methods of a throwaway runtime of `plan` (its own
 * counters, nothing recorded anywhere) until V8 compiles them optimised,
 * before the job waits at the start barrier.
 *
 * Each job Worker is an isolate of its own that compiles its own code, on
 * V8's few background threads. With many CPU-bound jobs on few cores those
 * threads got so little time that most jobs ran their whole measured window
 * unoptimised (64 null jobs on 2 cores: `complete` reached TurboFan in 5 of
 * 64 jobs within a 6 s run, 60 of 64 after this warm-up), which tripled the
 * CPU per I/O. Here the compile requests go out while the other jobs are
 * still starting or wait at the barrier; tierbench's tasks also have V8
 * compile on the thread that runs the code (`--no-concurrent-recompilation`
 * in deno.json), so that a job's loop is optimised here, not queued behind
 * 63 others' on threads the running jobs then starve.
 */
export function warmUp(plan: JobPlan, engine: JobEngine, ios = WARM_UP_IOS): void {
  warmOnceAWindow();
  const log = plan.logAvgMsec === undefined ? undefined : WARM_UP_LOG_MS;
  const shared = newSharedCounters(plan.job + 1);
  // It ends on its runtime, as a time-based job does (the branch is then compiled too).
  const runtimeMs = Math.max(0, ios * WARM_UP_STEP_MS - 2 * WARM_UP_RAMP_MS);
  const rt = throwawayRuntime(plan, 0, log, shared, runtimeMs);
  // A clock of its own, so that the ramp and the snapshots come after as many I/Os however
  // fast they go (on the real clock a slow snapshot was followed by another at once).
  let t0 = monoNow();
  for (let i = 0; i < ios; i++) {
    // Half way, as if another job had finished: `complete` then takes its first-done snapshot,
    // which in a real run comes when the first job ends, while the others still measure.
    if (i === ios >> 1) shared.ctl[CTL.FIRST_DONE] = 1;
    rt.times[TIMES.ISSUE] = t0;
    if (!rt.mayIssue()) break;
    rt.next();
    const read = rt.isRead;
    rt.busy(t0, read, rt.file, rt.offset);
    const t1 = t0 + WARM_UP_STEP_MS;
    rt.idle();
    // Both kinds of completion: with a submission step (async engines) and without.
    // Latencies from 1 µs to 4 ms, as doubles: an interval's fold then records as many
    // buckets as a real one, and its code is compiled here, not at the first real boundary.
    const times = rt.times;
    times[TIMES.DONE] = t1;
    times[TIMES.LAT] = (t1 - t0) * 1e6 * (1 + ((i * 7919) % 4093));
    times[TIMES.SLAT] = i & 1 ? -1 : 1000;
    rt.complete(read, rt.length, rt.offset);
    t0 = t1;
  }
  rt.discard();
  // An engine whose loop does no I/O runs it too, for as many, over several calls: a
  // loop entered once is compiled only for that entry (on-stack replacement). Once per
  // engine in a Worker: its compiled loop stays for the Worker's next jobs.
  if (engine.warm === undefined || loopsWarmed.has(engine.constructor)) return;
  loopsWarmed.add(engine.constructor);
  for (let i = 0; i < WARM_UP_CALLS; i++) {
    const throwaway = throwawayRuntime(plan, Math.ceil(ios / WARM_UP_CALLS) * plan.bs);
    engine.warm(throwaway);
    throwaway.discard();
  }
}

/**
 * A runtime of `plan`, closed-loop, started, counting into counters of its
 * own, its first {@linkcode WARM_UP_RAMP_MS} a ramp: the code compiled
 * knows both sides of the ramp's branches, so the real ramp does not throw
 * it away again. It logs intervals of `logMs` when given, and ends after
 * `runtimeMs` of measured time.
 */
function throwawayRuntime(
  plan: JobPlan,
  ioSize: number,
  logMs?: number,
  shared = newSharedCounters(plan.job + 1),
  runtimeMs = Infinity,
): JobRuntime {
  shared.ctl[CTL.GO] = 1;
  shared.f64[RUN.RAMP_MS] = WARM_UP_RAMP_MS;
  shared.f64[RUN.RUNTIME_MS] = runtimeMs;
  // Nothing shared with the real run, and no pause: no flow, think time or fio logs.
  const {
    rate: _rate,
    logAvgMsec: _log,
    flow: _flow,
    thinktime: _think,
    log: _fioLog,
    ...closedLoop
  } = plan;
  const log = logMs === undefined ? {} : { logAvgMsec: logMs };
  const rt = new JobRuntime({ ...closedLoop, ...log, ioSize }, shared);
  rt.waitForStart();
  return rt;
}

/** The hot path's buckets of one direction's lat, clat and slat. */
interface DirectionBuckets {
  readonly lat: LatencyBuckets;
  readonly clat: LatencyBuckets;
  readonly slat: LatencyBuckets;
}

function bucketsOf(h: LatencyCountsOfDirection): DirectionBuckets {
  return {
    lat: new LatencyBuckets(h.lat),
    clat: new LatencyBuckets(h.clat),
    slat: new LatencyBuckets(h.slat),
  };
}

/** A latency in whole ns for a histogram (at least 1). */
function ns(x: number): number {
  return x < 1 ? 1 : Math.round(x);
}

/** A failed system call inside an engine, with its own errno. */
export class SyscallFailure extends Error {
  /** Always `"SyscallFailure"`. */
  override name = "SyscallFailure";
  /** The call, e.g. `io_submit` or `pread (libaio)`. */
  readonly syscall: string;
  /** Its errno; 0 for a short transfer. */
  readonly errno: number;
  /** The file it was on. */
  readonly path: string;
  /** The offset in that file, where one I/O failed. */
  readonly offset: number | undefined;
  /** What to add to the message, e.g. `(depth 8)`. */
  readonly detail: string | undefined;

  /** A failure of `syscall` with `errno` on `path` (at `offset`). */
  constructor(
    syscall: string,
    errno: number,
    path: string,
    offset?: number,
    detail?: string,
  ) {
    super(`${syscall} ${path} failed: errno ${errno}`);
    this.syscall = syscall;
    this.errno = errno;
    this.path = path;
    this.offset = offset;
    this.detail = detail;
  }
}

/**
 * The I/O loop of one engine. File engines run synchronously (the Worker is
 * theirs); network engines return a promise and keep `iodepth` requests in
 * flight on the Worker's event loop.
 */
export interface JobEngine {
  /** Runs I/O until the runtime says stop. */
  run(rt: JobRuntime): void | Promise<void>;
  /**
   * Runs the engine's loop on `rt`, a throwaway runtime that stops after
   * some thousands of I/Os, before the job waits at the start barrier (see
   * {@linkcode warmUp}): engines whose loop does no I/O run it as it is, the
   * kernel-queue engines with requests of zero bytes; engines without it
   * are not warmed.
   */
  warm?(rt: JobRuntime): void;
  /** Releases the file, buffers, kernel context or connections. */
  close(): void | Promise<void>;
  /**
   * --verify, after the measured I/O: reads back and checks what the job
   * wrote, where the engine does it itself (s3; files: engines/verify_readback.ts).
   */
  readBack?(stopped: () => boolean): void | Promise<void>;
}
