import assert from "node:assert/strict";
import { bytesByPath, type Op } from "./ops.ts";
import {
  parameterPartitions,
  partitionedSubgroups,
  resolveSetup,
  scaledBytes,
  type TrainingSetup,
} from "./setup.ts";
import { swapLayout, zeroInfinity, zeroInfinitySettings } from "./zero_infinity.ts";

const setup = resolveSetup({ model: "70b", scale: 0.001, iterations: 2, warmup: 0 });
const program = zeroInfinity.build(setup, { local: ["local"] });
const rank0 = program.ranks[0]!;
const layout = swapLayout(setup, zeroInfinitySettings());
const swapped = layout.filter((sg) => sg.swapped);
const MiB = 1 << 20;

/** Ops of iteration `it` and `phase` (default update). */
const phaseOps = (ops: readonly Op[], it: number, phase = "update") =>
  ops.filter((op) => op.iteration === it && op.phase === phase);
/** The subgroup index in an op's label `sg12.…`. */
const sgOf = (op: Op) => Number(op.label.slice(2, op.label.indexOf(".")));

Deno.test("zero-infinity groups whole parameter partitions until each subgroup holds ≥ sub_group_size", () => {
  const parts = parameterPartitions(setup);
  // each tensor's partition is ⌈n / tp / dp⌉: the 70B word embedding is 50257 × 8192 over 4 ranks
  assert.equal(parts[0]!.elements, Math.ceil(50257 * 8192 / 4));
  assert.equal(parts.length, 2 + 12 * 88 + 2);
  const groups = partitionedSubgroups(setup);
  // the subgroups are the partitions in order, cut where the running sum first reaches 1e8
  assert.deepEqual(groups.flatMap((g) => g.partitions), parts);
  for (const [i, g] of groups.entries()) {
    assert.equal(g.elements, g.partitions.reduce((t, p) => t + p.elements, 0));
    if (i === groups.length - 1) continue;
    assert.ok(g.elements >= 1e8, `sg${i} reaches sub_group_size`);
    assert.ok(g.elements - g.partitions.at(-1)!.elements < 1e8, `sg${i} ends at the crossing`);
  }
  // sizes vary: 134 subgroups for 70B on 4 ranks, not ⌈shard / 1e8⌉ = 179 of 1e8
  assert.equal(groups.length, 134);
  assert.equal(program.derived.subgroups_per_rank, 134);
  assert.equal(program.derived.subgroup_elements_max, Math.max(...groups.map((g) => g.elements)));
  // one subgroup when sub_group_size is at least the shard
  assert.equal(partitionedSubgroups(resolveSetup({ model: "7b", subgroupSize: 1e12 })).length, 1);
});

Deno.test("zero-infinity pads each state swap to 256 fp32 elements (1024 B × threads)", () => {
  for (const sg of swapped) {
    assert.equal(sg.swapElements, Math.ceil(sg.elements / 256) * 256);
    assert.equal(sg.stateBytes, scaledBytes(setup, sg.swapElements * 4));
  }
  const two = swapLayout(setup, zeroInfinitySettings({ threads: 2 }));
  for (const sg of two) assert.equal(sg.swapElements % 512, 0);
  assert.equal(program.derived.swap_alignment_elements, 256);
});

Deno.test("zero-infinity keeps tensors under max(1 MiB, block_size) in host memory, with no I/O", () => {
  // the last 70B subgroup is the final LayerNorm: 2 × 8192 / 4 elements, 24 KiB of fp32
  const small = layout.filter((sg) => !sg.swapped);
  assert.deepEqual(small.map((sg) => sg.index), [133]);
  assert.equal(program.derived.subgroups_in_host_memory, 1);
  assert.ok(!rank0.ops.some((op) => op.label.startsWith("sg133.") && op.path !== undefined));
  // gradient files: only partitions of ≥ 1 MiB (262 144 fp32 elements), cut to whole 256s
  for (const sg of swapped) {
    const g = partitionedSubgroups(setup)[sg.index]!;
    const big = g.partitions.filter((p) => p.elements * 4 >= MiB);
    assert.deepEqual(
      sg.gradients.map((f) => f.elements),
      big.map((p) => p.elements - p.elements % 256),
    );
  }
  // 4 weight matrices per layer and the two embeddings
  assert.equal(program.derived.gradient_files_per_rank, 4 * 88 + 2);
  // with 8 MiB blocks the bar is 8 MiB: fewer gradient files
  const big = swapLayout(setup, zeroInfinitySettings({ bs: 8 * MiB }));
  for (const sg of big) {
    for (const f of sg.gradients) assert.ok(f.elements * 4 >= 8 * MiB);
  }
});

Deno.test("zero-infinity moves p, m, v and the gradient files in and p, m, v out in update", () => {
  const state = swapped.reduce((t, sg) => t + sg.stateBytes, 0);
  const grads = swapped.reduce((t, sg) => t + sg.gradients.reduce((u, g) => u + g.bytes, 0), 0);
  for (let it = 0; it < 2; it++) {
    assert.deepEqual(bytesByPath(phaseOps(rank0.ops, it)), {
      "local:read": 3 * state + grads,
      "local:write": 3 * state,
    });
    assert.deepEqual(bytesByPath(phaseOps(rank0.ops, it, "backward")), { "local:write": grads });
  }
  assert.equal(program.derived.update_read_bytes_per_rank, 3 * state + grads);
});

