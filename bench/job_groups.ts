/**
 * The jobs of a fio job file, started as fio 3.33's run_threads starts
 * them: first every job's files made ready, one job after another in the
 * file's order (fio's create_serialize), then the jobs in the file's order,
 * all at once, except that a job with
 * `stonewall` starts only once nothing else runs, a job with `wait_for`
 * once the job it names has ended, and a job with `startdelay` that long
 * after the jobs began. The jobs' clock (fio's genesis, which startdelay and
 * --trigger-timeout count from) starts once the files are ready and the first
 * jobs are ready to start theirs, so neither a long layout nor the jobs'
 * start-up counts against them, and a layout is never cut short by the trigger. When a job ends
 * and `exitall` is set, the jobs `exit_what` names end too (`group`: its
 * reporting group, `stonewall`: those started with it, `all`: every job,
 * and none starts after). A failed job stops the others only with
 * `exitall_on_error`, as in fio; the run is failed either way.
 *
 * @module
 */

import type { JobOptions } from "../core/config.ts";
import type { RunResult } from "../schema/result.ts";
import type { RunStatus } from "../schema/run_status.ts";
import { notStartedResult, runJob } from "./runner.ts";
import { checkSpace } from "../tiers/space.ts";
import type { Tier } from "../tiers/types.ts";
import {
  type Session,
  type SessionOptions,
  type SessionOutcome,
  sessionTimeout,
  withSession,
} from "./session.ts";

/** One job and its place in the run. */
export interface ScheduledJob {
  readonly job: JobOptions;
  /** Starts once nothing else runs (fio's stonewall). */
  readonly stonewall?: boolean;
  /** Starts once the job at this index has ended (fio's wait_for). */
  readonly waitFor?: number;
  /** Its clock starts this long after the run began, ms (fio's startdelay). */
  readonly startDelayMs?: number;
  /** Its reporting group (fio's groupid). */
  readonly groupid?: number;
  /** When it ends, these end too (fio's exitall and exit_what). */
  readonly exitall?: "group" | "stonewall" | "all";
  /** When it fails, every job ends (fio's exitall_on_error). */
  readonly exitallOnError?: boolean;
}

/** A job being run: how to stop it, and when it is done. */
interface Running {
  /** Interrupts it (a signal, an error elsewhere). */
  readonly stop: AbortController;
  /** Ends it as a normal end (exitall, the run's end). */
  readonly end: AbortController;
  readonly done: Promise<void>;
}

/**
 * Runs `jobs` as a fio job file's jobs run (see the module's comment), each
 * on its own scratch area of its tier, and gathers their results in the
 * file's order. Jobs never started (exit_what=all, an interruption, a
 * wait_for on a job that failed to start) have no result.
 *
 * @example
 * ```ts
 * import { parseJobOptions } from "../core/config.ts";
 * import { runJobSchedule } from "./job_groups.ts";
 * const job = (name: string) => parseJobOptions({ name, tier: "null:", size: "1m" });
 * const { doc } = await runJobSchedule(
 *   [{ job: job("a") }, { job: job("b") }, { job: job("c"), stonewall: true }],
 *   { kind: "run", config: {} },
 * );
 * console.assert(doc.status === "ok" && doc.runs.map((r) => r.name).join() === "a,b,c");
 * ```
 */
export function runJobSchedule(
  jobs: readonly ScheduledJob[],
  opts: SessionOptions & {
    readonly flows?: ReadonlyMap<number, BigInt64Array<SharedArrayBuffer>>;
    /**
     * Ends every job as a normal end this long after the jobs began (once the
     * files are laid out and the first jobs ready), none starting after: fio's
     * --trigger-timeout, ms.
     */
    readonly triggerTimeoutMs?: number;
  },
): Promise<SessionOutcome> {
  checkJobSpace(jobs);
  const timeoutMs = opts.timeoutMs ?? sessionTimeout(jobs.map((j) => j.job));
  return withSession({ ...opts, timeoutMs }, (session) => new Schedule(jobs, opts, session).run());
}

/** Options of {@linkcode runJobSchedule}. */
type ScheduleOptions = Parameters<typeof runJobSchedule>[1];

/**
 * Refuses, before any I/O, jobs given by options (a scratch directory each)
 * whose files would not fit; a job file's jobs lay their files out as fio
 * does, and a file system that fills fails them with ENOSPC, or is gone on
 * after (continue_on_error), as in fio.
 */
function checkJobSpace(jobs: readonly ScheduledJob[]): void {
  const groups: JobOptions[][] = [];
  for (const { job, stonewall } of jobs) {
    if (stonewall || groups.length === 0) groups.push([]);
    if (!job.fio) groups.at(-1)!.push(job);
  }
  checkSpace(groups, false);
}

