/**
 * The runner: one job description on one tier, `numjobs` Workers, a start
 * barrier, a ramp excluded from the figures, a time- or size-bounded
 * measurement, then histograms merged and read.
 *
 * The main thread never touches an I/O. It samples the shared counters for
 * the progress line and the bandwidth time series, relays Ctrl-C to the jobs
 * through the shared stop flag, and builds the {@linkcode RunResult}.
 *
 * @module
 */

import process from "node:process";
import type { WorkerPool } from "./_worker_pool.ts";
import type { JobTarget, Tier } from "../tiers/types.ts";
import { BUFFER_ALIGNMENT } from "../tiers/file_backed.ts";
import { libaioSource } from "../engines/libaio.ts";
import { ioUringFeatures, ioUringImpl, ioUringRefusal } from "../engines/io_uring.ts";
import { DEFAULT_TIMEOUT_MS, formatTierSpec, type JobOptions } from "../core/config.ts";
import { monoNow } from "../core/libc.ts";
import { cloneCpus, formatCpuList } from "../core/cpu_affinity.ts";
import { openGate } from "../core/futex.ts";
import { ConfigError, errorLine, IoError } from "../core/errors.ts";
import { redactSecrets } from "../core/secrets.ts";
import { verifyPlans } from "../core/verify.ts";
import { intervalLatency } from "../core/interval_latency.ts";
import { type JobSchedule, RATE_TOLERANCE_MS, rateIntervalMs, scheduleMet } from "../core/rate.ts";
import { holdReadBack, newReadBackGate } from "../engines/verify_readback.ts";
import {
  CTL,
  type IoLogPlan,
  JOB,
  jobBase,
  type JobFailure,
  type JobMessage,
  type JobPlan,
  type JobStart,
  newSharedCounters,
  RETRY_CAUSES,
  type RetryCause,
  RUN,
  type SharedCounters,
} from "../core/job_protocol.ts";
import type { FioJobExtras } from "../core/fio_job.ts";
import {
  encodeLatency,
  histogramsOfCounts,
  type LatencyHistograms,
  latencyStats,
  mergeLatency,
  newLatencyHistograms,
} from "../core/recorder.ts";
import { encodeDirection, newLatencyCounts } from "../core/latency_buckets.ts";
import type {
  DirectionResult,
  RunOptions,
  RunResult,
  ScheduleResult,
  SpanFigures,
  TimeSeries,
} from "../schema/result.ts";

/** What the progress callback sees, about every 100 ms. */
export interface RunProgress {
  readonly name: string;
  readonly phase: "layout" | "ramp" | "measure";
  /** ms since measurement began (negative during the ramp). */
  readonly elapsedMs: number;
  /** Measured time planned, for time-based runs. */
  readonly totalMs: number | undefined;
  /** 0..1 of the run (time or bytes), when known. */
  readonly fraction: number;
  readonly readBytes: number;
  readonly writeBytes: number;
  /** Bandwidth and IOPS over the last interval, both directions together. */
  readonly bwBytes: number;
  readonly iops: number;
  /** The tier this is about, where one line shows several at once (a contention group). */
  readonly tier?: string;
}

/** Options of {@linkcode runJob} besides the job itself. */
export interface RunHooks {
  /** Aborting stops the jobs; the run resolves with status "interrupted". */
  readonly signal?: AbortSignal;
  readonly onProgress?: (p: RunProgress) => void;
  /** How long to wait for jobs to stop before terminating their Workers. */
  readonly stopGraceMs?: number;
  /**
   * Called once every job has laid out its files, before the clock starts
   * (tests use it to corrupt what a --verify layout wrote).
   */
  readonly afterLayout?: (files: readonly JobTarget[]) => void | Promise<void>;
  /**
   * Under --verify, called once every job has done its writes, before they
   * are read back and checked (tests use it to corrupt a written file).
   */
  readonly beforeReadBack?: (files: readonly JobTarget[]) => void | Promise<void>;
  /**
   * Called once every job has laid out its files, right before the clock
   * starts: a run across processes waits here at a barrier so every
   * process's ramp starts together. A throw fails the run with its message.
   */
  readonly beforeStart?: () => Promise<void>;
  /** Told when measurement begins (absolute ms, `performance.timeOrigin + now()`). */
  readonly onMeasureStart?: (startAbsMs: number) => void;
  /**
   * Aborting stops the jobs as a normal end, not an interruption: the run
   * is "ok" with what it moved until then (stonewalling across processes).
   */
  readonly stonewall?: AbortSignal;
  /** A job file's flows: per flow_id, the shared [I/Os, total weight] of its jobs. */
  readonly flows?: ReadonlyMap<number, BigInt64Array<SharedArrayBuffer>>;
  /** Called once the files are ready, before the clock starts: a job file's startdelay waits here. */
  readonly beforeClock?: (signal: AbortSignal) => Promise<void>;
  /**
   * Job Workers to take instead of starting new ones, and to give back
   * after a clean end (a session's, bench/_worker_pool.ts); absent, each
   * job starts its own Worker and it is terminated after.
   */
  readonly workers?: WorkerPool | undefined;
}

/** The job Workers' module. */
export const WORKER_URL: URL = new URL("./_job_worker.ts", import.meta.url);
const SAMPLE_MS = 100;