Deno.test("zero-infinity is serial per subgroup by default: read, wait, Adam, write, wait", () => {
  const ops = phaseOps(rank0.ops, 1);
  const adam = ops.filter((op) => op.label.endsWith(".adam") && op.label !== "sg133.adam");
  const lastWrite = (i: number) =>
    ops.filter((op) => op.kind === "write" && sgOf(op) === i).at(-1)!;
  const reads = (i: number) => ops.filter((op) => op.kind === "read" && sgOf(op) === i);
  for (const c of adam.slice(1)) {
    const i = sgOf(c);
    // the subgroup's reads are issued once the write of the one before is done
    for (const r of reads(i)) assert.ok(r.after.includes(lastWrite(i - 1).id));
    assert.deepEqual(reads(i).map((r) => r.object).slice(0, 3), [
      `sg${i}.params`,
      `sg${i}.m`,
      `sg${i}.v`,
    ]);
    // Adam waits for all of them and for the write before
    for (const r of reads(i)) assert.ok(c.after.includes(r.id));
    assert.ok(c.after.includes(lastWrite(i - 1).id));
  }
  assert.equal(program.derived.pipeline, false);
});

Deno.test("zero-infinity --pipeline issues read(i+1) after read(i) and write(i−2), one of each in flight", () => {
  const p = zeroInfinity.build(setup, { local: ["local"] }, { pipeline: true });
  const ops = phaseOps(p.ranks[0]!.ops, 1);
  const adam = (i: number) => ops.find((op) => op.label === `sg${i}.adam`)!;
  const reads = (i: number) => ops.filter((op) => op.kind === "read" && sgOf(op) === i);
  const lastWrite = (i: number) =>
    ops.filter((op) => op.kind === "write" && sgOf(op) === i).at(-1)!;
  for (let i = 2; i < 100; i++) {
    const first = reads(i + 1)[0]!;
    assert.ok(first.after.includes(reads(i).at(-1)!.id));
    assert.ok(first.after.includes(lastWrite(i - 2).id));
    assert.ok(first.after.includes(adam(i - 1).id));
    // Adam of i waits for write(i−2), not write(i−1): one write in flight
    assert.ok(adam(i).after.includes(lastWrite(i - 2).id));
    assert.ok(!adam(i).after.includes(lastWrite(i - 1).id));
  }
  // the same bytes as the serial swapper
  assert.deepEqual(bytesByPath(ops), bytesByPath(phaseOps(rank0.ops, 1)));
});

/** Backward slices that wait for gradient writes, for `bufferCount` buffers. */
function stalls(s: TrainingSetup, bufferCount: number): number {
  const p = zeroInfinity.build(s, { local: ["local"] }, { bufferCount });
  const ops = p.ranks[0]!.ops;
  return phaseOps(ops, 0, "backward").filter((op) =>
    op.kind === "compute" && op.after.some((a) => ops[a]!.kind === "write")
  ).length;
}

Deno.test("zero-infinity backward waits for every gradient write when all its pinned buffers are in flight", () => {
  // restated: files packed in backward order into buffers of the largest subgroup's size; each
  // buffer switch writes the full one; every n-th switch finds none free and waits for all, which
  // holds up the next backward slice (a wait in the last slice is the update's to pay)
  const capacity = Math.max(...layout.map((sg) => sg.swapElements));
  const expected = (n: number) => {
    let switches = 0, fill = 0;
    const waiting = new Set<number>();
    for (const sg of [...layout].reverse()) {
      for (const g of sg.gradients) {
        if (fill > 0 && fill + g.elements > capacity) {
          if (++switches % n === 0) waiting.add(sg.index);
          fill = 0;
        }
        fill += g.elements;
      }
    }
    waiting.delete(0);
    return waiting.size;
  };
  assert.ok(expected(1) > 8);
  for (const n of [1, 2, 4]) assert.equal(stalls(setup, n), expected(n), `${n}`);
  assert.equal(stalls(setup, 1000), 0);
  // DeepSpeed's default buffer_count
  assert.equal(program.derived.gradient_buffers, 4);
});

Deno.test("zero-infinity --threads T cuts each swap into T slices on the path", () => {
  assert.equal(program.paths[0]!.threads, undefined);
  const p = zeroInfinity.build(setup, { local: ["local"] }, { threads: 4 });
  assert.equal(p.paths[0]!.threads, 4);
  assert.equal(p.derived.threads, 4);
  assert.throws(() => zeroInfinitySettings({ threads: 0 }), /threads/);
});

Deno.test("zero-infinity lays out params, m and v of every swapped subgroup before the first op", () => {
  assert.equal(rank0.initial.length, 3 * swapped.length);
  assert.ok(rank0.initial.every((o) => o.path === "local"));
});

Deno.test("zero-infinity refuses to build without a local path", () => {
  assert.throws(() => zeroInfinity.build(setup, { local: [] }), /needs a local path.*file:DIR/);
});