/** One run of a job file's jobs in a session: what has started, runs and ended. */
class Schedule {
  readonly #jobs: readonly ScheduledJob[];
  readonly #opts: ScheduleOptions;
  readonly #session: Session;
  /** fio's genesis: the files laid out, the first jobs ready to start their clocks. */
  #t0 = 0;
  #triggered = false;
  #trigger: ReturnType<typeof setTimeout> | undefined;
  readonly #results: (RunResult | undefined)[];
  readonly #started = new Set<number>();
  readonly #ended = new Set<number>();
  readonly #running = new Map<number, Running>();
  /** Each job's stonewall: the jobs from one to the next (exit_what=stonewall ends them together). */
  readonly #wall: number[];
  readonly #exitall: boolean;
  /** Nothing starts any more. */
  #closed = false;
  #thrown: unknown;

  constructor(jobs: readonly ScheduledJob[], opts: ScheduleOptions, session: Session) {
    this.#jobs = jobs;
    this.#opts = opts;
    this.#session = session;
    this.#results = new Array(jobs.length).fill(undefined);
    let walls = 0;
    this.#wall = jobs.map((j, i) => (i > 0 && j.stonewall ? ++walls : walls));
    this.#exitall = jobs.some((j) => j.exitall !== undefined);
  }

  /** Lays the files out, runs the jobs, and puts their results in the document. */
  async run(): Promise<RunStatus> {
    const signal = this.#opts.signal;
    const onAbort = () => this.#stopAll(signal?.reason);
    signal?.addEventListener("abort", onAbort);
    try {
      await this.#layOut();
      await this.#runInWaves();
    } finally {
      signal?.removeEventListener("abort", onAbort);
      clearTimeout(this.#trigger);
      await Promise.allSettled([...this.#running.values()].map((r) => r.done));
    }
    if (this.#thrown !== undefined) throw this.#thrown;
    await this.#noteNotStarted();
    return this.#report();
  }

  /** Job `i`'s tier, on its own scratch area. */
  #tier(i: number, job: JobOptions): Promise<Tier> {
    return this.#session.tier(job.tier, job.s3, `${this.#session.runId}-j${i}`);
  }

  #startClock(): void {
    if (this.#t0 !== 0) return;
    this.#t0 = performance.now();
    if (this.#opts.triggerTimeoutMs === undefined) return;
    this.#trigger = setTimeout(() => {
      this.#triggered = true;
      this.#endAll();
    }, this.#opts.triggerTimeoutMs);
  }

  /** Interrupts every running job (a signal, an error elsewhere); nothing starts after. */
  #stopAll(reason?: unknown): void {
    this.#closed = true;
    for (const r of this.#running.values()) r.stop.abort(reason);
  }

  /** Ends every running job as a normal end; nothing starts after. */
  #endAll(): void {
    this.#closed = true;
    for (const r of this.#running.values()) r.end.abort();
  }

  /** What job `i`'s end ends too: exitall_on_error, exitall and exit_what. */
  #afterEnd(i: number): void {
    const s = this.#jobs[i]!;
    const r = this.#results[i];
    if (r?.status === "failed" && s.exitallOnError) this.#stopAll(r.error);
    if (!this.#exitall) return;
    const what = s.exitall ?? "group";
    if (what === "all") return this.#endAll();
    for (const [k, other] of this.#running) {
      const same = what === "group"
        ? (this.#jobs[k]!.groupid ?? k) === (s.groupid ?? i)
        : this.#wall[k] === this.#wall[i];
      if (same) other.end.abort();
    }
  }

  /** fio's create_serialize (see {@linkcode layOutAll}), stopped by the signal. */
  async #layOut(): Promise<void> {
    const signal = this.#opts.signal;
    const layout = new AbortController();
    const stopLayout = () => layout.abort();
    signal?.addEventListener("abort", stopLayout);
    try {
      await layOutAll(this.#jobs, this.#results, this.#started, this.#ended, async (i, job) => {
        const tier = await this.#tier(i, job);
        return await runJob(tier, job, {
          signal: layout.signal,
          ...(this.#opts.onProgress ? { onProgress: this.#opts.onProgress } : {}),
        });
      });
    } finally {
      signal?.removeEventListener("abort", stopLayout);
    }
    if (layout.signal.aborted) this.#closed = true;
  }

  /** fio's run_threads: start, in order, what may start, until every job has ended. */
  async #runInWaves(): Promise<void> {
    for (;;) {
      const now = this.#startable();
      const together = new Barrier(now);
      // before the jobs' own waits on it: their startdelay counts from t0
      void together.opened.then(() => this.#startClock());
      for (const i of now) this.#start(i, together);
      if (this.#running.size === 0) break; // all ended, or what is left can never start
      await Promise.race([...this.#running.values()].map((r) => r.done));
    }
  }

  /** The jobs that may start now, in order, marked started; a stonewall waits for an empty run. */
  #startable(): number[] {
    const now: number[] = [];
    for (let i = 0; i < this.#jobs.length && !this.#closed; i++) {
      if (this.#started.has(i)) continue;
      const s = this.#jobs[i]!;
      if (s.stonewall && (this.#running.size > 0 || now.length > 0)) break;
      if (s.waitFor !== undefined && !this.#ended.has(s.waitFor)) continue;
      now.push(i);
      this.#started.add(i);
    }
    return now;
  }

  /** Starts job `i`, its clock with the others of `together`. */
  #start(i: number, together: Barrier): void {
    const stop = new AbortController();
    const end = new AbortController();
    this.#started.add(i);
    const done = this.#runOne(i, together, stop, end).catch((e) => {
      this.#thrown ??= e;
      this.#stopAll(e);
    }).finally(() => {
      void together.arrive(i);
      this.#ended.add(i);
      this.#running.delete(i);
      this.#afterEnd(i);
    });
    this.#running.set(i, { stop, end, done });
  }

  /** Runs job `i` once its tier is set up, its result in the file's place. */
  async #runOne(
    i: number,
    together: Barrier,
    stop: AbortController,
    end: AbortController,
  ): Promise<void> {
    const s = this.#jobs[i]!;
    const opts = this.#opts;
    const tier = await this.#tier(i, s.job);
    opts.onRunStart?.(s.job, i);
    const delay = s.startDelayMs ?? 0;
    const job = s.job.fio ? { ...s.job, fio: { ...s.job.fio, laidOut: true } } : s.job;
    this.#results[i] = await runJob(tier, job, {
      signal: stop.signal,
      stonewall: end.signal,
      // the jobs started together start their clocks together, as fio's threads do
      beforeStart: () => together.arrive(i),
      ...(opts.onProgress ? { onProgress: opts.onProgress } : {}),
      ...(opts.flows ? { flows: opts.flows } : {}),
      ...(delay > 0 ? { beforeClock: (signal) => sleepUntil(this.#t0 + delay, signal) } : {}),
    });
  }

  /** As fio reports them: the jobs the run ended before they started, with nothing done. */
  async #noteNotStarted(): Promise<void> {
    if (!this.#triggered && !this.#closed) return;
    for (const [i, s] of this.#jobs.entries()) {
      if (this.#results[i] || this.#opts.signal?.aborted) continue;
      const tier = await this.#tier(i, s.job);
      const why = this.#triggered
        ? "the run ended (--trigger-timeout) before it started"
        : "exit_what=all ended the run before it started";
      this.#results[i] = notStartedResult(tier, s.job, why);
    }
  }

  /** The results into the document, in the file's order; the run's status. */
  #report(): RunStatus {
    const doc = this.#session.doc;
    for (const r of this.#results) if (r) doc.runs.push(r);
    const bad = doc.runs.find((r) => r.status === "failed") ??
      doc.runs.find((r) => r.status !== "ok");
    if (bad) {
      if (bad.error !== undefined) doc.error = bad.error;
      return bad.status as RunStatus;
    }
    return this.#opts.signal?.aborted ? "interrupted" : "ok";
  }
}

/**
 * fio's create_serialize: each job file job's files made ready, one job
 * after another in the file's order, before any job starts. A job whose
 * files could not be made ready does not run: its result is that failure.
 */
async function layOutAll(
  jobs: readonly ScheduledJob[],
  results: (RunResult | undefined)[],
  started: Set<number>,
  ended: Set<number>,
  run: (i: number, job: JobOptions) => Promise<RunResult>,
): Promise<void> {
  for (const [i, s] of jobs.entries()) {
    const fio = s.job.fio;
    if (!fio || s.job.tier.kind === "null" || s.job.tier.kind === "s3") continue;
    const only: JobOptions = {
      ...s.job,
      fio: { ...fio, layout: { ...fio.layout, createOnly: true, unlink: false, preRead: false } },
    };
    const r = await run(i, only);
    if (r.status === "failed") {
      results[i] = r;
      started.add(i);
      ended.add(i);
    }
    if (r.status === "interrupted") return;
  }
}

/** Jobs that wait for each other: each arrives once; all go when every one has arrived. */
class Barrier {
  readonly #waiting: Set<number>;
  readonly #all: Promise<void>;
  #open!: () => void;

  constructor(members: readonly number[]) {
    this.#waiting = new Set(members);
    this.#all = new Promise((resolve) => (this.#open = resolve));
    if (this.#waiting.size === 0) this.#open();
  }

  /** Member `i` has arrived (again: no change); resolves once every member has. */
  /** Resolves once every member has arrived. */
  get opened(): Promise<void> {
    return this.#all;
  }

  arrive(i: number): Promise<void> {
    this.#waiting.delete(i);
    if (this.#waiting.size === 0) this.#open();
    return this.#all;
  }
}

/** Resolves at `performance.now()` `at`, or at once when `signal` aborts. */
function sleepUntil(at: number, signal: AbortSignal): Promise<void> {
  const ms = at - performance.now();
  if (ms <= 0 || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done);
  });
}

/**
 * Runs `groups` one after another, the jobs of each at once: a job file's
 * jobs with `stonewall` between groups, as {@linkcode runJobSchedule} runs them.
 */
export function runJobGroups(
  groups: readonly (readonly JobOptions[])[],
  opts: SessionOptions,
): Promise<SessionOutcome> {
  const jobs = groups.flatMap((g, k) => g.map((job, i) => ({ job, stonewall: k > 0 && i === 0 })));
  return runJobSchedule(jobs, opts);
}
