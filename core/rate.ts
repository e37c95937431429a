/**
 * Open-loop rate (`--rate`, `--rate-iops`, `--rate-process`; fio's rate,
 * rate_iops and rate_process): each job issues its requests on a schedule,
 * request k at its intended start t0 + k × interval (linear) or at the
 * cumulative sum of k exponential gaps of mean interval (poisson), never
 * before. Latency is measured from the intended start, so a tier that falls
 * behind shows it as latency instead of as fewer requests (no coordinated
 * omission).
 *
 * {@linkcode Pacer} is the schedule of one job inside its Worker: it waits
 * for each intended start, remembers the requests in flight (their intended
 * start and their real issue), and counts how far behind the job fell.
 *
 * @module
 */

import { XorShift32 } from "./offsets.ts";
import { monoNow } from "./libc.ts";
import { round3 } from "./stats.ts";

/** How intended starts are spaced, as fio names it. */
export const RATE_PROCESSES = ["linear", "poisson"] as const;
/** One of {@linkcode RATE_PROCESSES}. */
export type RateProcess = typeof RATE_PROCESSES[number];

/**
 * How far behind its schedule a job may end and still count as having kept
 * its rate: one interval (the request due next may be just due) plus this.
 */
export const RATE_TOLERANCE_MS = 10;

/** A job's rate as the options give it: bytes/s or I/Os per second per job, one of them. */
export interface RateOptions {
  /** --rate: bytes per second per job, both directions together. */
  readonly bytesPerS?: number;
  /** --rate-iops: I/Os per second per job, both directions together. */
  readonly iops?: number;
  readonly process: RateProcess;
}

/** What a job Worker needs of its rate: the mean time between intended starts and their spacing. */
export interface RatePlan {
  /** Mean ms between intended starts. */
  readonly intervalMs: number;
  readonly process: RateProcess;
}

/**
 * The mean time between intended starts of a job moving `bs` bytes a request.
 *
 * @example
 * ```ts
 * import { rateIntervalMs } from "./rate.ts";
 * console.assert(rateIntervalMs({ bytesPerS: 1 << 20, process: "linear" }, 64 << 10) === 62.5);
 * console.assert(rateIntervalMs({ iops: 200, process: "linear" }, 4096) === 5);
 * ```
 */
export function rateIntervalMs(rate: RateOptions, bs: number): number {
  if (rate.bytesPerS !== undefined) return (bs / rate.bytesPerS) * 1000;
  if (rate.iops !== undefined) return 1000 / rate.iops;
  throw new TypeError("a rate needs bytesPerS or iops");
}

/** How far one job kept to its schedule over the measured window. */
export interface JobSchedule {
  /** Requests whose intended start fell in the measured window (up to where the job stopped). */
  readonly intended_ios: number;
  /** Of those, the ones issued. */
  readonly issued_ios: number;
  /** The longest a measured request waited past its intended start, or the job at its end, ms. */
  readonly max_lag_ms: number;
  /** How far behind the job was when it stopped issuing, ms (0 when on time). */
  readonly final_lag_ms: number;
}

/** Whether a job that ended `finalLagMs` behind a schedule of `intervalMs` kept its rate. */
export function scheduleMet(finalLagMs: number, intervalMs: number): boolean {
  return finalLagMs <= intervalMs + RATE_TOLERANCE_MS;
}

/**
 * The intended starts of one job's requests, relative to its start: linear
 * (k × interval) or poisson (a sum of exponential gaps from the job's seed).
 *
 * @example
 * ```ts
 * import { Schedule } from "./rate.ts";
 * const s = new Schedule({ intervalMs: 10, process: "linear" }, 1);
 * console.assert(s.next() === 0 && s.next() === 10 && s.next() === 20);
 * ```
 */
export class Schedule {
  readonly #interval: number;
  readonly #rng: XorShift32 | undefined;
  #k = 0;
  #at = 0;

  /** The schedule of `plan`; `seed` draws a poisson process's gaps. */
  constructor(plan: RatePlan, seed: number) {
    this.#interval = plan.intervalMs;
    this.#rng = plan.process === "poisson" ? new XorShift32(seed) : undefined;
  }

