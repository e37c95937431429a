import assert from "node:assert/strict";
import { resolveSetup } from "../workloads/setup.ts";
import { pathSeconds, predictPhase } from "./model.ts";
import { bestStride, solve, type SolveInput } from "./solve.ts";
import type { SolverTier } from "./solver_tier.ts";

const GiB = 2 ** 30;
const tier = (
  label: string,
  readBw: number,
  writeBw: number,
  extra: Partial<SolverTier> = {},
): SolverTier => ({
  label,
  readBw,
  writeBw,
  bs: 1 << 20,
  iodepth: 8,
  ...extra,
});
const base: SolveInput = {
  setup: resolveSetup({ model: "70b" }),
  local: tier("file", 6e9, 3e9),
  remote: tier("pfs", 3e9, 2e9),
  hostCacheBytes: 64 * GiB,
};
const moved = (b: Record<string, number>) => Object.values(b).reduce((t, v) => t + v, 0);

Deno.test("predictPhase() takes the longest of compute and each path, reads and writes of a path adding", () => {
  const p = predictPhase({
    paths: [
      { rates: { name: "a", readBw: 1e9, writeBw: 1e9 }, readBytes: 1e9, writeBytes: 1e9 },
      {
        rates: { name: "b", readBw: 1e9, writeBw: 1e9, readSlowdown: 2 },
        readBytes: 1e9,
        writeBytes: 0,
      },
    ],
    computeS: 1.5,
  });
  assert.equal(p.update_s, 2);
  assert.equal(p.read_s, 3);
  assert.equal(p.write_s, 1);
  assert.equal(p.overlap_s, 3 + 1 + 1.5 - 2);
  assert.deepEqual(p.bytes, { "a:read": 1e9, "a:write": 1e9, "b:read": 1e9 });
});

Deno.test("pathSeconds() runs both directions at the mixed rates while both last, then the longer alone", () => {
  const rates = { name: "p", readBw: 2e9, writeBw: 1e9, mixedReadBw: 1e9, mixedWriteBw: 0.5e9 };
  // 1 GB each way: reads finish at 1 s (1 GB/s), 0.5 GB written by then, the rest alone at 1 GB/s
  assert.equal(pathSeconds({ rates, readBytes: 1e9, writeBytes: 1e9 }), 1.5);
  // 4 GB read, 1 GB written: 2 s together (2 GB read by then), then 2 GB alone at 2 GB/s
  assert.equal(pathSeconds({ rates, readBytes: 4e9, writeBytes: 1e9 }), 3);
  // without mixed figures reads and writes add
  assert.equal(
    pathSeconds({
      rates: { name: "p", readBw: 2e9, writeBw: 1e9 },
      readBytes: 2e9,
      writeBytes: 1e9,
    }),
    2,
  );
});

Deno.test("solve() splits subgroups over both paths, every subgroup placed, and beats zero-infinity", async () => {
  const s = await solve(base);
  const total = s.paths.reduce((t, p) => t + p.subgroups, 0);
  assert.equal(total, s.solver.subgroups);
  assert.ok(s.paths.every((p) => p.subgroups > 0));
  assert.ok(s.paths.every((p) => p.cache_subgroups <= p.subgroups));
  assert.ok(s.predictions.plan.update_s < s.predictions.zero_infinity.update_s);
  // nothing beats keeping everything in host memory, when it fits
  assert.ok(s.predictions.zero_offload.update_s <= s.predictions.plan.update_s);
  assert.ok(s.why.length >= 2 && s.why.some((w) => /split \d+:\d+ between/.test(w)));
});

Deno.test("solve(): more bandwidth on any path never predicts a slower update", async () => {
  const before = (await solve(base)).predictions.plan.update_s;
  for (
    const faster of [
      { ...base, local: tier("file", 12e9, 3e9) },
      { ...base, local: tier("file", 6e9, 6e9) },
      { ...base, remote: tier("pfs", 6e9, 2e9) },
      { ...base, remote: tier("pfs", 3e9, 4e9) },
    ]
  ) {
    const after = (await solve(faster)).predictions.plan.update_s;
    assert.ok(after <= before + 1e-9, `${after} > ${before}`);
  }
});