function options(job: JobOptions): RunOptions {
  return {
    tier: formatTierSpec(job.tier),
    rw: job.rw,
    rwmixread: job.rwmixread,
    bs: job.bs,
    size: job.size,
    io_size: job.ioSize,
    time_based: job.runtimeMs !== undefined,
    runtime_ms: job.runtimeMs ?? null,
    ramp_ms: job.rampMs,
    iodepth: job.iodepth,
    numjobs: job.numjobs,
    direct: job.direct,
    engine: engineOf(job),
    engine_impl: engineImpl(job),
    ...(job.engineChoice
      ? { engine_choice: { chosen: job.engineChoice.chosen, why: job.engineChoice.why } }
      : {}),
    seed: job.seed,
    log_avg_msec: job.logAvgMsec,
    nrfiles: job.nrfiles,
    file_layout: job.fileLayout,
    end_fsync: job.endFsync,
    timeout_ms: job.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    ...(engineOf(job) === "io_uring" && job.ioUring
      ? {
        io_uring: {
          fixedbufs: job.ioUring.fixedbufs,
          registerfiles: job.ioUring.registerfiles,
          sqthread_poll: job.ioUring.sqthreadPoll,
          features: ioUringFeatures(),
        },
      }
      : {}),
    ...(job.verify ? { verify: true } : {}),
    ...(job.filename === undefined ? {} : { filename: job.filename }),
    ...(job.s3
      ? {
        s3: {
          object_size: job.s3.objectSize,
          part_size: job.s3.partSize,
          multipart_threshold: job.s3.multipartThreshold,
        },
      }
      : {}),
    ...(job.rate
      ? {
        rate: {
          bytes_per_s: job.rate.bytesPerS ?? null,
          iops: job.rate.iops ?? null,
          process: job.rate.process,
        },
      }
      : {}),
    ...(job.affinity
      ? { cpus_allowed: { cpus: formatCpuList(job.affinity.cpus), policy: job.affinity.policy } }
      : {}),
    ...(job.fio ? { fio: { ...job.fio.options } } : {}),
  };
}

function describeFailure(f: JobFailure): string {
  if (f.kind === "other") return redactSecrets(`${f.name}: ${f.message}`);
  if (f.kind === "s3" || f.kind === "verify") return f.message;
  return new IoError({
    syscall: f.syscall,
    errno: f.errno,
    code: f.code,
    path: f.path,
    offset: f.offset,
    detail: f.detail,
  }).message;
}

/** The engine that drives a job: the tier decides for null and s3. */
function engineOf(job: JobOptions): JobPlan["engine"] {
  if (job.tier.kind === "null") return "noop";
  if (job.tier.kind === "s3") return "s3";
  return job.engine;
}

/** Where an engine's calls come from, for the results. */
function engineImpl(job: JobOptions): string {
  switch (engineOf(job)) {
    case "noop":
      return "none";
    case "s3":
      return "@aws-sdk/client-s3";
    case "libaio":
      return libaioSource();
    case "io_uring":
      return ioUringImpl();
    case "psync":
      return "libc.so.6 pread/pwrite";
  }
}

