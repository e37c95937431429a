import assert from "node:assert/strict";
import { CTL, type JobPlan, newSharedCounters, RUN } from "../core/job_protocol.ts";
import { type JobEngine, type JobRuntime, warmUp } from "./types.ts";
import { NoopEngine } from "./noop.ts";

/** A null-tier job of a rate and an interval log, so that a throwaway runtime must drop both. */
const PLAN: JobPlan = {
  job: 3,
  tier: "null",
  target: { paths: [], regionOffset: 0, layout: "none" },
  engine: "noop",
  direct: false,
  rw: "randrw",
  rwmixread: 50,
  bs: 4096,
  size: 1 << 20,
  ioSize: 0,
  iodepth: 1,
  seed: 7,
  alignment: 4096,
  endFsync: false,
  rate: { intervalMs: 1000, process: "linear" },
  logAvgMsec: 100,
};

Deno.test("warmUp runs the per-I/O path and a no-I/O engine's loop, several times, on counters of their own, and returns at once", () => {
  // The job's real counters: warmUp must leave them as they are.
  const shared = newSharedCounters(PLAN.job + 1);
  shared.f64[RUN.RUNTIME_MS] = Infinity;
  const before = shared.f64.slice();
  const warmedOn: JobRuntime[] = [];
  const engine: JobEngine = {
    run() {},
    warm(rt) {
      warmedOn.push(rt);
      new NoopEngine().run(rt);
    },
    close() {},
  };
  const t0 = performance.now();
  warmUp(PLAN, engine, 5000);
  assert.ok(performance.now() - t0 < 5000, "a closed-loop warm-up: no rate to wait for");
  assert.deepEqual(shared.f64, before);
  assert.equal(Atomics.load(shared.ctl, CTL.GO), 0);
  // The engine's loop ran on runtimes of its own, called several times, each stopped by its
  // io_size once past its ramp.
  assert.equal(new Set(warmedOn).size, 10);
  for (const rt of warmedOn) {
    rt.finish();
    // io_size counts what is issued past the ramp; one issued in it may complete past it.
    const done = rt.read.lat.totalCount + rt.write.lat.totalCount;
    assert.ok(done >= 500 && done <= 501, `${done}`);
    assert.equal(rt.schedule(), undefined, "no rate");
    assert.equal(rt.intervals(), undefined, "no interval log");
  }
});
