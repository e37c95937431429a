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
import {
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
  // Jobs given by options (a scratch directory each) are refused before any I/O when their
  // files would not fit; a job file's jobs lay their files out as fio does, and a file system
  // that fills fails them with ENOSPC, or is gone on after (continue_on_error), as in fio.
  const groups: JobOptions[][] = [];
  for (const { job, stonewall } of jobs) {
    if (stonewall || groups.length === 0) groups.push([]);
    if (!job.fio) groups.at(-1)!.push(job);
  }
  checkSpace(groups, false);
  const timeoutMs = opts.timeoutMs ?? sessionTimeout(jobs.map((j) => j.job));
  return withSession({ ...opts, timeoutMs }, async ({ doc, tier: open, runId }) => {
    let t0 = 0; // fio's genesis: the files laid out, the first jobs ready to start their clocks
    let triggered = false;
    let trigger: ReturnType<typeof setTimeout> | undefined;
    const startClock = () => {
      if (t0 !== 0) return;
      t0 = performance.now();
      if (opts.triggerTimeoutMs === undefined) return;
      trigger = setTimeout(() => {
        triggered = true;
        endAll();
      }, opts.triggerTimeoutMs);
    };
    const results: (RunResult | undefined)[] = new Array(jobs.length).fill(undefined);
    const started = new Set<number>();
    const ended = new Set<number>();
    const running = new Map<number, Running>();
    // the jobs from one stonewall to the next (exit_what=stonewall ends them together)
    let walls = 0;
    const wall = jobs.map((j, i) => (i > 0 && j.stonewall ? ++walls : walls));
    const exitall = jobs.some((j) => j.exitall !== undefined);
    let closed = false; // nothing starts any more
    let thrown: unknown;
    const stopAll = (reason?: unknown) => {
      closed = true;
      for (const r of running.values()) r.stop.abort(reason);
    };
    const endAll = () => {
      closed = true;
      for (const r of running.values()) r.end.abort();
    };
    const onAbort = () => stopAll(opts.signal?.reason);
    opts.signal?.addEventListener("abort", onAbort);
    const afterEnd = (i: number) => {
      const s = jobs[i]!;
      const r = results[i];
      if (r?.status === "failed" && s.exitallOnError) stopAll(r.error);
      if (!exitall) return;
      const what = s.exitall ?? "group";
      if (what === "all") return endAll();
      for (const [k, other] of running) {
        const same = what === "group"
          ? (jobs[k]!.groupid ?? k) === (s.groupid ?? i)
          : wall[k] === wall[i];
        if (same) other.end.abort();
      }
    };
    const start = (i: number, together: Barrier) => {
      const s = jobs[i]!;
      const stop = new AbortController();
      const end = new AbortController();
      started.add(i);
      const done = (async () => {
        const tier = await open(s.job.tier, s.job.s3, `${runId}-j${i}`);
        opts.onRunStart?.(s.job, i);
        const delay = s.startDelayMs ?? 0;
        const job = s.job.fio ? { ...s.job, fio: { ...s.job.fio, laidOut: true } } : s.job;
        results[i] = await runJob(tier, job, {
          signal: stop.signal,
          stonewall: end.signal,
          // the jobs started together start their clocks together, as fio's threads do
          beforeStart: () => together.arrive(i),
          ...(opts.onProgress ? { onProgress: opts.onProgress } : {}),
          ...(opts.flows ? { flows: opts.flows } : {}),
          ...(delay > 0 ? { beforeClock: (signal) => sleepUntil(t0 + delay, signal) } : {}),
        });
      })().catch((e) => {
        thrown ??= e;
        stopAll(e);
      }).finally(() => {
        void together.arrive(i);
        ended.add(i);
        running.delete(i);
        afterEnd(i);
      });
      running.set(i, { stop, end, done });
    };
    try {
      const layout = new AbortController();
      const stopLayout = () => layout.abort();
      opts.signal?.addEventListener("abort", stopLayout);
      try {
        await layOutAll(jobs, results, started, ended, async (i, job) => {
          const tier = await open(job.tier, job.s3, `${runId}-j${i}`);
          return await runJob(tier, job, {
            signal: layout.signal,
            ...(opts.onProgress ? { onProgress: opts.onProgress } : {}),
          });
        });
      } finally {
        opts.signal?.removeEventListener("abort", stopLayout);
      }
      if (layout.signal.aborted) closed = true;
      for (;;) {
        // fio's run_threads: start, in order, what may start; a stonewall waits for an empty run
        const now: number[] = [];
        for (let i = 0; i < jobs.length && !closed; i++) {
          if (started.has(i)) continue;
          const s = jobs[i]!;
          if (s.stonewall && (running.size > 0 || now.length > 0)) break;
          if (s.waitFor !== undefined && !ended.has(s.waitFor)) continue;
          now.push(i);
          started.add(i);
        }
        const together = new Barrier(now);
        // before the jobs' own waits on it: their startdelay counts from t0
        void together.opened.then(startClock);
        for (const i of now) start(i, together);
        if (running.size === 0) break; // all ended, or what is left can never start
        await Promise.race([...running.values()].map((r) => r.done));
      }
    } finally {
      opts.signal?.removeEventListener("abort", onAbort);
      clearTimeout(trigger);
      await Promise.allSettled([...running.values()].map((r) => r.done));
    }
    if (thrown !== undefined) throw thrown;
    // as fio reports them: the jobs the run ended before they started, with nothing done
    if (triggered || closed) {
      for (const [i, s] of jobs.entries()) {
        if (results[i] || opts.signal?.aborted) continue;
        const tier = await open(s.job.tier, s.job.s3, `${runId}-j${i}`);
        const why = triggered
          ? "the run ended (--trigger-timeout) before it started"
          : "exit_what=all ended the run before it started";
        results[i] = notStartedResult(tier, s.job, why);
      }
    }
    for (const r of results) if (r) doc.runs.push(r);
    const bad = doc.runs.find((r) => r.status === "failed") ??
      doc.runs.find((r) => r.status !== "ok");
    if (bad) {
      if (bad.error !== undefined) doc.error = bad.error;
      return bad.status as RunStatus;
    }
    return opts.signal?.aborted ? "interrupted" : "ok";
  });
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