/** Absolute time in ms, comparable across Workers. */
function nowAbs(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * Runs one job on a tier that has been set up, and returns its result. A
 * failure inside a job, or an abort, still resolves: the result's `status`
 * and `error` say what happened and the figures cover what was measured.
 *
 * @example
 * ```ts
 * import { parseJobOptions } from "../core/config.ts";
 * import { runJob } from "./runner.ts";
 * import { openTier } from "../tiers/mod.ts";
 * const job = parseJobOptions({ tier: "null:", size: "4m", ioSize: "4m" });
 * await using tier = openTier(job.tier);
 * await tier.setup();
 * const r = await runJob(tier, job);
 * console.assert(r.status === "ok" && r.read.io_bytes === 4 * 1024 * 1024);
 * ```
 */
export async function runJob(
  tier: Tier,
  job: JobOptions,
  hooks: RunHooks = {},
): Promise<RunResult> {
  if (engineOf(job) === "io_uring") {
    const refused = ioUringRefusal();
    if (refused !== undefined) throw new ConfigError("engine", refused);
  }
  // --verify may lay out again a file an earlier run laid out without headers.
  const { targets, plans } = verifyPlans(tier, await tier.prepare(job), job);
  const run = new JobRun(tier, job, hooks, targets);
  run.spawn(plans);
  try {
    await run.layout();
    await run.measure();
  } finally {
    await run.drain();
  }
  return run.collect();
}

type JobResultMessage = Extract<JobMessage, { type: "result" }>;
type VerifyPlans = ReturnType<typeof verifyPlans>["plans"];

/**
 * One {@linkcode runJob} call, in its phases: spawn the job Workers, wait
 * for their layout, measure (ramp, clock, go, wait for every result), drain
 * (stop what is left, hand back or end the Workers, release the files) and
 * collect the result.
 */
class JobRun {
  readonly shared: SharedCounters;
  readonly #workers: Worker[] = [];
  readonly #ready = new Set<number>();
  readonly #results = new Map<number, JobResultMessage>();
  readonly #failures: string[] = [];
  readonly #sampler: Sampler;
  readonly #timeoutMs: number;
  #interrupted = false;
  #cutShort = false;
  #hung = false;
  #wake: () => void = () => {};
  #gate: ReturnType<typeof newReadBackGate> | undefined;
  #watchdog: ReturnType<typeof setInterval> | undefined;
  #rateMin: ReturnType<typeof setInterval> | undefined;
  #cpuTimer: ReturnType<typeof setTimeout> | undefined;
  #cpuStart: ReturnType<typeof process.cpuUsage> | undefined;
  /** The process's CPU over the measured window, taken when the jobs end (not release's). */
  #cpu: ReturnType<typeof process.cpuUsage> | undefined;

  readonly #onAbort = () => {
    this.#interrupted = true;
    this.#stop();
    this.#changed();
  };
  readonly #onStonewall = () => {
    this.#cutShort = true;
    this.#stop();
    this.#changed();
  };

  constructor(
    readonly tier: Tier,
    readonly job: JobOptions,
    readonly hooks: RunHooks,
    readonly files: readonly JobTarget[],
  ) {
    this.shared = newSharedCounters(job.numjobs);
    this.#timeoutMs = job.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    hooks.signal?.addEventListener("abort", this.#onAbort);
    if (hooks.signal?.aborted) this.#onAbort();
    hooks.stonewall?.addEventListener("abort", this.#onStonewall);
    this.#sampler = new Sampler(job, this.shared, hooks.onProgress);
  }

  /** Starts (or takes from the session) one Worker per job with its plan, and the watchdog. */
  spawn(verify: VerifyPlans): void {
    const { job, hooks } = this;
    this.#gate = verify && hooks.beforeReadBack ? newReadBackGate(job.numjobs) : undefined;
    truncateSharedLogs(job);
    for (let j = 0; j < job.numjobs; j++) {
      const w = hooks.workers?.take(`${job.name}#${j}`) ??
        new Worker(WORKER_URL, { type: "module", name: `${job.name}#${j}` });
      this.#listen(w, j);
      this.#workers.push(w);
      const start: JobStart = {
        plan: this.#plan(j, verify),
        ctl: this.shared.ctl,
        f64: this.shared.f64,
      };
      w.postMessage(start);
    }
    // a job blocked on one request for longer than --timeout fails the run, even when its
    // thread is stuck in a system call
    this.#watchdog = setInterval(() => {
      const j = hungJob(this.shared, job.numjobs, this.#timeoutMs, this.#results);
      if (this.#hung || j < 0) return;
      this.#hung = true;
      this.#failures.unshift(timedOut(job, this.files[j]!, this.shared, j, this.#timeoutMs));
      this.#stop();
      this.#changed();
    }, WATCHDOG_MS);
  }

  /** Layout: every job opens and prepares its file, then waits at the barrier; the hooks run. */
  async layout(): Promise<void> {
    const { job, hooks, files } = this;
    this.#sampler.startLayout();
    const all = () =>
      this.#ready.size + [...this.#results.keys()].filter((j) => !this.#ready.has(j)).length;
    await this.#waitFor(() => all() === job.numjobs || this.#interrupted || this.#hung);
    if (this.#going()) this.tier.markLaidOut(files);
    if (this.#going()) await hooks.afterLayout?.(files);
    if (this.#going() && hooks.beforeStart) {
      try {
        await hooks.beforeStart();
      } catch (e) {
        this.#failures.push(errorLine(e));
      }
    }
    if (this.#going() && hooks.beforeClock) await this.#beforeClock(hooks.beforeClock);
    if (!this.#going()) this.#stop();
  }

  /** The ramp and the measured time: the clock is set, the jobs go, every result comes back. */
  async measure(): Promise<void> {
    const { job, hooks, shared } = this;
    const start = nowAbs() + job.rampMs;
    hooks.onMeasureStart?.(start);
    shared.f64[RUN.MEASURE_START] = monoNow() + job.rampMs;
    shared.f64[RUN.RAMP_MS] = job.rampMs;
    shared.f64[RUN.RUNTIME_MS] = job.runtimeMs ?? job.fio?.runtimeCapMs ?? Infinity;
    this.#cpuTimer = setTimeout(() => (this.#cpuStart = process.cpuUsage()), job.rampMs);
    this.#sampler.startMeasuring(start);
    if (job.fio?.rateMin) {
      this.#rateMin = watchRateMin(job, shared, start, (why) => {
        this.#failures.push(why);
        this.#stop();
        this.#changed();
      });
    }
    openGate(shared.ctl, CTL.GO);
    const gate = this.#gate;
    if (gate) {
      const stopping = () => Atomics.load(shared.ctl, CTL.STOP) !== 0 || this.#results.size > 0;
      void holdReadBack(gate, job.numjobs, () => hooks.beforeReadBack!(this.files), stopping);
    }
    await this.#waitFor(() => this.#results.size === job.numjobs || this.#hung);
    // the measured window ends here: release's clean-up is not the jobs' CPU
    if (this.#cpuStart) this.#cpu = process.cpuUsage(this.#cpuStart);
  }

  /**
   * Whatever happened: timers off, jobs still running stopped (briefly for a
   * hung one), Workers handed back after a clean end or ended, files released.
   */
  async drain(): Promise<void> {
    const { job, hooks } = this;
    hooks.signal?.removeEventListener("abort", this.#onAbort);
    hooks.stonewall?.removeEventListener("abort", this.#onStonewall);
    clearTimeout(this.#cpuTimer);
    clearInterval(this.#watchdog);
    clearInterval(this.#rateMin);
    this.#sampler.stop();
    if (this.#results.size < job.numjobs) {
      this.#stop();
      // A hung job will not answer: wait only briefly for the others.
      const grace = hooks.stopGraceMs ?? 10_000;
      const wait = this.#hung ? Math.min(grace, 1000) : grace;
      await this.#waitFor(() => this.#results.size === job.numjobs, wait);
    }
    // a Worker whose job ended cleanly takes the next job of the session; any other ends here
    const clean = this.#results.size === job.numjobs && !this.#hung && this.#going();
    for (const w of this.#workers) {
      if (clean && hooks.workers) hooks.workers.give(w);
      else w.terminate();
    }
    // Touching a tier that stopped answering would hang here too: leave it to `clean`.
    if (this.#hung) this.tier.abandon?.(`a request timed out after ${this.#timeoutMs / 1000} s`);
    else {
      const gone = this.tier.vanished?.();
      if (gone !== undefined) this.#failures.push(gone);
      await this.tier.release(this.files);
    }
  }

  /** The run's result from the jobs' results and the sampled series. */
  collect(): RunResult {
    const { job } = this;
    if (this.#results.size < job.numjobs) {
      this.#failures.push(
        `${job.numjobs - this.#results.size} job(s) did not stop in time and were terminated`,
      );
    }
    const cpu = this.#cpu ??
      (this.#cpuStart ? process.cpuUsage(this.#cpuStart) : { user: 0, system: 0 });
    const failures = this.#failures;
    return buildResult(job, this.tier, this.shared, this.#results, this.#sampler.series(), cpu, {
      status: failures.length > 0 ? "failed" : this.#interrupted ? "interrupted" : "ok",
      cutShort: this.#cutShort,
      error: failures[0] ?? (this.#interrupted ? "interrupted" : undefined),
    });
  }

  #going(): boolean {
    return this.#failures.length === 0 && !this.#interrupted;
  }

  #stop(): void {
    const ctl = this.shared.ctl;
    Atomics.store(ctl, CTL.STOP, 1);
    Atomics.notify(ctl, CTL.STOP); // paced jobs wait on it for their next start
    openGate(ctl, CTL.GO);
  }

  #changed(): void {
    this.#wake();
  }

  /** Resolves true once `done()` holds (looked at on each message), false after `timeoutMs`. */
  #waitFor(done: () => boolean, timeoutMs = Infinity): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      if (done()) return resolve(true);
      const timer = Number.isFinite(timeoutMs)
        ? setTimeout(() => {
          this.#wake = () => {};
          resolve(false);
        }, timeoutMs)
        : undefined;
      this.#wake = () => {
        if (done()) {
          clearTimeout(timer);
          this.#wake = () => {};
          resolve(true);
        }
      };
    });
  }

  /** A job file's startdelay: waits, cut short by Ctrl-C or the stonewall. */
  async #beforeClock(beforeClock: (signal: AbortSignal) => Promise<void>): Promise<void> {
    const { hooks } = this;
    const waiting = new AbortController();
    const relay = () => waiting.abort();
    hooks.signal?.addEventListener("abort", relay);
    hooks.stonewall?.addEventListener("abort", relay);
    try {
      await beforeClock(waiting.signal);
    } finally {
      hooks.signal?.removeEventListener("abort", relay);
      hooks.stonewall?.removeEventListener("abort", relay);
    }
  }

  #listen(w: Worker, j: number): void {
    w.onmessage = (e: MessageEvent<JobMessage>) => {
      const m = e.data;
      if (m.type === "ready") this.#ready.add(m.job);
      else {
        this.#results.set(m.job, m);
        if (m.failure) {
          this.#failures.push(describeFailure(m.failure));
          this.#stop();
        }
      }
      this.#changed();
    };
    w.onerror = (e: ErrorEvent) => {
      e.preventDefault();
      this.#failures.push(`job ${j}: ${e.message}`);
      this.#results.set(j, { type: "result", job: j, read: emptyEncoded(), write: emptyEncoded() });
      this.#stop();
      this.#changed();
    };
  }

  /** Job `j`'s plan: what its Worker runs. */
  #plan(j: number, verify: VerifyPlans): JobPlan {
    const { job, hooks } = this;
    const engine = engineOf(job);
    const gate = this.#gate;
    return {
      job: j,
      tier: job.tier.kind,
      target: this.files[j]!,
      engine,
      direct: job.direct,
      rw: job.rw,
      rwmixread: job.rwmixread,
      bs: job.bs,
      size: job.size,
      ioSize: job.runtimeMs === undefined ? job.ioSize : 0,
      iodepth: job.iodepth,
      seed: job.seed,
      alignment: BUFFER_ALIGNMENT,
      endFsync: job.endFsync,
      timeoutMs: this.#timeoutMs,
      logAvgMsec: job.logAvgMsec,
      ...(engine === "io_uring" && job.ioUring ? { ioUring: job.ioUring } : {}),
      ...(job.rate
        ? { rate: { intervalMs: rateIntervalMs(job.rate, job.bs), process: job.rate.process } }
        : {}),
      ...(verify ? { verify: { ...verify[j]!, ...(gate ? { readBackGate: gate } : {}) } } : {}),
      ...fioPlan(job, j, hooks.flows),
      ...(job.affinity ? { cpus: cloneCpus(job.affinity, j) } : {}),
    };
  }
}