Deno.test("solve(): more host cache never predicts more I/O", async () => {
  let last = Infinity;
  for (const gib of [0, 16, 64, 256, 1024]) {
    const s = await solve({ ...base, hostCacheBytes: gib * GiB });
    const bytes = moved(s.predictions.plan.bytes);
    assert.ok(bytes <= last, `${gib} GiB: ${bytes} > ${last}`);
    last = bytes;
  }
});

Deno.test("solve(): contention that slows the remote path moves subgroups to the local one", async () => {
  const calm = await solve(base);
  const contended = await solve({ ...base, slowdown: (t) => (t === "pfs" ? 3 : 1) });
  const remote = (s: typeof calm) => s.paths.find((p) => p.name === "remote")!.subgroups;
  assert.ok(remote(contended) < remote(calm));
});

Deno.test("solve(): a pair measured reading and writing together sets each path's rate while both run", async () => {
  const mixed = { mixedReadBw: 4e9, mixedWriteBw: 2e9 };
  const input = { ...base, local: tier("file", 6e9, 3e9, mixed), remote: tier("pfs", 3e9, 2e9) };
  const calm = await solve(input);
  // the file tier at half its mixed rates while pfs reads and writes too
  const half = await solve({
    ...input,
    together: (t) => t === "file" ? { readBw: 2e9, writeBw: 1e9 } : undefined,
  });
  const path = (s: typeof calm, name: string) => s.paths.find((p) => p.name === name)!;
  assert.ok(path(half, "remote").subgroups > path(calm, "remote").subgroups);
  assert.ok(half.predictions.plan.update_s > calm.predictions.plan.update_s);
  // the rates themselves, moment by moment, are pipelineRates()'s (solver/_pipeline_test.ts)
  assert.ok(path(half, "local").subgroups > 0);
  // a plan on one path never uses them
  const { remote: _, ...single } = input;
  const alone = await solve({ ...single, together: () => ({ readBw: 1, writeBw: 1 }) });
  assert.deepEqual(alone.predictions.plan, (await solve(single)).predictions.plan);
});

Deno.test("solve() without a remote tier keeps everything local, cached where host memory allows", async () => {
  const { remote: _, ...localOnly } = base;
  const s = await solve(localOnly);
  assert.equal(s.paths.length, 1);
  assert.equal(s.paths[0]!.subgroups, s.solver.subgroups);
  assert.ok(s.paths[0]!.cache_subgroups > 0);
});

Deno.test("solve() honours capacities and says when nothing fits", async () => {
  const s = await solve({ ...base, remote: tier("pfs", 3e9, 2e9, { capacityBytes: 100 * GiB }) });
  const perSubgroup = 3 * 4 * 1e8 * 4; // params, m, v × 4 B × 1e8 elements × 4 ranks
  assert.ok(s.paths[1]!.subgroups * perSubgroup <= 100 * GiB * 1.01);
  await assert.rejects(
    solve({
      ...base,
      local: tier("file", 6e9, 3e9, { capacityBytes: GiB }),
      remote: tier("pfs", 3e9, 2e9, { capacityBytes: GiB }),
    }),
    /no placement fits/,
  );
});

Deno.test("the ZeRO-Offload baseline is infeasible when the state does not fit in host memory", async () => {
  const s = await solve({ ...base, hostMemoryBytes: 512 * GiB });
  assert.equal(s.predictions.zero_offload.feasible, false);
  assert.match(s.predictions.zero_offload.note!, /needs \d+ GiB of host memory/);
});

