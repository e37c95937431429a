/**
 * Test helper: a job engine run on this thread as a job Worker runs it, on a
 * runtime already told to go, with no time limit.
 *
 * @module
 */

import assert from "node:assert/strict";
import { CTL, type JobPlan, newSharedCounters, RUN } from "../core/job_protocol.ts";
import { type JobEngine, JobRuntime, warmUp } from "../engines/types.ts";

/** What {@linkcode driveEngine} does before the start barrier. */
export interface DriveOptions {
  /** Warm the engine up first (it must have `warm`), as a job Worker does. */
  warm?: boolean;
  /** Called after the warm-up, before the barrier. */
  beforeStart?: () => void;
}

/**
 * A 4 KiB random-read job of `engine` at depth 32, as a test runs one: on the
 * null tier for `noop`, else on the file `path`; `ioSize` bytes (0: its size
 * of 8 MiB). io_uring's plan asks for none of its options.
 */
export function readPlan(
  engine: "noop" | "libaio" | "io_uring",
  path = "",
  ioSize = 0,
): JobPlan {
  const file = engine !== "noop";
  return {
    job: 0,
    tier: file ? "file" : "null",
    engine,
    direct: false,
    rw: "randread",
    rwmixread: 100,
    bs: 4096,
    size: 8 << 20,
    ioSize,
    iodepth: 32,
    seed: 7,
    alignment: 4096,
    endFsync: false,
    target: file
      ? { paths: [path], regionOffset: 0, layout: "fallocate" }
      : { paths: [], regionOffset: 0, layout: "none" },
    ...(engine === "io_uring"
      ? { ioUring: { fixedbufs: false, registerfiles: false, sqthreadPoll: false } }
      : {}),
  };
}

/**
 * A runtime of `plan` with counters of its own (as many jobs as its index
 * needs), told to go, with no time limit, started.
 */
export function startedRuntime(plan: JobPlan): JobRuntime {
  const shared = newSharedCounters(plan.job + 1);
  shared.f64[RUN.RUNTIME_MS] = Infinity;
  Atomics.store(shared.ctl, CTL.GO, 1);
  const rt = new JobRuntime(plan, shared);
  assert.ok(rt.waitForStart());
  return rt;
}

/**
 * Opens the engine of `plan` with `open`, optionally warms it up, then runs
 * it to the end of its I/Os and closes it: the runtime, for its counts.
 */
export function driveEngine(
  plan: JobPlan,
  open: (plan: JobPlan) => JobEngine,
  options: DriveOptions = {},
): JobRuntime {
  const engine = open(plan);
  let rt: JobRuntime | undefined;
  try {
    if (options.warm) {
      assert.equal(typeof engine.warm, "function", "the engine warms its own loop");
      warmUp(plan, engine, 3000);
    }
    options.beforeStart?.();
    rt = startedRuntime(plan);
    engine.run(rt);
  } finally {
    engine.close();
    rt?.finish();
  }
  return rt;
}
