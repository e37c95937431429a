import assert from "node:assert/strict";
import { RandomOffsets, SequentialOffsets, XorShift32 } from "./offsets.ts";

Deno.test("SequentialOffsets walks the file in order and wraps", () => {
  const s = new SequentialOffsets(4 * 4096, 4096);
  assert.deepEqual([0, 1, 2, 3, 4, 5].map(() => s.next()), [0, 4096, 8192, 12288, 0, 4096]);
});

Deno.test("RandomOffsets visits every block exactly once per pass", () => {
  for (const blocks of [1, 2, 3, 10, 1000, 4097]) {
    const r = new RandomOffsets(blocks * 512, 512, 42);
    for (let pass = 0; pass < 2; pass++) {
      const seen = new Set<number>();
      for (let i = 0; i < blocks; i++) {
        const o = r.next();
        assert.deepEqual(o % 512, 0);
        assert.ok(o >= 0 && o < blocks * 512);
        seen.add(o);
      }
      assert.deepEqual(seen.size, blocks);
    }
  }
});

Deno.test("RandomOffsets is deterministic for a seed and differs across seeds", () => {
  const take = (seed: number) => {
    const r = new RandomOffsets(1000 * 4096, 4096, seed);
    return Array.from({ length: 50 }, () => r.next());
  };
  assert.deepEqual(take(7), take(7));
  assert.notDeepEqual(take(7), take(8));
});

Deno.test("RandomOffsets is not sequential", () => {
  const r = new RandomOffsets(1 << 30, 4096, 1);
  let ascending = 0;
  let prev = r.next();
  for (let i = 0; i < 1000; i++) {
    const o = r.next();
    if (o === prev + 4096) ascending++;
    prev = o;
  }
  assert.ok(ascending < 10, `${ascending} sequential steps in 1000`);
});

Deno.test("XorShift32 splits a read/write mix near its ratio", () => {
  const rng = new XorShift32(3);
  let below = 0;
  const n = 100_000;
  for (let i = 0; i < n; i++) if (rng.next() < 0.7 * 2 ** 32) below++;
  assert.ok(Math.abs(below / n - 0.7) < 0.01, `${below / n}`);
});

Deno.test("XorShift32 gives Marsaglia's xorshift32 sequence, by value and by fill", () => {
  // the generator written plainly, unsigned, from the state the seed 0 is taken to
  let s = 0x6d2b79f5 >>> 0;
  const plain = () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>>= 0);
  };
  const expected = Array.from({ length: 2000 }, plain);
  const one = new XorShift32(0), bulk = new XorShift32(0);
  assert.deepEqual(expected.slice(0, 1000).map(() => one.next()), expected.slice(0, 1000));
  const words = new Uint32Array(999);
  bulk.fill(words);
  assert.deepEqual([...words, bulk.next()], expected.slice(0, 1000));
  // both go on where they stopped
  assert.deepEqual([one.next(), bulk.next()], [expected[1000], expected[1000]]);
});

Deno.test("XorShift32 fills bytes as little-endian words then a byte a value, at any alignment", () => {
  const expected = (n: number) => {
    const rng = new XorShift32(9), out: number[] = [];
    for (let i = 0; i + 4 <= n; i += 4) {
      const v = rng.next();
      out.push(v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff, v >>> 24);
    }
    while (out.length < n) out.push(rng.next() & 0xff);
    return out;
  };
  const backing = new Uint8Array(64);
  for (const [at, n] of [[0, 0], [0, 3], [0, 37], [1, 37], [2, 20], [3, 61]] as const) {
    const b = backing.subarray(at, at + n);
    new XorShift32(9).fillBytes(b);
    assert.deepEqual([...b], expected(n), `at ${at}, ${n} bytes`);
  }
});
