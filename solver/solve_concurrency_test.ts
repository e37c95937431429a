import assert from "node:assert/strict";
import { resolveSetup, shardParameters } from "../workloads/setup.ts";
import { mlpOffload } from "../workloads/mlp_offload.ts";
import { placementOptions } from "../schema/plan.ts";
import { FLAT_CONCURRENCY_NOTE, type ProfileConcurrency } from "../schema/profile.ts";
import { solve, type SolveInput } from "./solve.ts";
import type { SolverTier } from "./solver_tier.ts";

const GiB = 2 ** 30;
const MiB = 1 << 20;
const file: SolverTier = { label: "file", readBw: 6e9, writeBw: 3e9, bs: MiB, iodepth: 8 };
const pfs: SolverTier = { label: "pfs", readBw: 3e9, writeBw: 2e9, bs: MiB, iodepth: 8 };
const base: SolveInput = {
  setup: resolveSetup({ model: "70b" }),
  local: file,
  remote: pfs,
  hostCacheBytes: 64 * GiB,
};
const R = base.setup.ranksPerNode;

/** A stated curve of `t`: its own figures at 1, each total × factor[n] at n processes. */
function curveOf(t: SolverTier, factor: Record<number, number>): ProfileConcurrency[] {
  return [{
    basis: "stated",
    bs: t.bs,
    iodepth: t.iodepth,
    points: Object.entries(factor).map(([n, f]) => ({
      processes: Number(n),
      read_bw_bytes: t.readBw * f,
      write_bw_bytes: t.writeBw * f,
    })),
  }];
}
/** Loses with concurrency: the total at 4 is 0.6 × the total at 1. */
const losing = { ...file, concurrency: curveOf(file, { 1: 1, 2: 0.8, 4: 0.6 }) };
/** Gains, as this VM's virtio disk does: the total at 4 is 1.8 × the total at 1. */
const gaining = { ...file, concurrency: curveOf(file, { 1: 1, 2: 1.5, 4: 1.8 }) };
const local = (s: Awaited<ReturnType<typeof solve>>) => s.paths.find((p) => p.name === "local")!;

Deno.test("solve(): ZeRO-Infinity is costed with R ranks at once on the local path — a curve that loses makes it slower than the flat default", async () => {
  const flat = await solve(base);
  const lost = await solve({ ...base, local: losing });
  const P = shardParameters(base.setup);
  // closed form: p, m, v and gradients read (4 states), p, m, v written (3), all ranks, at the
  // totals with R processes at once — each rank's share total(R) / R
  const s = base.setup.bytesPerState;
  const z = lost.predictions.zero_infinity;
  assert.ok(Math.abs(z.read_s - 4 * s * P * R / (0.6 * 6e9)) < 1e-6 * z.read_s);
  assert.ok(Math.abs(z.write_s - 3 * s * P * R / (0.6 * 3e9)) < 1e-6 * z.write_s);
  // flat: the tier's one figure, as before the curves
  const f = flat.predictions.zero_infinity;
  assert.ok(Math.abs(f.read_s - 4 * s * P * R / 6e9) < 1e-6 * f.read_s);
  assert.ok(z.update_s > f.update_s * 1.5, `${z.update_s} vs ${f.update_s}`);
});

Deno.test("solve(): a curve that loses with concurrency makes the plan read and write its path one rank at a time, and the why gives the figures at 1 and R", async () => {
  const s = await solve({ ...base, local: losing });
  const p = local(s);
  assert.equal(p.readers, 1);
  assert.equal(p.writers, 1);
  assert.ok(p.concurrency_basis!.some((b) => /file read at 1 process: 6\.00 GB\/s/.test(b)));
  const why = s.why.find((w) => w.startsWith("local (file):"))!;
  assert.match(why, /one reader at a time, one writer at a time/);
  assert.match(why, /read 6\.00 GB\/s at 1 against 3\.60 GB\/s in all \(0\.90 GB\/s each\) at 4/);
  // the all-at-once placement was weighed and predicted slower
  assert.match(why, /against [\d.]+ s with local 4×4/);
  // the path without a curve keeps one at a time and says why
  assert.ok(s.why.some((w) => w.startsWith("remote (pfs):") && w.includes(FLAT_CONCURRENCY_NOTE)));
});