/** A job file's additions to clone `j`'s plan (core/fio_job.ts). */
function fioPlan(
  job: JobOptions,
  j: number,
  flows: ReadonlyMap<number, BigInt64Array<SharedArrayBuffer>> | undefined,
): Partial<JobPlan> {
  const fio = job.fio;
  const clone = fio?.clones[j];
  if (!fio || !clone) return {};
  const log = fio.logs && logPlan(fio.logs, j, clone.pattern.sizes);
  const flow = fio.flow && flows?.get(fio.flow.id);
  return {
    pattern: clone.pattern,
    ioSize: 0, // the pattern keeps the job's budget (io_size × loops)
    data: fio.data,
    ...(fio.errors ? { errors: fio.errors } : {}),
    ...(fio.openSync !== "none" ? { openSync: fio.openSync } : {}),
    ...(fio.fsyncOnClose ? { fsyncOnClose: true } : {}),
    ...(log ? { log } : {}),
    ...(flow
      ? { flow: { shared: flow, weight: fio.flow!.weight, sleepUs: fio.flow!.sleepUs } }
      : {}),
    ...(fio.thinktime ? { thinktime: fio.thinktime } : {}),
    ...(fio.layout.createOnly ? { createOnly: true } : {}),
  };
}

/** The paths and form of clone `j`'s fio logs (fio's gen_log_name). */
function logPlan(
  logs: NonNullable<FioJobExtras["logs"]>,
  j: number,
  sizes: readonly { readonly min: number; readonly max: number }[],
): IoLogPlan {
  const name = (prefix: string | undefined, kind: string) =>
    prefix === undefined
      ? undefined
      : logs.perJob
      ? `${prefix}_${kind}.${logs.threadNumber + j}.log`
      : `${prefix}_${kind}.log`;
  const fixed = (d: number) => sizes[d]!.min === sizes[d]!.max ? sizes[d]!.min : 0;
  const paths = {
    bw: name(logs.bw, "bw"),
    iops: name(logs.iops, "iops"),
    lat: name(logs.lat, "lat"),
    clat: name(logs.lat, "clat"),
    slat: name(logs.lat, "slat"),
  };
  return {
    ...Object.fromEntries(Object.entries(paths).filter(([, v]) => v !== undefined)),
    avgMsec: logs.avgMsec,
    offset: logs.offset,
    max: logs.max,
    bs: [fixed(0), fixed(1)],
    append: !logs.perJob,
  };
}

