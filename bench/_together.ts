/**
 * Jobs started together on several tiers, each in its direction, with one
 * moment for all to start measuring: what the contention matrix's groups
 * and the concurrency curves' mixed points run (bench/contention.ts,
 * bench/concurrency.ts). Across processes, the members also wait at the
 * processes' barrier and the outcomes are made into one.
 *
 * @module
 */

import type { JobOptions } from "../core/config.ts";
import type { RunResult } from "../schema/result.ts";
import type { RunStatus } from "../schema/run_status.ts";
import type { ContentionDirection, ContentionWindow } from "../schema/contention.ts";
import type { Tier } from "../tiers/types.ts";
import { runJob, type RunProgress } from "./runner.ts";
import { layoutClear } from "./contention_groups.ts";
import { type SteadyCriterion, SteadyStop } from "./steady.ts";
import type { WorkerPool } from "./_worker_pool.ts";

/** What {@linkcode runTogether} and {@linkcode stopped} read of a command's options. */
export interface TogetherOptions {
  readonly signal?: AbortSignal | undefined;
  /** Progress of each member, named after the group. */
  readonly onProgress?: ((p: RunProgress) => void) | undefined;
  /** Keeps the run in step with the same run on other processes; absent, it runs on its own. */
  readonly coordinate?: ContentionCoordination | undefined;
  /**
   * Stop a run's members together once every one's bandwidth is steady (at
   * most their runtime); not across processes, which must stop alike.
   */
  readonly steady?: SteadyCriterion | undefined;
  /** Job Workers reused from run to run (the session's). */
  readonly workers?: WorkerPool | undefined;
}

/**
 * How one process's matrix keeps in step with the others' when every
 * process of a launch runs it at once: a barrier before every measured
 * phase, and an exchange of each process's view after it, from which every
 * process makes the same decisions (go on or stop, run a group again, how
 * long to ramp). Every process calls the same steps in the same order.
 */
export interface ContentionCoordination {
  /**
   * Resolves once every process has laid out the files of the phase
   * `label` (the same label on every process), so all start ramping
   * together; throws when a process is lost or late, which ends the matrix.
   */
  barrier(label: string): Promise<void>;
  /** This process's rank: its own value's place in {@linkcode share}'s answer. */
  readonly rank: number;
  /** Every process's `value` (plain JSON), by rank, on every process. */
  share<T>(value: T): Promise<T[]>;
  /** How a message names the process of rank `rank` ("rank 1 on node7"). */
  name(rank: number): string;
}

/** Absolute time in ms, the runner's clock. */
export function nowAbs(): number {
  return performance.timeOrigin + performance.now();
}

/** Learns a run's layout start and measure start from its progress events. */
class WindowClock {
  layoutStart: number | undefined;
  /** When the run had laid out and met the others (its `beforeStart`). */
  layoutEnd: number | undefined;
  measureStart: number | undefined;

  see(p: RunProgress): void {
    const now = nowAbs();
    this.layoutStart ??= now;
    // The runner reports ms since measurement began (negative in the ramp).
    if (p.phase !== "layout") this.measureStart ??= now - p.elapsedMs;
  }
}

export function round1(x: number): number {
  return Math.round(x * 10) / 10;
}

/** Each member's windows, relative to the group's first layout. */
function windowsOf(
  clocks: readonly WindowClock[],
  results: readonly RunResult[],
  directions: readonly ContentionDirection[],
): (ContentionWindow | null)[] {
  const starts = clocks.map((c) => c.layoutStart).filter((t) => t !== undefined);
  const t0 = Math.min(...starts);
  return clocks.map((c, k) => {
    if (c.layoutStart === undefined || c.measureStart === undefined) return null;
    const r = results[k]!;
    const ms = c.measureStart - t0;
    return {
      layout_start: round1(c.layoutStart - t0),
      ...(c.layoutEnd === undefined ? {} : { layout_end: round1(c.layoutEnd - t0) }),
      ramp_start: round1(ms - r.ramp.ms),
      measure_start: round1(ms),
      measure_end: round1(ms + r[directions[k]!].runtime),
    };
  });
}

/**
 * One moment at which every member of a group starts measuring: the first
 * member whose Workers are ready ramps for the planned time, and each later
 * one for the time left until then. The runner reads a job's `rampMs` once,
 * when every Worker of the job has laid out its files and waits at the start
 * barrier, and measures from that moment plus `rampMs`; a job made by
 * {@linkcode SharedStart.job} answers that read with the time left. A member
 * ready after the moment has passed ramps for 0 and starts late, which its
 * window shows (and the group is run again with a longer ramp).
 */
export class SharedStart {
  readonly #plannedMs: number;
  #at: number | undefined;

  constructor(plannedMs: number) {
    this.#plannedMs = plannedMs;
  }

  /** The ramp left for a member ready now. */
  #rampNow(): number {
    const now = nowAbs();
    this.#at ??= now + this.#plannedMs;
    return Math.max(0, this.#at - now);
  }

