import assert from "node:assert/strict";
import fc from "fast-check";
import { intervalLatency } from "./interval_latency.ts";
import { IntervalLog } from "./interval_log.ts";
import { LatencyBuckets } from "./latency_buckets.ts";
import { decodeHistogram, encodeHistogram, type Histogram, newHistogram } from "./recorder.ts";

/** Within HDR's 3 significant digits. */
function near(actual: number | null | undefined, expected: number): void {
  assert.ok(typeof actual === "number", `expected ~${expected}, got ${actual}`);
  assert.ok(Math.abs(actual - expected) <= expected * 0.001, `${actual} is not ~${expected}`);
}

/** A job's total-latency recorders as the job runtime holds them, and its interval log. */
function job(intervalMs: number, start: number) {
  const read = new LatencyBuckets(newHistogram());
  const write = new LatencyBuckets(newHistogram());
  const log = new IntervalLog(intervalMs, start);
  return {
    read,
    write,
    log,
    /** The boundary code: fold into the open interval, then file the intervals that ended. */
    close(now: number) {
      read.foldInto(log.read);
      write.foldInto(log.write);
      log.close(now);
    },
    finish() {
      read.foldInto(log.read);
      write.foldInto(log.write);
      log.finish();
    },
  };
}

Deno.test("each interval's p50, p99 and max come from that interval's samples only", () => {
  const j = job(100, 1000);
  // interval 1 (1000–1100 ms): 1..100 µs; interval 2: nothing; interval 3: 1..100 ms
  for (let i = 1; i <= 100; i++) j.read.record(i * 1000);
  j.close(1150);
  j.close(1250); // the empty second interval
  for (let i = 1; i <= 100; i++) j.read.record(i * 1_000_000);
  j.close(1300);
  const snaps = j.log.snapshots();
  assert.equal(snaps.read.length, 3);
  assert.deepEqual(snaps.write, [[], [], []]); // no write ever: nothing kept
  const lat = intervalLatency([snaps.read], 4);
  near(lat.p50_ns[0], 50_000);
  near(lat.p99_ns[0], 99_000);
  near(lat.max_ns[0], 100_000);
  assert.equal(lat.p50_ns[1], null);
  assert.equal(lat.max_ns[1], null);
  near(lat.p50_ns[2], 50_000_000);
  near(lat.max_ns[2], 100_000_000);
  assert.equal(lat.p99_ns[3], null); // past the last interval: nothing more completed
  assert.deepEqual(intervalLatency([snaps.write], 3).p50_ns, [null, null, null]);
});

Deno.test("jobs' intervals merge by counts, and a job that ended adds nothing afterwards", () => {
  const a = job(1000, 0);
  const b = job(1000, 0);
  // interval 1: job a 99 × 1 µs, job b 1 × 1 s; interval 2: job a only, 10 × 5 µs
  for (let i = 0; i < 99; i++) a.read.record(1000);
  b.read.record(1_000_000_000);
  a.close(1000);
  b.close(1000);
  b.finish(); // b ended at its first boundary: nothing new, no interval
  for (let i = 0; i < 10; i++) a.read.record(5000);
  a.close(2000);
  assert.equal(b.log.snapshots().read.length, 1);
  const lat = intervalLatency([a.log.snapshots().read, b.log.snapshots().read], 2);
  near(lat.p50_ns[0], 1000); // the merged 100 samples: 99 of 1 µs…
  near(lat.max_ns[0], 1_000_000_000); // …and b's one of 1 s
  near(lat.p50_ns[1], 5000);
  near(lat.max_ns[1], 5000); // b's 1 s stays in the first interval
});

Deno.test("a job that ends inside an interval files it once, then logs nothing more", () => {
  const j = job(1000, 0);
  j.write.record(2000);
  j.close(1000);
  j.write.record(7000);
  j.finish(); // the partial second interval
  j.close(10_000); // after finish: no more intervals
  j.finish();
  assert.equal(j.log.snapshots().write.length, 2);
  assert.equal(j.log.end, Infinity);
  const lat = intervalLatency([j.log.snapshots().write], 2);
  near(lat.max_ns[0], 2000);
  near(lat.max_ns[1], 7000);
  assert.throws(() => new IntervalLog(0, 0), RangeError);
});

