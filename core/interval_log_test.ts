import assert from "node:assert/strict";
import { intervalLatency, IntervalLog } from "./interval_log.ts";
import { newHistogram } from "./recorder.ts";

/** Within HDR's 3 significant digits. */
function near(actual: number | null | undefined, expected: number): void {
  assert.ok(typeof actual === "number", `expected ~${expected}, got ${actual}`);
  assert.ok(Math.abs(actual - expected) <= expected * 0.001, `${actual} is not ~${expected}`);
}

Deno.test("each interval's p50, p99 and max come from that interval's samples only", () => {
  const [read, write] = [newHistogram(), newHistogram()];
  const log = new IntervalLog(100, 1000);
  // interval 1 (1000–1100 ms): 1..100 µs; interval 2: nothing; interval 3: 1..100 ms
  for (let i = 1; i <= 100; i++) read.recordValue(i * 1000);
  log.close(1150, read, write);
  log.close(1250, read, write); // the empty second interval
  for (let i = 1; i <= 100; i++) read.recordValue(i * 1_000_000);
  log.close(1300, read, write);
  const snaps = log.snapshots();
  assert.equal(snaps.read.length, 3);
  assert.deepEqual(snaps.write, ["", "", ""]); // no write ever: nothing encoded
  const lat = intervalLatency([snaps.read], 4);
  near(lat.p50_ns[0], 50_000);
  near(lat.p99_ns[0], 99_000);
  near(lat.max_ns[0], 100_000);
  assert.equal(lat.p50_ns[1], null);
  assert.equal(lat.max_ns[1], null);
  near(lat.p50_ns[2], 50_000_000);
  near(lat.max_ns[2], 100_000_000);
  assert.equal(lat.p99_ns[3], null); // past the last snapshot: nothing more completed
  assert.deepEqual(intervalLatency([snaps.write], 3).p50_ns, [null, null, null]);
});

Deno.test("jobs' intervals merge by counts, and a job that ended adds nothing afterwards", () => {
  const a = { read: newHistogram(), write: newHistogram() };
  const b = { read: newHistogram(), write: newHistogram() };
  const la = new IntervalLog(1000, 0);
  const lb = new IntervalLog(1000, 0);
  // interval 1: job a 99 × 1 µs, job b 1 × 1 s; interval 2: job a only, 10 × 5 µs
  for (let i = 0; i < 99; i++) a.read.recordValue(1000);
  b.read.recordValue(1_000_000_000);
  la.close(1000, a.read, a.write);
  lb.close(1000, b.read, b.write);
  lb.finish(b.read, b.write); // b ended at its first boundary: nothing new, no snapshot
  for (let i = 0; i < 10; i++) a.read.recordValue(5000);
  la.close(2000, a.read, a.write);
  assert.equal(lb.snapshots().read.length, 1);
  const lat = intervalLatency([la.snapshots().read, lb.snapshots().read], 2);
  near(lat.p50_ns[0], 1000); // the merged 100 samples: 99 of 1 µs…
  near(lat.max_ns[0], 1_000_000_000); // …and b's one of 1 s
  near(lat.p50_ns[1], 5000);
  near(lat.max_ns[1], 5000); // b's 1 s stays in the first interval
});

Deno.test("a job that ends inside an interval snapshots it once, then logs nothing more", () => {
  const [read, write] = [newHistogram(), newHistogram()];
  const log = new IntervalLog(1000, 0);
  write.recordValue(2000);
  log.close(1000, read, write);
  write.recordValue(7000);
  log.finish(read, write); // the partial second interval
  log.close(10_000, read, write); // after finish: no more intervals
  log.finish(read, write);
  assert.equal(log.snapshots().write.length, 2);
  assert.equal(log.end, Infinity);
  const lat = intervalLatency([log.snapshots().write], 2);
  near(lat.max_ns[0], 2000);
  near(lat.max_ns[1], 7000);
  assert.throws(() => new IntervalLog(0, 0), RangeError);
});
