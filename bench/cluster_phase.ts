/**
 * One measured phase run by some or all processes of a group at once: the
 * participants lay out, meet the others at a barrier so their ramps start
 * together, measure, and send their results to the root; the others only
 * keep the group's steps. The building block of `run` across processes and of
 * `bench`'s remote scaling curve.
 *
 * @module
 */

import { type Group, NO_DEADLINE_MS } from "../cluster/types.ts";
import type { JobOptions } from "../core/config.ts";
import type { RunResult } from "../schema/result.ts";
import type { Tier } from "../tiers/types.ts";
import type { ProcessRun } from "./cluster_aggregate.ts";
import { type RunHooks, runJob } from "./runner.ts";
import { errorLine } from "../core/errors.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** JSON to bytes, for a group's messages. */
export function encodeJson(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

/** Bytes from {@linkcode encodeJson} back to a value. */
export function decodeJson<T>(bytes: Uint8Array): T {
  return JSON.parse(decoder.decode(bytes)) as T;
}

/**
 * A phase that a group step ended (a member lost or late): carries this
 * process's own result, measured or cut short, and the step's error as
 * `cause`.
 */
export class PhaseError extends Error {
  override name = "PhaseError";
  constructor(readonly run: RunResult | undefined, cause: unknown) {
    super(errorLine(cause), { cause });
  }
}

/** What a process sends the root after a phase; `run` absent when it sat the phase out. */
interface PhaseReport {
  run?: RunResult;
  startMs: number;
}

/** How one process takes part in a phase. */
export interface PhaseOptions {
  /** The phase's name in barrier errors ("the start of run read-1m"). */
  readonly name: string;
  /** The tier to measure on, or undefined to sit this phase out. */
  readonly tier: Tier | undefined;
  readonly job: JobOptions;
  /** How long a member may be late at the barrier, ms. */
  readonly timeoutMs: number;
  readonly hooks?: Omit<RunHooks, "beforeStart" | "onMeasureStart" | "stonewall">;
  /**
   * IOR's stonewalling: the first participant to finish its I/O stops every
   * other one; their runs end "ok" with what they moved until then.
   */
  readonly stonewalling?: boolean;
}

/** What a phase gave this process (and, on the root, every participant). */
export interface PhaseOutcome {
  /** This process's own result; undefined when it sat out. */
  readonly run: RunResult | undefined;
  /** When its measurement began, ms after the barrier. */
  readonly startMs: number;
  /** Time spent waiting at the barrier and at the gather, ms. */
  readonly barrierMs: number;
  readonly gatherMs: number;
  /** On the root: every participant's result, by rank; undefined elsewhere. */
  readonly parts: ProcessRun[] | undefined;
}

/**
 * Runs one phase on this process: `opts.tier` undefined sits it out but
 * still meets the others at the barrier and the gather. Throws what the
 * group's steps throw (a member lost or late).
 *
 * @example
 * ```ts ignore
 * const out = await runPhase(group, { name: "write 1m", tier, job, timeoutMs: 30_000 });
 * if (out.parts) console.log(aggregateRun(out.parts).section.write.common_bw_bytes);
 * ```
 */
export async function runPhase(group: Group, opts: PhaseOptions): Promise<PhaseOutcome> {
  let released = 0, startMs = 0, barrierMs = 0, met = false;
  let failed: { error: unknown } | undefined;
  const barrier = async () => {
    met = true;
    const t0 = performance.now();
    try {
      await group.barrier(opts.name, opts.timeoutMs);
    } catch (error) {
      failed = { error };
      throw error;
    }
    barrierMs = performance.now() - t0;
    released = performance.timeOrigin + performance.now();
  };
  let run: RunResult | undefined;
  if (opts.tier) {
    const wall = opts.stonewalling ? group.stonewall(opts.name) : undefined;
    run = await runJob(opts.tier, opts.job, {
      ...opts.hooks,
      beforeStart: barrier,
      onMeasureStart: (start) => (startMs = start - released),
      ...(wall ? { stonewall: wall.signal } : {}),
    });
    if (run.status === "ok") wall?.finished();
    // A run that failed before its clock started still keeps the group in step.
    if (!met) await barrier();
  } else {
    await barrier();
  }
  // A member late or lost at the barrier: the group is out of step, no gather.
  if (failed) throw new PhaseError(run, failed.error);
  const t0 = performance.now();
  let reports: Uint8Array[] | undefined;
  try {
    reports = await group.gather(
      encodeJson({ ...(run ? { run } : {}), startMs } satisfies PhaseReport),
      NO_DEADLINE_MS,
    );
  } catch (e) {
    throw new PhaseError(run, e);
  }
  const gatherMs = performance.now() - t0;
  const parts = reports?.flatMap((bytes, rank): ProcessRun[] => {
    const r = decodeJson<PhaseReport>(bytes);
    return r.run ? [{ rank, node: group.members[rank]!.node, startMs: r.startMs, run: r.run }] : [];
  });
  return { run, startMs, barrierMs, gatherMs, parts };
}