  /** The next intended start, ms from the job's start (the first is 0). */
  next(): number {
    const k = this.#k++;
    if (this.#rng === undefined) return k * this.#interval;
    const at = this.#at;
    // An exponential gap of mean interval: −ln(1 − u) × interval, u uniform in [0, 1).
    this.#at += -Math.log(1 - this.#rng.next() / 2 ** 32) * this.#interval;
    return at;
  }
}

/** Sleeps in slices this long at most, looking at the stop flag between them. */
const WAIT_SLICE_MS = 50;
/** The most the wait spins before an intended start instead of sleeping. */
const MAX_SPIN_MS = 0.1;

/**
 * The schedule of one job inside its Worker.
 *
 * The engines time each request from the `now` they pass to
 * `JobRuntime.mayIssue` (its "prep" time) and report `lat = done − prep`; the
 * pacer keeps, for each request in flight, its prep time, its intended start
 * and its real issue time, and finds the request a completion belongs to by
 * its prep time (`done − lat`), so completions may come in any order.
 */
export class Pacer {
  readonly #schedule: Schedule;
  readonly #interval: number;
  #t0 = 0;
  #due = 0;
  #windowStart = 0;
  #windowEnd = Infinity;
  #stoppedAt = -1;
  #issued = 0;
  #maxLag = 0;
  // Requests in flight: prep time, intended start, issue time.
  #prep: number[] = [];
  #intended: number[] = [];
  #issuedAt: number[] = [];
  /** How late a sleep wakes, on average (ms): the wait sleeps until this long before the start, then spins. */
  #oversleep = 0.05;

  /** The pacer of a job with `plan`, its poisson gaps drawn from `seed`. */
  constructor(plan: RatePlan, seed: number) {
    this.#schedule = new Schedule(plan, seed);
    this.#interval = plan.intervalMs;
  }

  /** Starts the schedule at `t0` (monoNow); measured requests are those intended in [start, end). */
  start(t0: number, measureStart: number, measureEnd: number): void {
    this.#t0 = t0;
    this.#windowStart = measureStart;
    this.#windowEnd = measureEnd;
    this.#due = t0 + this.#schedule.next();
  }

  /** The intended start (monoNow ms) of the next request not yet issued. */
  get due(): number {
    return this.#due;
  }