Deno.test("an interval keeps only the buckets its samples touched", () => {
  const j = job(1000, 0);
  for (let i = 0; i < 10_000; i++) j.read.record(1000 + (i % 3));
  j.read.record(9_000_000_000); // over 2^32 ns: kept as the value it is
  j.close(1000);
  // min, max and the one bucket between them hold the rest: four pairs
  assert.deepEqual(j.log.snapshots().read[0], [
    9_000_000_000,
    1,
    1000,
    1,
    1002,
    1,
    1000,
    3333,
    1001,
    3333,
    1002,
    3332,
  ]);
});

// The reference: each job's whole cumulative histogram encoded at every boundary, and the
// runner's delta of merged cumulative histograms, as the interval log did before it went sparse.

function referenceSnapshots(h: Histogram, snaps: string[]): void {
  snaps.push(h.totalCount === 0 ? "" : encodeHistogram(h));
}

function referenceLatency(jobs: readonly (readonly string[])[], n: number) {
  const out = {
    p50_ns: [] as (number | null)[],
    p99_ns: [] as (number | null)[],
    max_ns: [] as (number | null)[],
  };
  let prev = newHistogram();
  for (let i = 0; i < n; i++) {
    const cur = newHistogram();
    for (const snaps of jobs) {
      const text = snaps[Math.min(i, snaps.length - 1)] ?? "";
      if (text !== "") cur.add(decodeHistogram(text));
    }
    const delta = newHistogram();
    delta.add(cur);
    delta.subtract(prev);
    const none = delta.totalCount === 0;
    out.p50_ns.push(none ? null : delta.getValueAtPercentile(50));
    out.p99_ns.push(none ? null : delta.getValueAtPercentile(99));
    out.max_ns.push(none ? null : delta.maxValue);
    prev = cur;
  }
  return out;
}

/** Values near bucket edges, anywhere up to one hour, and over 2^32 ns. */
const latency = fc.oneof(
  fc.integer({ min: 1, max: 5000 }),
  fc.integer({ min: 0, max: 41 }).chain((k) =>
    fc.integer({ min: -3, max: 3 }).map((d) => Math.max(1, 2 ** k + d))
  ),
  fc.integer({ min: 1, max: 3_600_000_000_000 }),
);

/** A job: per interval, its reads and writes (an empty interval now and then); the last may be partial. */
const jobIntervals = fc.array(
  fc.record({
    read: fc.array(latency, { maxLength: 40 }),
    write: fc.array(latency, { maxLength: 10 }),
  }),
  { maxLength: 6 },
);

Deno.test("the sparse intervals give the very p50, p99 and max of the whole cumulative snapshots", () => {
  fc.assert(
    fc.property(
      fc.array(jobIntervals, { minLength: 1, maxLength: 5 }),
      fc.boolean(),
      (jobs, partial) => {
        const sparse: ReturnType<typeof job>[] = [];
        const whole: { read: string[]; write: string[] }[] = [];
        for (const intervals of jobs) {
          const j = job(1000, 0);
          const cumulative = {
            read: newHistogram(),
            write: newHistogram(),
            snaps: { read: [] as string[], write: [] as string[] },
          };
          intervals.forEach((iv, k) => {
            for (const v of iv.read) (j.read.record(v), cumulative.read.recordValue(v));
            for (const v of iv.write) (j.write.record(v), cumulative.write.recordValue(v));
            const last = k === intervals.length - 1;
            if (last && partial) {
              j.finish();
              if (iv.read.length + iv.write.length === 0) return; // nothing new: no interval
            } else j.close((k + 1) * 1000);
            referenceSnapshots(cumulative.read, cumulative.snaps.read);
            referenceSnapshots(cumulative.write, cumulative.snaps.write);
          });
          sparse.push(j);
          whole.push(cumulative.snaps);
        }
        const n = Math.max(0, ...jobs.map((j) => j.length)) + 1;
        for (const dir of ["read", "write"] as const) {
          assert.deepEqual(
            intervalLatency(sparse.map((j) => j.log.snapshots()[dir]), n),
            referenceLatency(whole.map((w) => w[dir]), n),
          );
        }
      },
    ),
    { numRuns: 200 },
  );
});
