import assert from "node:assert/strict";
import {
  RATE_TOLERANCE_MS,
  rateIntervalMs,
  Schedule,
  scheduleMet,
  StreamSchedule,
} from "./rate.ts";

Deno.test("Schedule spaces linear starts by exactly one interval from 0", () => {
  const s = new Schedule({ intervalMs: 1.25, process: "linear" }, 7);
  assert.deepEqual(Array.from({ length: 5 }, () => s.next()), [0, 1.25, 2.5, 3.75, 5]);
});

Deno.test("Schedule draws poisson gaps from the seed: the same seed, the same starts; mean gap near the interval", () => {
  const a = new Schedule({ intervalMs: 2, process: "poisson" }, 42);
  const b = new Schedule({ intervalMs: 2, process: "poisson" }, 42);
  const c = new Schedule({ intervalMs: 2, process: "poisson" }, 43);
  const n = 20_000;
  const starts = Array.from({ length: n }, () => a.next());
  assert.deepEqual(starts.slice(0, 100), Array.from({ length: 100 }, () => b.next()));
  assert.notDeepEqual(starts.slice(0, 100), Array.from({ length: 100 }, () => c.next()));
  assert.equal(starts[0], 0);
  for (let i = 1; i < n; i++) assert.ok(starts[i]! >= starts[i - 1]!);
  // 20 000 exponential gaps: the mean is within ±5 % of the interval with overwhelming odds
  // (its standard error is 0.7 %), and a fixed seed makes the draw the same every run.
  const mean = starts[n - 1]! / (n - 1);
  assert.ok(Math.abs(mean - 2) < 0.1, `mean gap ${mean}`);
});

Deno.test("rateIntervalMs() turns bytes/s into bs-sized requests, IOPS into their period", () => {
  assert.equal(rateIntervalMs({ bytesPerS: 50 * 1024 ** 2, process: "linear" }, 64 * 1024), 1.25);
  assert.equal(rateIntervalMs({ iops: 4000, process: "poisson" }, 4096), 0.25);
});

Deno.test("scheduleMet() allows one interval plus the tolerance behind, no more", () => {
  assert.equal(RATE_TOLERANCE_MS, 10);
  assert.ok(scheduleMet(0, 1));
  assert.ok(scheduleMet(11, 1));
  assert.ok(!scheduleMet(11.01, 1));
  assert.ok(scheduleMet(510, 500));
});

Deno.test("StreamSchedule spaces requests by their bytes at the rate and starts over after idle time, never saving it up", () => {
  const s = new StreamSchedule(1000 * 1024); // 1000 KiB/s: 1 KiB a ms
  s.begin(100);
  assert.equal(s.due, 100);
  s.take(4096, 100);
  s.take(4096, 104);
  assert.equal(s.due, 108);
  s.end();
  // Ready again long after the schedule's next start: the stream was idle, not behind.
  s.begin(500);
  assert.equal(s.due, 500);
  s.take(2048, 500);
  s.end();
  // Ready before the next start: the schedule goes on from there.
  s.begin(501);
  assert.equal(s.due, 502);
  assert.deepEqual(s.summary(), { requests: 3, bytes: 10240, max_lag_ms: 0, end_lag_ms: 0 });
});

Deno.test("StreamSchedule keeps how late requests went and how far behind an object ended", () => {
  const s = new StreamSchedule(1024 * 1024); // 1 MiB/s: 64 KiB every 62.5 ms
  s.begin(0);
  s.take(65536, 0);
  s.take(65536, 100); // intended at 62.5: 37.5 late
  s.take(65536, 130); // intended at 125: 5 late
  s.end();
  assert.deepEqual(s.summary(), {
    requests: 3,
    bytes: 3 * 65536,
    max_lag_ms: 37.5,
    end_lag_ms: 5,
  });
  assert.throws(() => new StreamSchedule(0), RangeError);
});
