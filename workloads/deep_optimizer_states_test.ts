import assert from "node:assert/strict";
import { deepOptimizerStates, GPU_ADAM_SPEEDUP, NO_GPU_NOTE } from "./deep_optimizer_states.ts";
import { bytesByPath, type Op } from "./ops.ts";
import { adamMs, resolveSetup, scaledBytes, shardParameters, subgroupSizes } from "./setup.ts";

const paths = { host: "host", local: [] };
// 7B on 4 ranks: 17 subgroups, the last one smaller; GPU subgroups 3, 7, 11, 15
const setup = resolveSetup({ model: "7b", scale: 0.001, iterations: 2, warmup: 0 });
const program = deepOptimizerStates.build(setup, paths, { stride: 4 });
const rank0 = program.ranks[0]!;
const sizes = subgroupSizes(setup);
const perState = (el: number) => scaledBytes(setup, el * 4);
const GPU = [3, 7, 11, 15];
const sgOf = (op: Op) => Number(op.label.slice(2, op.label.indexOf(".")));
const updateOps = (it: number) =>
  rank0.ops.filter((op) => op.iteration === it && op.phase === "update");

Deno.test("deep-optimizer-states updates every 4th subgroup on the GPU, the rest on the CPU", () => {
  assert.equal(program.ranks.length, 4);
  assert.equal(sizes.length, 17);
  for (const it of [0, 1]) {
    const ops = updateOps(it);
    const gpu = ops.filter((op) => op.stream === "gpu");
    assert.deepEqual(gpu.map(sgOf), GPU);
    assert.equal(gpu.length, Math.floor(sizes.length / 4));
    const cpu = ops.filter((op) => op.kind === "compute" && op.stream === "compute");
    assert.deepEqual(cpu.map(sgOf), sizes.map((_, i) => i).filter((i) => !GPU.includes(i)));
    for (const op of cpu) assert.equal(op.ms, adamMs(setup, sizes[sgOf(op)]!));
    for (const op of gpu) assert.equal(op.ms, adamMs(setup, sizes[sgOf(op)]!) / GPU_ADAM_SPEEDUP);
  }
  assert.equal(GPU_ADAM_SPEEDUP, 10);
  assert.equal(program.derived.subgroups_gpu, 4);
  assert.equal(program.derived.subgroups_cpu, 13);
  assert.equal(program.derived.stride, 4);
  // by default every 5th: its logged runs' prefetch_optimizer_gap 5
  assert.equal(deepOptimizerStates.build(setup, paths).derived.stride, 5);
});

Deno.test("deep-optimizer-states copies 12 B/param of each GPU subgroup in and out, nothing else", () => {
  const want = GPU.reduce((t, i) => t + 3 * perState(sizes[i]!), 0);
  for (const it of [0, 1]) {
    assert.deepEqual(bytesByPath(updateOps(it)), { "host:write": want, "host:read": want });
  }
  assert.equal(program.derived.copy_in_bytes_per_rank, want);
  assert.equal(program.derived.copy_out_bytes_per_rank, want);
  // per object: 1e8 elements × 4 B × 0.001 = 400 000 B, rounded up to 4 KiB
  assert.equal(want, 4 * 3 * 401_408);
  for (const op of rank0.ops.filter((op) => op.path !== undefined)) {
    assert.ok(GPU.includes(sgOf(op)), `${op.label} is a GPU subgroup`);
    assert.equal(op.bytes, perState(sizes[sgOf(op)]!));
  }
  // CPU subgroups have no I/O at all
  const io = rank0.ops.filter((op) => op.kind === "read" || op.kind === "write");
  for (let i = 0; i < sizes.length; i++) {
    if (!GPU.includes(i)) assert.ok(!io.some((op) => sgOf(op) === i), `sg${i} has I/O`);
  }
  assert.ok(!rank0.ops.some((op) => op.kind === "hit"));
});

Deno.test("deep-optimizer-states copies params, m, v in, updates on the GPU, copies them out", () => {
  const ops = updateOps(0);
  for (const i of GPU) {
    const mine = ops.filter((op) => sgOf(op) === i);
    assert.deepEqual(mine.map((op) => `${op.stream} ${op.kind} ${op.label}`), [
      `host:write write sg${i}.params`,
      `host:write write sg${i}.m`,
      `host:write write sg${i}.v`,
      `gpu compute sg${i}.gpu-adam`,
      `host:read read sg${i}.params`,
      `host:read read sg${i}.m`,
      `host:read read sg${i}.v`,
    ]);
    assert.deepEqual(mine[3]!.after, mine.slice(0, 3).map((op) => op.id));
    for (const r of mine.slice(4)) assert.deepEqual(r.after, [mine[3]!.id]);
  }
});

Deno.test("deep-optimizer-states overlaps copy-in of the next GPU subgroup with the GPU compute of this one", () => {
  const ops = updateOps(0);
  const start = ops.find((op) => op.kind === "barrier")!;
  const copyIn = (i: number) => ops.filter((op) => op.kind === "write" && sgOf(op) === i);
  const copyOut = (i: number) => ops.filter((op) => op.kind === "read" && sgOf(op) === i);
  const gpu = (i: number) => ops.find((op) => op.stream === "gpu" && sgOf(op) === i)!;
  for (const [j, i] of GPU.entries()) {
    for (const w of copyIn(i)) {
      // two device buffers: copy-in(j) waits for copy-out(j-2), not for gpu(j-1)
      const want = j >= 2 ? [start.id, copyOut(GPU[j - 2]!).at(-1)!.id] : [start.id];
      assert.deepEqual(w.after, want);
      if (j >= 1) assert.ok(!w.after.includes(gpu(GPU[j - 1]!).id));
    }
  }
});

