import assert from "node:assert/strict";
import { resolveSetup, shardParameters } from "../workloads/setup.ts";
import { pipelineRates, simulateInfinity, simulatePlacement } from "./_pipeline.ts";
import type { PlannedPath } from "../schema/plan.ts";
import type { SolverTier } from "./solver_tier.ts";

const file: SolverTier = {
  label: "file",
  readBw: 6e9,
  writeBw: 3e9,
  mixedReadBw: 4e9,
  mixedWriteBw: 2e9,
  bs: 1 << 20,
  iodepth: 8,
};
const pfs: SolverTier = { label: "pfs", readBw: 3e9, writeBw: 2e9, bs: 1 << 20, iodepth: 8 };
const on = (...keys: string[]) => new Set(keys);

Deno.test("pipelineRates(): alone, mixed, taking turns, slowed, and the pair together", () => {
  const rate = pipelineRates({
    local: file,
    remote: pfs,
    slowdown: (t, d, _o, od) => (t === "file" && d === "read" && od === "write" ? 1.5 : 1),
    together: (t) => (t === "file" ? { readBw: 1e9, writeBw: 5e8 } : undefined),
  });
  // alone, then reading and writing at once as measured
  assert.equal(rate("local", "read", on("local:read")), 6e9);
  assert.equal(rate("local", "read", on("local:read", "local:write")), 4e9);
  assert.equal(rate("local", "write", on("local:read", "local:write")), 2e9);
  // pfs has no mixed figures: its reads and writes take turns
  assert.equal(rate("remote", "read", on("remote:read", "remote:write")), 1.5e9);
  assert.equal(rate("remote", "write", on("remote:read", "remote:write")), 1e9);
  // slowed by what the other path does, the worst of its moving directions
  assert.equal(rate("local", "read", on("local:read", "remote:read")), 6e9);
  assert.equal(rate("local", "read", on("local:read", "remote:read", "remote:write")), 4e9);
  // all four moving: the pair's rates where measured, else the slowdowns
  const all = on("local:read", "local:write", "remote:read", "remote:write");
  assert.equal(rate("local", "read", all), 1e9);
  assert.equal(rate("local", "write", all), 5e8);
  assert.equal(rate("remote", "read", all), 1.5e9);
});

Deno.test("pipelineRates(): with the pair also measured at R processes per job, the other path's ranks in flight move the slowdown from the one-job figure to R's", () => {
  // no curve: the same totals at any count (mixed: 4 GB/s read, 2 GB/s write)
  const rate = pipelineRates({
    local: file,
    remote: pfs,
    // one job each: file reads 4 → 2 GB/s (2×); four each: 4 → 1 GB/s (4×)
    together: (t) =>
      t === "file"
        ? { readBw: 2e9, writeBw: 1e9, at: { processes: 4, readBw: 1e9, writeBw: 5e8 } }
        : undefined,
  });
  const all = on("local:read", "local:write", "remote:read", "remote:write");
  const remote = (n: number) => new Map([["remote:read", n], ["remote:write", n]]);
  // one transfer in flight on the other path: the one-job pair, as before
  assert.equal(rate("local", "read", all, remote(1)), 2e9);
  assert.equal(rate("local", "write", all, remote(1)), 1e9);
  // all four: the slowdown measured at four, 4×
  assert.equal(rate("local", "read", all, remote(4)), 1e9);
  // two of four: a third of the way from 2× to 4×, so 4 GB/s / (8/3)
  assert.equal(rate("local", "read", all, remote(2)), 4e9 / (2 + 2 / 3));
  // the most of the other path's two directions counts; more than R holds at R's
  assert.equal(rate("local", "read", all, new Map([["remote:read", 1], ["remote:write", 4]])), 1e9);
  assert.equal(rate("local", "read", all, remote(8)), 1e9);
});

const planned = (name: string, tier: string, subgroups: number, cache = 0): PlannedPath => ({
  name,
  tier,
  subgroups,
  ratio: 0,
  cache_subgroups: cache,
  readers: 1,
  writers: 1,
  bs: 1 << 20,
  iodepth: 8,
});

Deno.test("simulatePlacement() takes longer than the busiest direction: the pipeline fills and drains", () => {
  const setup = resolveSetup({ model: "7b" });
  // reads and writes at once lose nothing, so the closed form is the writes alone
  const tiers = { local: { ...file, mixedReadBw: 6e9, mixedWriteBw: 3e9 } };
  const sim = simulatePlacement(setup, [planned("local", "file", 17)], tiers);
  const bytes = 12 * shardParameters(setup) * setup.ranksPerNode; // params, m, v in fp32
  const writes = bytes / 3e9;
  // nothing is written until the first subgroup is read and updated: a 1e8-element subgroup of
  // 1.2 GB at 6 GB/s and 0.1 s of Adam at 1e9 parameters/s
  const fill = 1.2e9 / 6e9 + 0.1;
  assert.ok(sim.update_s >= writes + fill - 1e-9, `${sim.update_s} < ${writes + fill}`);
  assert.ok(sim.update_s < writes * 1.1, `${sim.update_s} ≥ ${writes * 1.1}`);
  assert.ok(Math.abs(sim.path_s.local! - sim.update_s) < 0.01 * sim.update_s);
});

Deno.test("simulatePlacement() puts the remote path's share on it", () => {
  const setup = resolveSetup({ model: "7b" });
  const sim = simulatePlacement(setup, [
    planned("local", "file", 15),
    planned("remote", "pfs", 2),
  ], { local: file, remote: pfs });
  assert.ok(sim.path_s.remote! > 0 && sim.path_s.local! > sim.path_s.remote!);
  assert.ok(sim.update_s >= sim.path_s.local!);
});

Deno.test("simulateInfinity() moves gradients too: slower than the same state without them", () => {
  const setup = resolveSetup({ model: "7b" });
  const zi = simulateInfinity(setup, { local: file });
  const mlp = simulatePlacement(setup, [planned("local", "file", 17)], { local: file });
  assert.ok(zi.update_s > mlp.update_s, `${zi.update_s} <= ${mlp.update_s}`);
});

Deno.test("pipelineRates(): a path direction with n ranks in flight moves at its curve's total at n", () => {
  const curve = {
    basis: "stated" as const,
    bs: 1 << 20,
    iodepth: 8,
    points: [
      { processes: 1, read_bw_bytes: 6e9, write_bw_bytes: 3e9 },
      { processes: 4, read_bw_bytes: 3.6e9, write_bw_bytes: 1.8e9 },
    ],
  };
  const { mixedReadBw: _r, mixedWriteBw: _w, ...plain } = file;
  const rate = pipelineRates({ local: { ...plain, concurrency: [curve] } });
  const n = (count: number) => new Map([["local:read", count], ["local:write", count]]);
  assert.equal(rate("local", "read", on("local:read"), n(1)), 6e9);
  assert.equal(rate("local", "read", on("local:read"), n(4)), 3.6e9);
  assert.equal(rate("local", "write", on("local:write"), n(4)), 1.8e9);
  // reading while writing without mixed figures: half the total at n each
  assert.equal(rate("local", "read", on("local:read", "local:write"), n(4)), 1.8e9);
  // no curve: the tier's one figure at any count
  assert.equal(pipelineRates({ local: plain })("local", "read", on("local:read"), n(4)), 6e9);
});