/** Empties a job's shared logs (per_job_logs=0): its clones then append to them. */
function truncateSharedLogs(job: JobOptions): void {
  const logs = job.fio?.logs;
  if (!logs || logs.perJob) return;
  for (const p of [logs.bw, logs.iops, logs.lat]) {
    if (p === undefined) continue;
    const kinds = p === logs.lat ? ["lat", "clat", "slat"] : p === logs.bw ? ["bw"] : ["iops"];
    for (const k of kinds) Deno.writeTextFileSync(`${p}_${k}.log`, "");
  }
}

/**
 * fio's check_min_rate: every rate_cycle ms, each clone's bandwidth (or
 * IOPS) in each direction over the cycle must reach rate_min (rate_iops_min).
 */
function watchRateMin(
  job: JobOptions,
  shared: SharedCounters,
  start: number,
  fail: (why: string) => void,
): ReturnType<typeof setInterval> {
  const m = job.fio!.rateMin!;
  const last = Array.from({ length: job.numjobs }, () => [0, 0, 0, 0]);
  let lastT = start;
  const timer = setInterval(() => {
    const now = nowAbs();
    if (now < start + m.cycleMs) return;
    const secs = (now - lastT) / 1000;
    lastT = now;
    const f = shared.f64;
    for (let j = 0; j < job.numjobs; j++) {
      const b = jobBase(j);
      const cur = [
        f[b + JOB.READ_BYTES]!,
        f[b + JOB.WRITE_BYTES]!,
        f[b + JOB.READ_OPS]!,
        f[b + JOB.WRITE_OPS]!,
      ];
      for (const d of [0, 1]) {
        const dir = d === 0 ? "read" : "write";
        const active = d === 0 ? job.rwmixread > 0 : job.rwmixread < 100;
        if (!active) continue;
        const bytes = (cur[d]! - last[j]![d]!) / secs;
        const iops = (cur[d + 2]! - last[j]![d + 2]!) / secs;
        if (m.bytes[d]! > 0 && bytes < m.bytes[d]!) {
          fail(
            `${job.name}: ${dir} at ${Math.round(bytes)} B/s over ${m.cycleMs} ms, below ` +
              `rate_min=${m.bytes[d]}B/s (fio: min rate not met)`,
          );
          clearInterval(timer);
          return;
        }
        if (m.iops[d]! > 0 && iops < m.iops[d]!) {
          fail(
            `${job.name}: ${dir} at ${Math.round(iops)} IOPS over ${m.cycleMs} ms, below ` +
              `rate_iops_min=${m.iops[d]} (fio: min rate not met)`,
          );
          clearInterval(timer);
          return;
        }
      }
      last[j] = cur;
    }
  }, m.cycleMs);
  return timer;
}

/**
 * The result of a job that never ran (a job file's run ended first): the
 * job's options, every figure zero, and why.
 *
 * @example
 * ```ts
 * import { parseJobOptions } from "../core/config.ts";
 * import { notStartedResult } from "./runner.ts";
 * import { openTier } from "../tiers/mod.ts";
 * const job = parseJobOptions({ tier: "null:", size: "1m" });
 * const r = notStartedResult(openTier(job.tier), job, "the run ended first");
 * console.assert(r.read.total_ios === 0 && r.not_started === "the run ended first");
 * ```
 */
