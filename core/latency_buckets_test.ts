import assert from "node:assert/strict";
import fc from "fast-check";
import {
  encodeDirection,
  LatencyBuckets,
  LatencyCounts,
  newLatencyCounts,
} from "./latency_buckets.ts";
import {
  decodeHistogram,
  encodeHistogram,
  histogramOfCounts,
  histogramsOfCounts,
  latencyStats,
  mergeLatency,
  newHistogram,
  newLatencyHistograms,
} from "./recorder.ts";

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

Deno.test("LatencyBuckets whose counters reach their limit fold, batch by batch and into each interval's samples, what unlimited ones do", () => {
  // a limit of 2 and 3 values of one bucket make a counter hand its count aside, as 2^32 would
  const repeated = fc.array(
    fc.integer({ min: 1, max: 3 }).chain((n) => latency.map((v) => Array<number>(n).fill(v))),
    { maxLength: 40 },
  ).map((runs) => runs.flat());
  fc.assert(
    fc.property(
      fc.array(repeated, { maxLength: 5 }),
      fc.integer({ min: 2, max: 4 }),
      (batches, limit) => {
        const [wide, narrow] = [newHistogram(), newHistogram()];
        const a = new LatencyBuckets(wide);
        const b = new LatencyBuckets(narrow, limit);
        for (const batch of batches) {
          for (const v of batch) {
            a.record(v);
            b.record(v);
          }
          const [sa, sb]: number[][] = [[], []];
          a.foldInto(sa);
          b.foldInto(sb);
          assert.deepEqual(sb, sa);
        }
        assert.deepEqual(figures(narrow), figures(wide));
        // what was handed aside goes with a discard too
        for (const v of batches.flat()) b.record(v);
        b.discard();
        b.foldInto();
        assert.equal(narrow.totalCount, wide.totalCount);
      },
    ),
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

Deno.test("discarded LatencyBuckets add nothing, and the buckets that take their memory next start from zero", () => {
  const thrown = newHistogram();
  const a = new LatencyBuckets(thrown);
  for (const v of [10, 5_000, 123_456, 2 ** 32 + 1]) a.record(v);
  a.discard();
  a.foldInto();
  assert.equal(thrown.totalCount, 0);
  // the next buckets of this thread count into the array a gave back: none of a's values
  const h = newHistogram();
  const b = new LatencyBuckets(h);
  b.record(5_000);
  b.foldInto();
  assert.deepEqual([h.totalCount, h.minNonZeroValue, h.maxValue], [1, 5_000, 5_000]);
  // and a, used again, counts afresh
  a.record(77);
  a.foldInto();
  assert.deepEqual([thrown.totalCount, thrown.minNonZeroValue], [1, 77]);
});

Deno.test("discarded LatencyBuckets that held only values of 2^32 ns or more add nothing either", () => {
  const h = newHistogram();
  const b = new LatencyBuckets(h);
  b.record(2 ** 32 + 1);
  b.discard();
  b.foldInto();
  assert.deepEqual([b.count, h.totalCount], [0, 0]);
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

/**
 * What the runner read of a job before Workers sent counts: the Worker's HDR
 * histogram, encoded in the Worker and decoded on the main thread.
 */
function sentAsHdr(values: readonly number[]): ReturnType<typeof newHistogram> {
  const h = newHistogram();
  for (const v of values) h.recordValue(v);
  return decodeHistogram(encodeHistogram(h));
}

/** What the runner reads of a job now: the Worker's counts, cloned as postMessage does. */
function sentAsCounts(batches: readonly (readonly number[])[]): ReturnType<typeof newHistogram> {
  const c = new LatencyCounts();
  const b = new LatencyBuckets(c);
  const intervals: number[] = [];
  for (const batch of batches) {
    for (const v of batch) b.record(v);
    b.foldInto(intervals); // a logging interval's boundary
  }
  return histogramOfCounts(structuredClone(c.encode()));
}

/** Every figure tierbench reads, including the tracked minimum and maximum. */
function read(h: ReturnType<typeof newHistogram>) {
  return {
    ...figures(h),
    min: h.minNonZeroValue,
    max: h.maxValue,
    p100: h.getValueAtPercentile(100),
  };
}

Deno.test("a Worker's counts make the histogram the runner decoded from the Worker's HDR encoding", () => {
  fc.assert(
    fc.property(fc.array(fc.array(latency, { maxLength: 60 }), { maxLength: 5 }), (batches) => {
      assert.deepEqual(read(sentAsCounts(batches)), read(sentAsHdr(batches.flat())));
    }),
    { numRuns: 150 },
  );
});

Deno.test("LatencyCounts.add gives the counts of recording both sets of values into one", () => {
  fc.assert(
    fc.property(
      fc.array(latency, { maxLength: 60 }),
      fc.array(latency, { maxLength: 60 }),
      (a, b) => {
        const [mine, theirs, both] = [
          new LatencyCounts(),
          new LatencyCounts(),
          new LatencyCounts(),
        ];
        a.forEach((v) => (mine.recordValue(v), both.recordValue(v)));
        b.forEach((v) => (theirs.recordValue(v), both.recordValue(v)));
        mine.add(theirs);
        assert.equal(mine.totalCount, both.totalCount);
        const [got, want] = [mine.encode(), both.encode()];
        assert.deepEqual([got.index, got.counts], [want.index, want.counts]);
        // values kept aside are compared as a multiset of (value, count) pairs
        const pairs = (o: readonly number[]) =>
          o.flatMap((v, i) => i % 2 ? [] : [`${v}x${o[i + 1]}`]).sort();
        assert.deepEqual(pairs(got.over), pairs(want.over));
        assert.deepEqual(read(histogramOfCounts(got)), read(histogramOfCounts(want)));
      },
    ),
    { numRuns: 150 },
  );
});

Deno.test("a Worker's counts: 0 and 1 ns, bucket edges and values of 2^32 ns and more read as HDR's", () => {
  const cases = [
    [1],
    [0],
    [0, 1],
    [0, 0, 2 ** 33],
    [1, 2047, 2048, 2049, 4993, 4993, 8192],
    [2 ** 32 - 1, 2 ** 32, 2 ** 32 + 1],
    [5, 2 ** 32, 3_600_000_000_000, 7, 2 ** 40],
    [],
  ];
  for (const values of cases) {
    const split = [values.slice(0, 2), values.slice(2)];
    const counted = read(sentAsCounts(split));
    assert.deepEqual(counted, read(sentAsHdr(values)), JSON.stringify(values));
    assert.equal(counted.total, values.length);
  }
  assert.throws(() => new LatencyCounts().recordValue(2 ** 42), RangeError);
  // sparse: the buckets counted, not the range between them
  const wide = new LatencyCounts();
  for (const v of [1, 1, 2 ** 31]) wide.recordValue(v);
  assert.deepEqual([...wide.encode().index], [1, 21 * 1024 + 1024]);
  assert.deepEqual([...wide.encode().counts], [2, 1]);
});

Deno.test("a Worker's counts merged over jobs give the run's encoded histograms and statistics as before", () => {
  const jobs = [[1, 1500, 2 ** 32 + 7], [0, 4993, 123_456], [], [99_999_999, 2 ** 35]];
  const before = newLatencyHistograms();
  const now = newLatencyHistograms();
  for (const values of jobs) {
    const direct = newLatencyHistograms();
    const d = newLatencyCounts();
    for (const v of values) {
      direct.lat.recordValue(v);
      d.lat.recordValue(v);
      direct.ttfb.recordValue(v + 1);
      d.ttfb.recordValue(v + 1);
    }
    direct.clat.add(direct.lat); // a synchronous engine's completion latency (JobRuntime.finish)
    d.clat.add(d.lat);
    mergeLatency(before, {
      lat: decodeHistogram(encodeHistogram(direct.lat)),
      clat: decodeHistogram(encodeHistogram(direct.clat)),
      slat: decodeHistogram(encodeHistogram(direct.slat)),
      ttfb: decodeHistogram(encodeHistogram(direct.ttfb)),
    });
    mergeLatency(now, histogramsOfCounts(structuredClone(encodeDirection(d))));
  }
  for (const kind of ["lat", "clat", "slat", "ttfb"] as const) {
    assert.deepEqual(read(now[kind]), read(before[kind]), kind);
  }
  assert.equal(now.lat.totalCount, 8);
});