Deno.test("solve(): a curve that gains with concurrency makes the plan let all ranks read and write the path at once", async () => {
  const flat = await solve(base);
  const s = await solve({ ...base, local: gaining });
  const p = local(s);
  assert.equal(p.readers, R);
  assert.equal(p.writers, R);
  assert.ok(
    s.why.some((w) => /^local \(file\): all 4 readers at once, all 4 writers at once/.test(w)),
  );
  assert.ok(s.predictions.plan.update_s < flat.predictions.plan.update_s);
  assert.ok(s.predictions.zero_infinity.update_s < flat.predictions.zero_infinity.update_s);
});

Deno.test("solve(): MLP-Offload's fixed ratio is costed with one reader and one writer per path, whatever the plan chose", async () => {
  const flat = await solve(base);
  const s = await solve({ ...base, local: gaining });
  const m = s.predictions.mlp_offload!;
  // its node-wide one-at-a-time runs at the curve's point at 1, the tier's own figure here
  assert.ok(Math.abs(m.update_s - flat.predictions.mlp_offload!.update_s) < 1e-9);
  assert.ok(Math.abs(m.read_s - flat.predictions.mlp_offload!.read_s) < 1e-9);
  // and the plan, free to use all four, beats it by more than it did on the flat default
  assert.ok(s.predictions.plan.update_s / m.update_s < flat.predictions.plan.update_s / m.update_s);
});

Deno.test("solve() without curves: one reader and one writer per path, the flat default stated, the figures as before", async () => {
  const s = await solve(base);
  for (const p of s.paths) {
    assert.equal(p.readers, 1);
    assert.equal(p.writers, 1);
    assert.ok(p.concurrency_basis!.every((b) => b.includes(FLAT_CONCURRENCY_NOTE)));
  }
  for (const head of ["local (file):", "remote (pfs):", "ZeRO-Infinity costed with all 4 ranks"]) {
    const line = s.why.find((w) => w.startsWith(head));
    assert.ok(line?.includes(FLAT_CONCURRENCY_NOTE), head);
  }
  // a curve that stays at the tier's figure predicts what the flat default does for the baselines
  const level = await solve({
    ...base,
    local: { ...file, concurrency: curveOf(file, { 1: 1, 4: 1 }) },
  });
  assert.equal(level.predictions.zero_infinity.update_s, s.predictions.zero_infinity.update_s);
  assert.equal(level.predictions.mlp_offload!.update_s, s.predictions.mlp_offload!.update_s);
  assert.ok(level.predictions.plan.update_s <= s.predictions.plan.update_s + 1e-9);
});

Deno.test("the plan's readers and writers per path reach the mlp-offload program a replay runs", () => {
  const path = { ratio: 0, cache_subgroups: 0, bs: MiB, iodepth: 8 };
  const options = placementOptions([
    { ...path, name: "local", tier: "file", subgroups: 12, readers: 4, writers: 4 },
    { ...path, name: "remote", tier: "pfs", subgroups: 6, readers: 1, writers: 1 },
  ]);
  assert.equal(options.readers, 4);
  assert.equal(options.remoteReaders, 1);
  const program = mlpOffload.build(
    resolveSetup({ model: "7b", scale: 0.001 }),
    { local: ["local"], remote: "remote" },
    options,
  );
  const byName = Object.fromEntries(program.paths.map((p) => [p.name, p]));
  assert.equal(byName.local!.readers, 4);
  assert.equal(byName.local!.writers, 4);
  assert.equal(byName.remote!.readers, 1);
  assert.equal(byName.remote!.writers, 1);
});
