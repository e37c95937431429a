import assert from "node:assert/strict";
import { bestProcesses, concurrentBandwidth, hasCurve, nearestCurve } from "./concurrency.ts";
import { FLAT_CONCURRENCY_NOTE, type ProfileConcurrency } from "../schema/profile.ts";
import type { SolverTier } from "./solver_tier.ts";

const MiB = 1 << 20;
const curve = (bs: number, points: ProfileConcurrency["points"]): ProfileConcurrency => ({
  basis: "stated",
  bs,
  iodepth: 8,
  points,
});
/** Loses with concurrency: the total at 4 is 0.6 × the total at 1. */
const losing = curve(MiB, [
  { processes: 1, read_bw_bytes: 2e9, write_bw_bytes: 1e9 },
  { processes: 2, read_bw_bytes: 1.6e9, write_bw_bytes: 0.8e9 },
  { processes: 4, read_bw_bytes: 1.2e9, write_bw_bytes: 0.6e9 },
]);
const plain: SolverTier = { label: "file", readBw: 2e9, writeBw: 1e9, bs: MiB, iodepth: 8 };
const tier: SolverTier = { ...plain, concurrency: [losing] };

Deno.test("concurrentBandwidth(): a measured count gives its total, each process total / n", () => {
  const b = concurrentBandwidth(tier, "read", 4);
  assert.equal(b.total, 1.2e9);
  assert.equal(b.perProcess, 1.2e9 / 4);
  assert.equal(b.processes, 4);
  assert.match(b.basis, /^file read at 4 processes: 1\.20 GB\/s in all, 0\.30 GB\/s each/);
  assert.match(b.source, /stated curve at 1 MiB, measured at 4/);
  assert.equal(concurrentBandwidth(tier, "write", 2).total, 0.8e9);
});

Deno.test("concurrentBandwidth(): between two counts the total is linear in n, and says so", () => {
  // 3 is halfway between 2 (1.6 GB/s) and 4 (1.2 GB/s)
  const b = concurrentBandwidth(tier, "read", 3);
  assert.ok(Math.abs(b.total - 1.4e9) < 1);
  assert.match(b.source, /interpolated between 2 and 4/);
});

Deno.test("concurrentBandwidth(): past the curve's last count its total is held, and says so", () => {
  const b = concurrentBandwidth(tier, "read", 8);
  assert.equal(b.total, 1.2e9);
  assert.equal(b.perProcess, 1.2e9 / 8);
  assert.match(b.source, /held from 4 processes, the curve's last point/);
});

Deno.test("concurrentBandwidth(): the curve at the nearest request size, named when not exact", () => {
  const big = curve(4 * MiB, [{ processes: 1, read_bw_bytes: 3e9, write_bw_bytes: 2e9 }]);
  const t = { ...tier, concurrency: [losing, big] };
  // 2 MiB is as near 1 MiB as 4 MiB by ratio: the smaller wins the tie
  assert.equal(nearestCurve(t.concurrency, 2 * MiB), losing);
  assert.equal(nearestCurve(t.concurrency, 3 * MiB), big);
  const at = concurrentBandwidth(t, "read", 1, { bs: 3 * MiB });
  assert.equal(at.total, 3e9);
  assert.match(at.source, /curve at 4 MiB, the nearest to the 3 MiB requests/);
  assert.doesNotMatch(concurrentBandwidth(t, "read", 1).source, /nearest/);
});

Deno.test("concurrentBandwidth(): reading while writing from the curve's mixed figures, else the tier's scaled, else taking turns", () => {
  const mixed = curve(MiB, [
    { ...losing.points[0]!, mixed_read_bw_bytes: 1e9, mixed_write_bw_bytes: 0.5e9 },
    { ...losing.points[2]!, mixed_read_bw_bytes: 0.7e9, mixed_write_bw_bytes: 0.3e9 },
  ]);
  const fromCurve = concurrentBandwidth({ ...tier, concurrency: [mixed] }, "write", 4, {
    mixed: true,
  });
  assert.equal(fromCurve.total, 0.3e9);
  assert.equal(fromCurve.turns, undefined);
  assert.match(fromCurve.basis, /^file writing while reading at 4 processes/);
  assert.match(fromCurve.source, /mixed, measured at 4/);
  // no mixed points: the tier's own mixed figure × (plain total at 4 / at 1) = × 0.6
  const scaled = concurrentBandwidth(
    { ...tier, mixedReadBw: 1.5e9, mixedWriteBw: 0.8e9 },
    "read",
    4,
    { mixed: true },
  );
  assert.ok(Math.abs(scaled.total - 1.5e9 * 0.6) < 1);
  assert.match(scaled.source, /the tier's mixed figure × 0\.60/);
  // no mixed figure at all: half the plain total at 4 each way
  const turns = concurrentBandwidth(tier, "read", 4, { mixed: true });
  assert.equal(turns.total, 1.2e9 / 2);
  assert.equal(turns.turns, true);
  assert.match(turns.source, /take turns/);
});

Deno.test("concurrentBandwidth() without a curve: the tier's one figure at every count, the flat default stated", () => {
  const flat: SolverTier = { ...plain, mixedReadBw: 1.5e9, mixedWriteBw: 1e9 };
  assert.equal(hasCurve(flat), false);
  assert.equal(hasCurve(tier), true);
  for (const n of [1, 2, 4, 16]) {
    const b = concurrentBandwidth(flat, "read", n);
    assert.equal(b.total, 2e9);
    assert.equal(b.perProcess, 2e9 / n);
    assert.equal(b.source, FLAT_CONCURRENCY_NOTE);
    assert.equal(concurrentBandwidth(flat, "write", n, { mixed: true }).total, 1e9);
  }
  const turns = concurrentBandwidth(plain, "write", 2, { mixed: true });
  assert.equal(turns.total, 0.5e9);
  assert.equal(turns.turns, true);
});

Deno.test("concurrentBandwidth() refuses a count below 1", () => {
  assert.throws(() => concurrentBandwidth(tier, "read", 0), RangeError);
  assert.throws(() => concurrentBandwidth(tier, "read", NaN), RangeError);
});

Deno.test("bestProcesses(): the count where the total peaks, the fewest on a tie", () => {
  assert.equal(bestProcesses(tier, "read", 4), 1);
  const gaining = curve(MiB, [
    { processes: 1, read_bw_bytes: 1e9, write_bw_bytes: 1e9 },
    { processes: 4, read_bw_bytes: 1.8e9, write_bw_bytes: 1e9 },
  ]);
  const t = { ...tier, concurrency: [gaining] };
  assert.equal(bestProcesses(t, "read", 4), 4);
  assert.equal(bestProcesses(t, "write", 4), 1);
  assert.equal(bestProcesses(plain, "read", 4), 1);
});