  /**
   * Waits until the next request's intended start. Returns the moment it
   * may go (monoNow), or -1 when `stopped()` said so while waiting.
   */
  waitForDue(stopped: (sliceMs: number) => boolean): number {
    for (;;) {
      const now = monoNow();
      const left = this.#due - now;
      if (left <= 0) return now;
      if (left <= this.#oversleep) continue; // spin the last stretch
      const sleep = Math.min(left - this.#oversleep, WAIT_SLICE_MS);
      if (stopped(sleep)) return -1;
      // Learn how late sleeps wake (a moving average), so the spin covers it and little more.
      const late = Math.max(0, monoNow() - now - sleep);
      this.#oversleep = Math.min(MAX_SPIN_MS, this.#oversleep * 0.9 + late * 0.1);
    }
  }

  /** The next request goes at `issuedAt`; the engine timed it from `prep`. Moves to the next start. */
  issue(prep: number, issuedAt: number): void {
    const intended = this.#due;
    this.#prep.push(prep);
    this.#intended.push(intended);
    this.#issuedAt.push(issuedAt);
    if (intended >= this.#windowStart && intended < this.#windowEnd) {
      this.#issued++;
      this.#maxLag = Math.max(this.#maxLag, issuedAt - intended);
    }
    this.#due = this.#t0 + this.#schedule.next();
  }

  /** Marks the moment the job stopped issuing (the first refusal); returns that moment. */
  stop(now: number): number {
    if (this.#stoppedAt < 0) this.#stoppedAt = now;
    return this.#stoppedAt;
  }

  /**
   * The request a completion at `done` with `latNs` from its prep belongs
   * to, removed from those in flight: its intended start and issue time, or
   * undefined when none is in flight.
   */
  settle(
    done: number,
    latNs: number,
  ): { intended: number; issuedAt: number; prep: number } | undefined {
    const n = this.#prep.length;
    if (n === 0) return undefined;
    let best = 0;
    if (n > 1) {
      const prep = done - latNs / 1e6;
      for (let i = 1; i < n; i++) {
        if (Math.abs(this.#prep[i]! - prep) < Math.abs(this.#prep[best]! - prep)) best = i;
      }
    }
    const found = {
      intended: this.#intended[best]!,
      issuedAt: this.#issuedAt[best]!,
      prep: this.#prep[best]!,
    };
    this.#prep.splice(best, 1);
    this.#intended.splice(best, 1);
    this.#issuedAt.splice(best, 1);
    return found;
  }

  /** The issue time of the request in flight the engine timed from `prep`, else `prep`. */
  issuedAtOf(prep: number): number {
    const i = this.#prep.indexOf(prep);
    return i < 0 ? prep : this.#issuedAt[i]!;
  }

  /** How far the job kept to its schedule, once it stopped (at `now` if it never said). */
  summary(now: number): JobSchedule {
    const stoppedAt = this.#stoppedAt < 0 ? now : this.#stoppedAt;
    const end = Math.min(stoppedAt, this.#windowEnd);
    const finalLag = Math.max(0, end - this.#due);
    // The starts that were due in the window and never issued.
    let missed = 0;
    if (this.#due < end) {
      const from = Math.max(this.#due, this.#windowStart);
      let at = this.#due;
      // Poisson has no closed form: walk the schedule on (a copy would draw the same gaps).
      while (at < end) {
        if (at >= from) missed++;
        at = this.#t0 + this.#schedule.next();
      }
    }
    return {
      intended_ios: this.#issued + missed,
      issued_ios: this.#issued,
      max_lag_ms: round3(Math.max(this.#maxLag, finalLag)),
      final_lag_ms: round3(finalLag),
    };
  }

  /** The mean time between intended starts, ms. */
  get intervalMs(): number {
    return this.#interval;
  }
}

/** How far one rank's background stream to one path kept to its rate (`--background-rate`). */
export interface StreamScheduleSummary {
  /** Requests issued on the schedule. */
  readonly requests: number;
  /** Their bytes. */
  readonly bytes: number;
  /** The longest a request waited past its intended start, ms. */
  readonly max_lag_ms: number;
  /**
   * The most an op was behind its schedule when it issued its last request,
   * ms: how far behind the stream fell (0 when every op kept up).
   */
  readonly end_lag_ms: number;
}

/**
 * The open-loop schedule of a stream of whole objects at `bytesPerS`
 * (a workload's background stream under `--background-rate`): each object is
 * cut into requests, and a request of `b` bytes is intended to start `b /
 * rate` after the one before it, never before. The schedule starts at an
 * object's readiness when the stream was idle (its next intended start
 * already past when the object became ready), so idle time is not saved up
 * for a burst: from any start on, the bytes issued never run ahead of rate ×
 * time. A request that cannot go at its intended start (every slot busy, or a
 * tier slower than the rate) goes late, and the lag is kept.
 *
 * @example
 * ```ts
 * import { StreamSchedule } from "./rate.ts";
 * const s = new StreamSchedule(1 << 20); // 1 MiB/s
 * s.begin(1000);
 * console.assert(s.due === 1000);
 * s.take(256 << 10, 1000);
 * console.assert(s.due === 1250);
 * ```
 */
export class StreamSchedule {
  /** Bytes per second. */
  readonly bytesPerS: number;
  #next = -Infinity;
  #requests = 0;
  #bytes = 0;
  #maxLag = 0;
  #lastLag = 0;
  #endLag = 0;

  /** A schedule at `bytesPerS` (> 0). */
  constructor(bytesPerS: number) {
    if (!(bytesPerS > 0) || !Number.isFinite(bytesPerS)) {
      throw new RangeError(
        `a stream's rate must be a positive number of bytes/s, not ${bytesPerS}`,
      );
    }
    this.bytesPerS = bytesPerS;
  }

  /** An object became ready at `readyAt` (monoNow ms): an idle stream's schedule starts there. */
  begin(readyAt: number): void {
    if (readyAt > this.#next) this.#next = readyAt;
    this.#lastLag = 0;
  }

  /** The intended start (monoNow ms) of the next request. */
  get due(): number {
    return this.#next;
  }

  /** The next request, of `bytes`, goes at `issuedAt`: counts it and moves the schedule on. */
  take(bytes: number, issuedAt: number): void {
    const lag = Math.max(0, issuedAt - this.#next);
    this.#maxLag = Math.max(this.#maxLag, lag);
    this.#lastLag = lag;
    this.#next += (bytes / this.bytesPerS) * 1000;
    this.#requests++;
    this.#bytes += bytes;
  }

  /** The object's last request has gone: its lag then is how far behind the object ended. */
  end(): void {
    this.#endLag = Math.max(this.#endLag, this.#lastLag);
  }

  /** What the stream did so far. */
  summary(): StreamScheduleSummary {
    return {
      requests: this.#requests,
      bytes: this.#bytes,
      max_lag_ms: round3(this.#maxLag),
      end_lag_ms: round3(this.#endLag),
    };
  }
}
