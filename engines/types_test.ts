import assert from "node:assert/strict";
import { CTL, type JobPlan, newSharedCounters, RUN } from "../core/job_protocol.ts";
import { type JobEngine, type JobRuntime, TIMES, WARM_UP_CALLS, warmUp } from "./types.ts";
import { encodeDirection } from "../core/latency_buckets.ts";
import { monoNow } from "../core/libc.ts";
import {
  decodeHistogram,
  encodeHistogram,
  histogramsOfCounts,
  LATENCY_KINDS,
  latencyStats,
  newLatencyHistograms,
} from "../core/recorder.ts";
import { NoopEngine } from "./noop.ts";
import { startedRuntime } from "../tests/_drive_engine.ts";

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
      rt.finish(); // before warmUp discards what it counted
    },
    close() {},
  };
  const t0 = performance.now();
  warmUp(PLAN, engine, 5000);
  assert.ok(performance.now() - t0 < 5000, "a closed-loop warm-up: no rate to wait for");
  assert.deepEqual(shared.f64, before);
  assert.equal(Atomics.load(shared.ctl, CTL.GO), 0);
  // The engine's loop ran on runtimes of its own, called often enough that V8 compiles it for the
  // window before the last call (warm_up_tier_test.ts), the I/Os shared among the calls, each call
  // stopped by its io_size once past its ramp.
  assert.equal(new Set(warmedOn).size, WARM_UP_CALLS);
  const each = Math.ceil(5000 / WARM_UP_CALLS);
  for (const rt of warmedOn) {
    // io_size counts what is issued past the ramp; one issued in it may complete past it.
    const done = rt.read.lat.totalCount + rt.write.lat.totalCount;
    assert.ok(done >= each && done <= each + 1, `${done} of ${each}`);
    assert.equal(rt.schedule(), undefined, "no rate");
    assert.equal(rt.intervals(), undefined, "no interval log");
  }
});

Deno.test("a job's latencies sent as counts read as the HDR histograms a Worker used to record and encode", () => {
  const { rate: _rate, ...closedLoop } = PLAN;
  const rt = startedRuntime({ ...closedLoop, logAvgMsec: 50 });
  const direct = { read: newLatencyHistograms(), write: newLatencyHistograms() };
  const ns = (x: number) => x < 1 ? 1 : Math.round(x);
  // total latencies from 0.3 ns to past 2^32 ns; reads with a submission step and a first byte
  const lats = [0.3, 1, 2047.5, 4993, 123_456, 2 ** 32 - 1, 2 ** 32 + 5, 9e9, 77_777];
  const t0 = monoNow();
  lats.forEach((lat, i) => {
    const slat = i * 997;
    // 20 ms apart: the logging intervals fold the counts several times on the way
    rt.times.set([t0 + i * 20, lat, slat, lat / 2], TIMES.DONE);
    rt.complete(true);
    rt.times.set([t0 + i * 20, lat + 3, -1, -1], TIMES.DONE);
    rt.complete(false);
    direct.read.lat.recordValue(ns(lat));
    direct.read.slat.recordValue(ns(slat));
    direct.read.clat.recordValue(ns(lat) > ns(slat) ? ns(lat) - ns(slat) : 1);
    direct.read.ttfb.recordValue(ns(lat / 2));
    direct.write.lat.recordValue(ns(lat + 3));
    direct.write.clat.recordValue(ns(lat + 3)); // a synchronous engine's: its total latency
  });
  rt.finish();
  for (const dir of ["read", "write"] as const) {
    const sent = histogramsOfCounts(structuredClone(encodeDirection(rt[dir])));
    for (const kind of LATENCY_KINDS) {
      const before = decodeHistogram(encodeHistogram(direct[dir][kind]));
      assert.equal(encodeHistogram(sent[kind]), encodeHistogram(before), `${dir} ${kind}`);
      assert.deepEqual(latencyStats(sent[kind]), latencyStats(before), `${dir} ${kind}`);
    }
  }
  assert.equal(rt.read.lat.totalCount, lats.length);
  assert.ok(rt.intervals()!.read.length >= 3, "the counts were folded at several boundaries");
});