Deno.test("deep-optimizer-states never makes the CPU wait for the GPU", () => {
  const ops = rank0.ops;
  for (const op of ops.filter((op) => op.stream === "compute" && op.kind === "compute")) {
    assert.ok(op.after.every((id) => ops[id]!.stream === "compute"), op.label);
  }
});

Deno.test("deep-optimizer-states has no gradient I/O: backward slices run last subgroup first", () => {
  for (const it of [0, 1]) {
    const ops = rank0.ops.filter((op) => op.iteration === it && op.phase === "backward");
    assert.ok(ops.every((op) => op.stream === "compute" && op.path === undefined));
    assert.deepEqual(ops.map((op) => op.kind), [
      "barrier",
      "compute",
      ...sizes.map(() => "compute"),
    ]);
    const slices = ops.slice(2);
    assert.equal(slices[0]!.label, `sg${sizes.length - 1}.backward`);
    assert.equal(slices.at(-1)!.label, "sg0.backward");
    const total = slices.reduce((t, op) => t + op.ms!, 0);
    assert.ok(Math.abs(total / (2 * ops[1]!.ms!) - 1) < 1e-9);
    assert.ok(Math.abs(slices[0]!.ms! / total - sizes.at(-1)! / shardParameters(setup)) < 1e-12);
  }
});

Deno.test("deep-optimizer-states opens each phase with a barrier after the last op of every stream", () => {
  const ops = rank0.ops;
  const barriers = ops.filter((op) => op.kind === "barrier");
  assert.equal(barriers.length, 4);
  assert.deepEqual(barriers[0]!.after, []);
  for (const [n, bar] of barriers.entries()) {
    if (n === 0) continue;
    const before = ops.filter((op) => op.id < bar.id && op.id > barriers[n - 1]!.id);
    const lastOf = new Map(before.map((op) => [op.stream, op.id]));
    assert.deepEqual(
      [...bar.after].sort((a, b) => a - b),
      [...lastOf.values()].sort((a, b) => a - b),
    );
  }
  assert.deepEqual(barriers[2]!.after.map((id) => ops[id]!.stream).sort(), [
    "compute",
    "gpu",
    "host:read",
    "host:write",
  ]);
});

Deno.test("deep-optimizer-states uses the memory tier as the device, and says so", () => {
  assert.deepEqual(program.paths, [{ name: "host", role: "device", bs: 1 << 20, iodepth: 8 }]);
  assert.ok(program.notes.includes(NO_GPU_NOTE));
  assert.ok(
    program.notes.some((n) =>
      n.includes("no GPU: the device side is a memory tier (tmpfs)") && n.includes("not PCIe")
    ),
  );
  assert.equal(rank0.initial.length, 0);
  const tuned = deepOptimizerStates.build(setup, paths, { bs: 4096, iodepth: 1 });
  assert.deepEqual(tuned.paths, [{ name: "host", role: "device", bs: 4096, iodepth: 1 }]);
});

Deno.test("deep-optimizer-states follows the stride", () => {
  const all = deepOptimizerStates.build(setup, paths, { stride: 1 });
  const gpu = all.ranks[0]!.ops.filter((op) => op.stream === "gpu" && op.iteration === 0);
  assert.equal(gpu.length, sizes.length);
  const none = deepOptimizerStates.build(setup, paths, { stride: 18 });
  assert.ok(!none.ranks[0]!.ops.some((op) => op.path !== undefined));
  const two = deepOptimizerStates.build(setup, paths, { stride: 2 });
  assert.equal(two.derived.subgroups_gpu, 8);
  assert.throws(() => deepOptimizerStates.build(setup, paths, { stride: 0 }), /--stride/);
  assert.throws(() => deepOptimizerStates.build(setup, paths, { stride: 2.5 }), /--stride/);
});

Deno.test("deep-optimizer-states refuses to build without a host path", () => {
  assert.throws(
    () => deepOptimizerStates.build(setup, { local: ["local"] }),
    (e: unknown) => e instanceof RangeError && /needs a host path.*memory:DIR/.test(e.message),
  );
});

Deno.test("deep-optimizer-states moves 44 of 70B's 179 subgroups to the GPU with stride 4", () => {
  const big = resolveSetup({ model: "70b", scale: 0.001, iterations: 1, warmup: 1 });
  const p = deepOptimizerStates.build(big, paths, { stride: 4 });
  const bigSizes = subgroupSizes(big);
  assert.equal(bigSizes.length, 179);
  assert.equal(p.derived.subgroups_gpu, 44);
  const ops = p.ranks[0]!.ops;
  assert.equal(ops.filter((op) => op.stream === "gpu").length, 2 * 44);
  // all 44 are full subgroups: 1e8 elements × 12 B × 0.001, per 4 KiB-rounded state
  for (const it of [0, 1]) {
    assert.deepEqual(bytesByPath(ops, (op) => op.iteration === it), {
      "host:write": 44 * 3 * 401_408,
      "host:read": 44 * 3 * 401_408,
    });
  }
});