export function notStartedResult(tier: Tier, job: JobOptions, why: string): RunResult {
  const shared = newSharedCounters(job.numjobs);
  const sampler = new Sampler(job, shared);
  const r = buildResult(job, tier, shared, new Map(), sampler.series(), { user: 0, system: 0 }, {
    status: "ok",
    error: undefined,
  });
  return { ...r, not_started: why };
}

/** How often the watchdog looks at the jobs' requests. */
const WATCHDOG_MS = 200;

/** The first job (without a result yet) blocked on one request for longer than `timeoutMs`, or -1. */
function hungJob(
  shared: SharedCounters,
  numjobs: number,
  timeoutMs: number,
  results: ReadonlyMap<number, unknown>,
): number {
  const now = monoNow();
  for (let j = 0; j < numjobs; j++) {
    const since = shared.f64[jobBase(j) + JOB.BUSY_SINCE]!;
    if (since > 0 && now - since > timeoutMs && !results.has(j)) return j;
  }
  return -1;
}

/** The one line that says which request of which tier timed out. */
function timedOut(
  job: JobOptions,
  target: { readonly paths: readonly string[] },
  shared: SharedCounters,
  j: number,
  timeoutMs: number,
): string {
  const f = shared.f64;
  const b = jobBase(j);
  const file = f[b + JOB.BUSY_FILE]!;
  const aio = job.engine === "psync" ? "" : ` (${job.engine})`;
  const request = file < 0
    ? `fsync${aio} of ${target.paths.join(", ")}`
    : `${f[b + JOB.BUSY_READ] === 1 ? "pread" : "pwrite"}${aio} ${target.paths[file] ?? "?"} ` +
      `at offset ${f[b + JOB.BUSY_OFFSET]}`;
  return `${request} on ${formatTierSpec(job.tier)} timed out after ${timeoutMs / 1000} s ` +
    "(--timeout): the storage stopped answering";
}

function emptyEncoded() {
  return encodeDirection(newLatencyCounts());
}

/** Samples the shared counters for progress and for the time series. */
class Sampler {
  readonly #job: JobOptions;
  readonly #shared: SharedCounters;
  readonly #onProgress: ((p: RunProgress) => void) | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;
  #start = 0;
  #last = { t: 0, bytes: 0, ops: 0 };
  #tsLast = { t: 0, rb: 0, wb: 0, ro: 0, wo: 0, rl: 0, wl: 0 };
  #series: TimeSeries;