  /** `job` with a ramp fixed the first time it is read (then stable, for the results). */
  job(job: JobOptions): JobOptions {
    let ramp: number | undefined;
    return Object.defineProperty({ ...job }, "rampMs", {
      get: () => (ramp ??= Math.round(this.#rampNow() * 1000) / 1000),
      enumerable: true,
    });
  }
}

/** What one run of a group gave. */
export interface GroupRun {
  readonly results: RunResult[];
  readonly windows: (ContentionWindow | null)[];
  /** Each member's measurement start, ms after the processes' barrier (0 without one). */
  readonly startMs: number[];
  /** What every process's run of this group decided together ({@linkcode Verdict}). */
  readonly agreed: Agreed;
  /** Each member's bandwidth samples while measuring, with `o.steady` (its `sampleMs` each). */
  readonly samples: number[][];
}

/** What one process tells the others after a run of a group. */
interface Verdict {
  readonly status: RunStatus;
  readonly error?: string;
  /** Its members' layouts were clear of each other's windows (layoutClear). */
  readonly clear: boolean | null;
  /** How far apart its members were ready (ms); 0 when a window is unknown. */
  readonly spread: number;
  /** Each member's layout, ms (null when unknown). */
  readonly layout: (number | null)[];
}

/** The processes' verdicts made into one, the same on every process. */
export interface Agreed {
  /** A failure anywhere outranks an interruption anywhere. */
  readonly status: RunStatus;
  /** This process's error, else the first other process's, named. */
  readonly error?: string;
  /** Some process's layout fell inside a measured window. */
  readonly unclear: boolean;
  /** The largest spread. */
  readonly spread: number;
  /** Each member's longest layout (null when no process knew it). */
  readonly layout: (number | null)[];
}

function verdictOf(
  results: readonly RunResult[],
  windows: readonly (ContentionWindow | null)[],
): Verdict {
  const clear = layoutClear(windows);
  const known = windows.every((w) => w !== null);
  const laidOut = (w: ContentionWindow) => w.layout_end ?? w.ramp_start;
  const ready = known ? (windows as ContentionWindow[]).map(laidOut) : [];
  return {
    ...groupStatus(results),
    clear,
    spread: known ? Math.max(...ready) - Math.min(...ready) : 0,
    layout: windows.map((w) => w ? laidOut(w) - w.layout_start : null),
  };
}

/** Every process's verdict made into one; this process's own is `verdicts[mine]`. */
function agree(verdicts: readonly Verdict[], mine: number, name: (rank: number) => string): Agreed {
  const statuses = verdicts.map((v) => v.status);
  const status: RunStatus = statuses.includes("failed")
    ? "failed"
    : statuses.includes("interrupted")
    ? "interrupted"
    : "ok";
  const own = verdicts[mine]!;
  let error: string | undefined;
  if (own.status !== "ok") error = own.error;
  else {
    const rank = verdicts.findIndex((v) => v.status === status && v.status !== "ok");
    if (rank >= 0) error = `${name(rank)}: ${verdicts[rank]!.error ?? verdicts[rank]!.status}`;
  }
  const layout = own.layout.map((_, k) => {
    const known = verdicts.map((v) => v.layout[k]).filter((l) => l !== null && l !== undefined);
    return known.length > 0 ? Math.max(...known) : null;
  });
  return {
    status,
    ...(error === undefined ? {} : { error }),
    unclear: verdicts.some((v) => v.clear === false),
    spread: Math.max(...verdicts.map((v) => v.spread)),
    layout,
  };
}

/** `verdict` made into one with every other process's (as is without coordination). */
async function agreeOn(verdict: Verdict, o: TogetherOptions): Promise<Agreed> {
  if (!o.coordinate) return agree([verdict], 0, String);
  const all = await o.coordinate.share(verdict);
  return agree(all, o.coordinate.rank, o.coordinate.name);
}

/**
 * The members' meeting before one run of a group: once every local member
 * has laid out (or ended without), `meet` once (the processes' barrier, or
 * nothing on one process); the members waiting in their `beforeStart` go on
 * when it resolves.
 */
class LocalGate {
  #left: number;
  readonly #met = Promise.withResolvers<void>();
  /** When the barrier released (absolute ms). */
  released: number | undefined;
  /** The barrier's failure: the processes are out of step. */
  failed: { error: unknown } | undefined;

  constructor(members: number, readonly meet: () => Promise<void>) {
    this.#left = members;
    this.#met.promise.catch(() => {});
  }

  /** A member laid out: waits for the barrier. */
  arrive(): Promise<void> {
    this.#count();
    return this.#met.promise;
  }

  /** A member ended without arriving. */
  leave(): void {
    this.#count();
  }

  /** Resolves once the barrier was met (or failed). */
  get done(): Promise<void> {
    return this.#met.promise.catch(() => {});
  }

  #count(): void {
    if (--this.#left > 0) return;
    this.meet().then(() => {
      this.released = nowAbs();
      this.#met.resolve();
    }, (error) => {
      this.failed = { error };
      this.#met.reject(error);
    });
  }
}

/**
 * Starts every member's job at once: each lays out its files, all wait until
 * every one has (and, with `o.coordinate`, for the other processes), then
 * they ramp together for `rampMs` ({@linkcode SharedStart}) and measure over
 * one window, which ends for all at once when `o.steady` finds them steady;
 * then it waits for all of them. A member that fails or throws stops the others
 * (they end "interrupted"); a throw is rethrown once every member has
 * stopped, so no Worker outlives the call. With `o.coordinate`, the members
 * wait for the other processes once all have laid out, and the processes'
 * outcomes are made into one ({@linkcode GroupRun.agreed}); a throw is told
 * the others before it is rethrown.
 */
export async function runTogether(
  members: readonly {
    tier: Tier;
    job: JobOptions;
    direction: ContentionDirection;
    /** The tier's label, for the progress line. */
    label: string;
  }[],
  rampMs: number,
  label: string,
  o: TogetherOptions,
): Promise<GroupRun> {
  const stop = new AbortController();
  const relay = () => stop.abort(o.signal?.reason);
  o.signal?.addEventListener("abort", relay);
  if (o.signal?.aborted) relay();
  const clocks = members.map(() => new WindowClock());
  const start = new SharedStart(rampMs);
  const coordinate = o.coordinate;
  // no member ramps while another still lays out: they meet first (and the processes, if any)
  const gate = new LocalGate(
    members.length,
    coordinate ? () => coordinate.barrier(label) : () => Promise.resolve(),
  );
  const steady = new SteadyStop(coordinate ? undefined : o.steady, members.length);
  const starts = members.map(() => 0);
  try {
    const settled = await Promise.allSettled(members.map(async (m, k) => {
      let arrived = false;
      const r = await runJob(m.tier, start.job(m.job), {
        signal: stop.signal,
        onProgress: (p) => {
          clocks[k]!.see(p);
          steady.see(k, p);
          // every member on one line: each tier's rate in the group
          o.onProgress?.({ ...p, name: label, tier: `${m.label} ${m.direction}` });
        },
        beforeStart: () => {
          arrived = true;
          clocks[k]!.layoutEnd = nowAbs();
          return gate.arrive();
        },
        ...(coordinate
          ? { onMeasureStart: (t: number) => (starts[k] = t - (gate.released ?? t)) }
          : {}),
        stonewall: steady.signal,
        workers: o.workers,
      }).catch((e) => {
        stop.abort(e);
        throw e;
      }).finally(() => {
        if (!arrived) gate.leave();
      });
      if (r.status === "failed") stop.abort(r.error);
      return r;
    }));
    await gate.done;
    // A process lost or late at the barrier: the others are out of step, stop here.
    if (gate.failed) throw gate.failed.error;
    const thrown = settled.find((s) => s.status === "rejected");
    if (thrown) {
      if (coordinate) {
        const error = thrown.reason instanceof Error
          ? thrown.reason.message
          : String(thrown.reason);
        await coordinate.share({ status: "failed", error, clear: null, spread: 0, layout: [] });
      }
      throw thrown.reason;
    }
    const results = settled.map((s) => (s as PromiseFulfilledResult<RunResult>).value);
    const stated = steady.result();
    if (stated) { for (const r of results) r.steady = stated; }
    const directions = members.map((m) => m.direction);
    const windows = windowsOf(clocks, results, directions);
    const agreed = await agreeOn(verdictOf(results, windows), o);
    return { results, windows, startMs: starts, agreed, samples: steady.samples() };
  } finally {
    o.signal?.removeEventListener("abort", relay);
  }
}

/** The status and first error of a group's runs: a failure outranks an interruption. */
export function groupStatus(results: readonly RunResult[]): { status: RunStatus; error?: string } {
  const failed = results.find((r) => r.status === "failed");
  const bad = failed ?? results.find((r) => r.status !== "ok");
  if (!bad) return { status: "ok" };
  return bad.error === undefined
    ? { status: bad.status }
    : { status: bad.status, error: bad.error };
}

/** An agreed outcome as a status and its error. */
export function statusOf(a: Agreed): { status: RunStatus; error?: string } {
  if (a.status === "ok") return { status: "ok" };
  return a.error === undefined ? { status: a.status } : { status: a.status, error: a.error };
}

/**
 * Whether to stop before the next group: this process was interrupted, or
 * (with coordination) any process was, so all stop at the same point.
 */
export async function stopped(o: TogetherOptions): Promise<boolean> {
  const mine = o.signal?.aborted ?? false;
  if (!o.coordinate) return mine;
  return (await o.coordinate.share(mine)).some(Boolean);
}