Deno.test("bestStride() sends more subgroups to a faster GPU, none to one slower than the CPU", () => {
  const setup = resolveSetup({ model: "7b" }); // CPU Adam 1e9 parameters/s per rank
  const fast = bestStride(setup, 17, 1e8, { pcieBytesPerS: 1e12, adamParamsPerS: 1e12 });
  const slower = bestStride(setup, 17, 1e8, { pcieBytesPerS: 25e9, adamParamsPerS: 2e10 });
  const useless = bestStride(setup, 17, 1e8, { pcieBytesPerS: 1e8, adamParamsPerS: 1e8 });
  assert.equal(fast.stride, 1); // every subgroup: the GPU outruns the CPU by far
  assert.ok(slower.stride! >= fast.stride!);
  assert.ok(fast.computeS < 1.7 && slower.computeS < 1.7);
  assert.equal(useless.stride, undefined);
  assert.equal(useless.computeS, 1.7);
});

Deno.test("solve() takes a Deep Optimizer States stride only when the phase waits for compute", async () => {
  const gpu = { pcieBytesPerS: 25e9, adamParamsPerS: 2e10 };
  const ioBound = await solve({ ...base, gpu });
  assert.equal(ioBound.dosStride, undefined);
  assert.ok(ioBound.why.some((w) => /waits for I\/O/.test(w)));
  const computeBound = await solve({
    ...base,
    setup: resolveSetup({ model: "7b" }),
    hostCacheBytes: 2 ** 40,
    gpu,
  });
  assert.ok(computeBound.dosStride !== undefined);
  assert.ok(computeBound.predictions.plan.compute_s < 1.7);
});

Deno.test("solve(): gradients that do not fit in host memory are swapped, read back, and the why says so", async () => {
  // 7B on 2 ranks: 4 B/param of fp32 gradients is 28 GB, against 24 GiB less a 10 % reserve
  const setup = resolveSetup({ model: "7b", ranksPerNode: 2 });
  const memory = 24 * GiB;
  const input: SolveInput = {
    setup,
    local: tier("file", 1e9, 2e9),
    hostCacheBytes: 4 * GiB,
    hostMemoryBytes: memory,
    hostReserveBytes: 0.1 * memory,
  };
  const s = await solve(input);
  const gradients = setup.bytesPerState * setup.parameters;
  const mem = s.predictions.plan.host_memory!;
  assert.ok(gradients > mem.available_bytes);
  assert.equal(mem.gradients, "swapped");
  assert.equal(mem.gradients_bytes, 0);
  assert.ok(mem.fits && mem.total_bytes <= memory * 0.9);
  // every subgroup's gradients are read back in the update (4 B/param more than p, m, v)
  assert.ok(s.predictions.plan.bytes["local:read"]! >= gradients * 0.99);
  assert.ok(s.why.some((w) => /gradients swapped/.test(w) && /more than the/.test(w)));
  // on a node where they fit, they stay in host memory and nothing reads them
  const big = await solve({ ...input, hostMemoryBytes: 512 * GiB, hostReserveBytes: 51 * GiB });
  const kept = big.predictions.plan.host_memory!;
  assert.equal(kept.gradients, "host");
  assert.equal(kept.gradients_bytes, gradients);
  assert.ok(kept.total_bytes <= kept.available_bytes);
  assert.ok(big.why.some((w) => /gradients kept in host memory/.test(w)));
  assert.ok(big.predictions.plan.update_s < s.predictions.plan.update_s);
});

Deno.test("every prediction states the host memory it assumes", async () => {
  const s = await solve({ ...base, hostMemoryBytes: 512 * GiB, hostReserveBytes: 51 * GiB });
  for (const [name, p] of Object.entries(s.predictions)) {
    const m = p.host_memory;
    assert.ok(m, name);
    assert.equal(m.total_bytes, m.gradients_bytes + m.state_bytes + m.buffer_bytes, name);
    assert.equal(m.fits, m.total_bytes <= m.available_bytes, name);
  }
  assert.equal(s.predictions.zero_infinity.host_memory!.gradients, "swapped");
  assert.equal(s.predictions.zero_offload.host_memory!.buffer_bytes, 0);
});