  constructor(job: JobOptions, shared: SharedCounters, onProgress?: (p: RunProgress) => void) {
    this.#job = job;
    this.#shared = shared;
    this.#onProgress = onProgress;
    this.#series = {
      interval_ms: job.logAvgMsec,
      t_ms: [],
      read_bw_bytes: [],
      write_bw_bytes: [],
      read_iops: [],
      write_iops: [],
      ...(job.rate ? { lag_ms: [], read_lat_ns: [], write_lat_ns: [] } : {}),
    };
  }

  startLayout(): void {
    this.#onProgress?.({
      name: this.#job.name,
      phase: "layout",
      elapsedMs: 0,
      totalMs: this.#job.runtimeMs,
      fraction: 0,
      readBytes: 0,
      writeBytes: 0,
      bwBytes: 0,
      iops: 0,
    });
  }

  startMeasuring(start: number): void {
    this.#start = start;
    this.#last = { t: nowAbs(), bytes: 0, ops: 0 };
    this.#tsLast = { t: start, rb: 0, wb: 0, ro: 0, wo: 0, rl: 0, wl: 0 };
    this.#timer = setInterval(() => this.#tick(), SAMPLE_MS);
  }

  #totals() {
    const f = this.#shared.f64;
    let rb = 0, wb = 0, ro = 0, wo = 0, rl = 0, wl = 0, lag = 0;
    const now = monoNow();
    for (let j = 0; j < this.#job.numjobs; j++) {
      const b = jobBase(j);
      rb += f[b + JOB.READ_BYTES]!;
      wb += f[b + JOB.WRITE_BYTES]!;
      ro += f[b + JOB.READ_OPS]!;
      wo += f[b + JOB.WRITE_OPS]!;
      rl += f[b + JOB.READ_LAT_SUM]!;
      wl += f[b + JOB.WRITE_LAT_SUM]!;
      const due = f[b + JOB.NEXT_DUE]!;
      const end = f[b + JOB.ISSUE_END]!;
      if (due > 0) lag = Math.max(lag, (end > 0 ? Math.min(now, end) : now) - due);
    }
    return { rb, wb, ro, wo, rl, wl, lag };
  }

  #tick(): void {
    const now = nowAbs();
    const { rb, wb, ro, wo, rl, wl, lag } = this.#totals();
    // Time series: one point per completed interval after the ramp.
    const iv = this.#job.logAvgMsec;
    while (now >= this.#tsLast.t + iv && this.#tsLast.t + iv > this.#start) {
      const end = this.#tsLast.t + iv;
      const s = iv / 1000;
      this.#series.t_ms.push(Math.round(end - this.#start));
      this.#series.read_bw_bytes.push(Math.round((rb - this.#tsLast.rb) / s));
      this.#series.write_bw_bytes.push(Math.round((wb - this.#tsLast.wb) / s));
      this.#series.read_iops.push(Math.round((ro - this.#tsLast.ro) / s));
      this.#series.write_iops.push(Math.round((wo - this.#tsLast.wo) / s));
      const last = this.#tsLast;
      this.#series.lag_ms?.push(Math.round(lag));
      this.#series.read_lat_ns?.push(
        ro > last.ro ? Math.round((rl - last.rl) / (ro - last.ro)) : null,
      );
      this.#series.write_lat_ns?.push(
        wo > last.wo ? Math.round((wl - last.wl) / (wo - last.wo)) : null,
      );
      this.#tsLast = { t: end, rb, wb, ro, wo, rl, wl };
    }
    if (!this.#onProgress) return;
    const dt = (now - this.#last.t) / 1000;
    const bytes = rb + wb;
    const ops = ro + wo;
    const elapsed = now - this.#start;
    const total = this.#job.runtimeMs;
    const target = this.#job.ioSize * this.#job.numjobs;
    const fraction = total !== undefined
      ? Math.min(1, Math.max(0, elapsed / total))
      : Math.min(1, bytes / target);
    this.#onProgress({
      name: this.#job.name,
      phase: elapsed < 0 ? "ramp" : "measure",
      elapsedMs: elapsed,
      totalMs: total,
      fraction,
      readBytes: rb,
      writeBytes: wb,
      bwBytes: dt > 0 ? (bytes - this.#last.bytes) / dt : 0,
      iops: dt > 0 ? (ops - this.#last.ops) / dt : 0,
    });
    this.#last = { t: now, bytes, ops };
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  series(): TimeSeries {
    return this.#series;
  }
}

/**
 * The series with each direction's total latency per interval (p50, p99,
 * max) from the jobs' interval snapshots, for the directions that moved
 * anything; as it was when no job sent snapshots.
 */
function withIntervalLatency(
  series: TimeSeries,
  results: readonly Extract<JobMessage, { type: "result" }>[],
  reads: boolean,
  writes: boolean,
): TimeSeries {
  const logs = results.flatMap((r) => r.intervals ? [r.intervals] : []);
  if (logs.length === 0) return series;
  const n = series.t_ms.length;
  const out = { ...series };
  if (reads) {
    const lat = intervalLatency(logs.map((l) => l.read), n);
    out.read_lat_p50_ns = lat.p50_ns;
    out.read_lat_p99_ns = lat.p99_ns;
    out.read_lat_max_ns = lat.max_ns;
  }
  if (writes) {
    const lat = intervalLatency(logs.map((l) => l.write), n);
    out.write_lat_p50_ns = lat.p50_ns;
    out.write_lat_p99_ns = lat.p99_ns;
    out.write_lat_max_ns = lat.max_ns;
  }
  return out;
}

function span(runtimeMs: number, bytes: number, ops: number): SpanFigures {
  const s = runtimeMs / 1000;
  return {
    runtime: Math.round(runtimeMs),
    io_bytes: bytes,
    bw_bytes: s > 0 ? Math.round(bytes / s) : 0,
    iops: s > 0 ? ops / s : 0,
  };
}

/** The CPU time of the jobs' threads over their measured windows, summed, in whole ns. */
function jobsCpu(
  results: Iterable<Extract<JobMessage, { type: "result" }>>,
): { usr_ns: number; sys_ns: number } {
  let usr = 0, sys = 0;
  for (const r of results) {
    usr += r.cpu?.usr_ns ?? 0;
    sys += r.cpu?.sys_ns ?? 0;
  }
  return { usr_ns: Math.round(usr), sys_ns: Math.round(sys) };
}

/** Bytes and ops of both directions, as the jobs' shared counters hold them. */
type Moved = { rb: number; wb: number; ro: number; wo: number };

/** Each job's counters from the shared memory, their sums, and when the first and last ended. */
function jobFigures(job: JobOptions, f: Float64Array, start: number): {
  jobs: RunResult["jobs"];
  firstEnd: number;
  lastEnd: number;
  tot: Moved;
  fd: Moved;
} {
  const jobs: RunResult["jobs"] = [];
  let firstEnd = Infinity, lastEnd = 0;
  const fd = { rb: 0, wb: 0, ro: 0, wo: 0 };
  const tot = { rb: 0, wb: 0, ro: 0, wo: 0 };
  for (let j = 0; j < job.numjobs; j++) {
    const b = jobBase(j);
    const end = f[b + JOB.END]! > 0 ? f[b + JOB.END]! - start : 0;
    jobs.push({
      job: j,
      read_bytes: f[b + JOB.READ_BYTES]!,
      write_bytes: f[b + JOB.WRITE_BYTES]!,
      end_ms: Math.round(end),
      fsync_ms: Math.round(f[b + JOB.FSYNC_MS]!),
      retries: f[b + JOB.RETRIES]!,
      retry_causes: Object.fromEntries(
        RETRY_CAUSES.map((c, i) => [c, f[b + JOB.RETRY_CAUSES_AT + i]!]),
      ) as Record<RetryCause, number>,
    });
    firstEnd = Math.min(firstEnd, end);
    lastEnd = Math.max(lastEnd, end);
    tot.rb += f[b + JOB.READ_BYTES]!;
    tot.wb += f[b + JOB.WRITE_BYTES]!;
    tot.ro += f[b + JOB.READ_OPS]!;
    tot.wo += f[b + JOB.WRITE_OPS]!;
    fd.rb += f[b + JOB.FD_READ_BYTES]!;
    fd.wb += f[b + JOB.FD_WRITE_BYTES]!;
    fd.ro += f[b + JOB.FD_READ_OPS]!;
    fd.wo += f[b + JOB.FD_WRITE_OPS]!;
  }
  if (!Number.isFinite(firstEnd)) firstEnd = 0;
  return { jobs, firstEnd, lastEnd, tot, fd };
}

/** The measured window, ms: the run's runtime, when the first job was done, when the last ended. */
type Window = { runtime: number; firstDone: number; lastEnd: number };

/** One direction's figures over the window: bytes, rates, latency, first and last done. */
function directionResult(
  w: Window,
  h: LatencyHistograms,
  bytes: number,
  ops: number,
  fdBytes: number,
  fdOps: number,
): DirectionResult {
  return {
    io_bytes: bytes,
    bw_bytes: span(w.runtime, bytes, ops).bw_bytes,
    iops: span(w.runtime, bytes, ops).iops,
    runtime: Math.round(w.runtime),
    total_ios: ops,
    lat_ns: latencyStats(h.lat),
    clat_ns: latencyStats(h.clat),
    slat_ns: latencyStats(h.slat),
    first_done: span(w.firstDone, fdBytes, fdOps),
    last_done: span(w.lastEnd, bytes, ops),
    ...(h.ttfb.totalCount > 0 ? { ttfb_ns: latencyStats(h.ttfb) } : {}),
    hist: encodeLatency(h),
  };
}

/** The jobs' I/O errors summed, with the first one's message and errno; undefined when none. */
function ioErrorsOf(
  results: Map<number, Extract<JobMessage, { type: "result" }>>,
): RunResult["io_errors"] {
  const errs = [...results.values()].flatMap((r) => (r.errors ? [r.errors] : []));
  if (errs.length === 0) return undefined;
  return {
    read: errs.reduce((a, e) => a + e.read, 0),
    write: errs.reduce((a, e) => a + e.write, 0),
    first: errs.find((e) => e.first)?.first ?? "",
    first_errno: errs.find((e) => e.first)?.firstErrno ?? 0,
  };
}

function buildResult(
  job: JobOptions,
  tier: Tier,
  shared: SharedCounters,
  results: Map<number, Extract<JobMessage, { type: "result" }>>,
  series: TimeSeries,
  cpu: { user: number; system: number },
  outcome: { status: RunResult["status"]; error: string | undefined; cutShort?: boolean },
): RunResult {
  const f = shared.f64;
  const start = f[RUN.MEASURE_START]!;
  const read = newLatencyHistograms();
  const write = newLatencyHistograms();
  for (const r of results.values()) {
    mergeLatency(read, histogramsOfCounts(r.read));
    mergeLatency(write, histogramsOfCounts(r.write));
  }
  const { jobs, firstEnd, lastEnd, tot, fd } = jobFigures(job, f, start);
  // A time-based run measures exactly its runtime unless it was cut short (or ended early).
  const whole = job.runtimeMs !== undefined && outcome.status === "ok" &&
    (!outcome.cutShort || lastEnd >= job.runtimeMs - 1);
  const runtime = whole ? job.runtimeMs! : lastEnd;
  const w: Window = { runtime, firstDone: whole ? job.runtimeMs : firstEnd, lastEnd };
  const wall = runtime / 1000;
  const result: RunResult = {
    name: job.name,
    status: outcome.status,
    tier: tier.describe(),
    options: options(job),
    ramp: { ms: job.rampMs, excluded: true },
    read: directionResult(w, read, tot.rb, tot.ro, fd.rb, fd.ro),
    write: directionResult(w, write, tot.wb, tot.wo, fd.wb, fd.wo),
    timeseries: withIntervalLatency(series, [...results.values()], tot.ro > 0, tot.wo > 0),
    cpu: {
      usr_pct: wall > 0 ? round2((cpu.user / 1e6 / wall) * 100) : 0,
      sys_pct: wall > 0 ? round2((cpu.system / 1e6 / wall) * 100) : 0,
      jobs: jobsCpu(results.values()),
    },
    jobs,
  };
  if (job.rate) {
    const schedules = [...results.values()].flatMap((r) => r.schedule ? [r.schedule] : []);
    result.schedule = scheduleOf(rateIntervalMs(job.rate, job.bs), schedules);
  }
  if (outcome.error !== undefined) result.error = outcome.error;
  const ioErrors = ioErrorsOf(results);
  if (ioErrors !== undefined) result.io_errors = ioErrors;
  return result;
}

/** The run's schedule figures from its jobs': counts summed, lags the worst job's. */
function scheduleOf(intervalMs: number, jobs: readonly JobSchedule[]): ScheduleResult {
  let intended = 0, issued = 0, maxLag = 0, finalLag = 0;
  for (const s of jobs) {
    intended += s.intended_ios;
    issued += s.issued_ios;
    maxLag = Math.max(maxLag, s.max_lag_ms);
    finalLag = Math.max(finalLag, s.final_lag_ms);
  }
  return {
    interval_ms: Math.round(intervalMs * 1000) / 1000,
    intended_ios: intended,
    issued_ios: issued,
    max_lag_ms: maxLag,
    final_lag_ms: finalLag,
    tolerance_ms: Math.round((intervalMs + RATE_TOLERANCE_MS) * 1000) / 1000,
    met: jobs.length > 0 && scheduleMet(finalLag, intervalMs),
  };
}

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}

/** Where a run stands in a series of runs (a sweep's grid points). */
export interface StepProgress {
  /** What a step is called ("point"). */
  readonly what: string;
  /** This step, from 1. */
  readonly index: number;
  readonly count: number;
  /** Estimated time left of the whole series, ms; undefined when unknown. */
  readonly leftMs: number | undefined;
}
