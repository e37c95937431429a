import assert from "node:assert/strict";
import { decodeHistogram, encodeHistogram, latencyStats, newHistogram } from "./recorder.ts";

Deno.test("latencyStats() gives fio's fields and percentile keys", () => {
  const h = newHistogram();
  for (let i = 1; i <= 10_000; i++) h.recordValue(i * 100);
  const s = latencyStats(h);
  assert.deepEqual(s.N, 10_000);
  assert.deepEqual(s.min, 100);
  assert.ok(Math.abs(s.max - 1_000_000) / 1_000_000 < 0.001);
  assert.ok(Math.abs(s.mean - 500_050) / 500_050 < 0.001);
  for (const key of ["50.000000", "99.000000", "99.990000"]) assert.ok(key in s.percentile);
  assert.ok(Math.abs(s.percentile["99.000000"]! - 990_000) / 990_000 < 0.001);
});

Deno.test("latencyStats() of an empty histogram is all zeros", () => {
  const s = latencyStats(newHistogram());
  assert.deepEqual([s.N, s.min, s.max, s.mean], [0, 0, 0, 0]);
  assert.deepEqual(s.percentile["50.000000"], 0);
});

Deno.test("merged histograms give the percentiles of all samples, not averaged ones", () => {
  const fast = newHistogram();
  const slow = newHistogram();
  for (let i = 0; i < 900; i++) fast.recordValue(1000);
  for (let i = 0; i < 100; i++) slow.recordValue(1_000_000);
  const merged = newHistogram();
  merged.add(fast);
  merged.add(slow);
  const s = latencyStats(merged);
  // p95 of the union is the slow value; averaging each job's p95 would give ~500 µs.
  assert.ok(Math.abs(s.percentile["95.000000"]! - 1_000_000) / 1_000_000 < 0.001);
  assert.ok(Math.abs(s.percentile["50.000000"]! - 1000) / 1000 < 0.001);
});

Deno.test("decodeHistogram() reads back what encodeHistogram() wrote", () => {
  const h = newHistogram();
  for (let i = 0; i < 1000; i++) h.recordValue(1000 + i * 37);
  const back = decodeHistogram(encodeHistogram(h));
  assert.deepEqual(back.totalCount, 1000);
  assert.deepEqual(latencyStats(back).percentile, latencyStats(h).percentile);
});
