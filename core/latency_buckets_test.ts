import assert from "node:assert/strict";
import fc from "fast-check";
import { LatencyBuckets } from "./latency_buckets.ts";
import { encodeHistogram, latencyStats, newHistogram } from "./recorder.ts";

/** Every figure tierbench reads from a histogram, and its encoded counts. */
function figures(h: ReturnType<typeof newHistogram>) {
  return { stats: latencyStats(h), encoded: encodeHistogram(h), total: h.totalCount };
}

/** Values near every power of two (bucket edges) and anywhere up to one hour. */
const latency = fc.oneof(
  fc.integer({ min: 1, max: 5000 }),
  fc.integer({ min: 1, max: 2 ** 32 + 5 }),
  fc.integer({ min: 0, max: 41 }).chain((k) =>
    fc.integer({ min: -3, max: 3 }).map((d) => Math.max(1, 2 ** k + d))
  ),
  fc.integer({ min: 1, max: 3_600_000_000_000 }),
);

/** Asserts that `values` counted and folded make recordValue()'s histogram; returns the folded one. */
function assertFoldsAsRecorded(values: readonly number[]): ReturnType<typeof newHistogram> {
  const direct = newHistogram();
  for (const v of values) direct.recordValue(v);
  const folded = newHistogram();
  const b = new LatencyBuckets(folded);
  for (const v of values) b.record(v);
  b.foldInto();
  assert.deepEqual(figures(folded), figures(direct));
  return folded;
}

Deno.test("LatencyBuckets folds into the very histogram recordValue() would have made", () => {
  fc.assert(
    fc.property(fc.array(latency, { maxLength: 300 }), (values) => {
      assertFoldsAsRecorded(values);
    }),
    { numRuns: 100 },
  );
});

Deno.test("LatencyBuckets folded batch by batch makes the histogram of all the values, each batch cleared for the next", () => {
  fc.assert(
    fc.property(fc.array(fc.array(latency, { maxLength: 60 }), { maxLength: 6 }), (batches) => {
      const direct = newHistogram();
      const folded = newHistogram();
      const b = new LatencyBuckets(folded);
      for (const batch of batches) {
        for (const v of batch) {
          direct.recordValue(v);
          b.record(v);
        }
        b.foldInto();
        assert.equal(b.count, 0);
      }
      assert.deepEqual(figures(folded), figures(direct));
    }),
    { numRuns: 100 },
  );
});

Deno.test("LatencyBuckets: the minimum twice in a bucket whose lowest value lies below it keeps the histogram's minimum", () => {
  // found by the property above: 4993 lies in the bucket 4992–4995
  const folded = assertFoldsAsRecorded([4993, 8192, 4993]);
  assert.equal(latencyStats(folded).min, 4993);
});

Deno.test("LatencyBuckets keeps the exact minimum and maximum, not their buckets' values", () => {
  const h = newHistogram();
  const b = new LatencyBuckets(h);
  for (const v of [123_457, 99_999_999, 5_000_001]) b.record(v);
  b.foldInto();
  assert.deepEqual([h.minNonZeroValue, h.maxValue, h.totalCount], [123_457, 99_999_999, 3]);
});

Deno.test("LatencyBuckets starts afresh after a fold, so folding twice adds nothing", () => {
  const h = newHistogram();
  const b = new LatencyBuckets(h);
  b.record(10);
  b.foldInto();
  b.foldInto();
  assert.equal(h.totalCount, 1);
  b.record(20);
  assert.equal(b.count, 1);
  b.foldInto();
  assert.deepEqual([h.totalCount, h.minNonZeroValue, h.maxValue], [2, 10, 20]);
});
