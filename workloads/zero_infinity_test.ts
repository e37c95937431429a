import assert from "node:assert/strict";
import { parseDeepSpeedConfig } from "./deepspeed_config.ts";
import { bytesByPath, type Op } from "./ops.ts";
import type { ModelTensor } from "./model_tensors.ts";
import {
  parameterPartitions,
  partitionedSubgroups,
  resolveSetup,
  scaledBytes,
  type TrainingSetup,
} from "./setup.ts";
import {
  swapLayout,
  zeroInfinity,
  zeroInfinityDerived,
  zeroInfinitySettings,
} from "./zero_infinity.ts";
import { zero3Layout } from "./zero3.ts";

const setup = resolveSetup({ model: "70b", scale: 0.001, iterations: 2, warmup: 0 });
const program = zeroInfinity.build(setup, { local: ["local"] });
const rank0 = program.ranks[0]!;
const layout = swapLayout(setup, zeroInfinitySettings());
const swapped = layout.filter((sg) => sg.swapped);
const MiB = 1 << 20;

/** The model of the DeepSpeed recordings (kit/train_tiny.py): 52 tensors, 60,872,704 parameters. */
function tinyTensors(hidden = 1024, layers = 4): ModelTensor[] {
  const out: ModelTensor[] = [];
  const linear = (name: string, i: number, o: number) =>
    out.push({ name: `${name}.weight`, numel: i * o }, { name: `${name}.bias`, numel: o });
  const norm = (name: string) =>
    out.push({ name: `${name}.weight`, numel: hidden }, { name: `${name}.bias`, numel: hidden });
  linear("inp", hidden, hidden);
  for (let l = 0; l < layers; l++) {
    norm(`blocks.${l}.ln`);
    linear(`blocks.${l}.qkv`, hidden, 3 * hidden);
    linear(`blocks.${l}.proj`, 3 * hidden, hidden);
    norm(`blocks.${l}.ln2`);
    linear(`blocks.${l}.fc1`, hidden, 4 * hidden);
    linear(`blocks.${l}.fc2`, 4 * hidden, hidden);
  }
  linear("out", hidden, hidden);
  return out;
}

/** A DeepSpeed config as the recordings' (serial swapper, buffer_count 4) with `zero` merged in. */
function config(zero: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  const { offload_optimizer, ...rest } = zero;
  return parseDeepSpeedConfig({
    zero_optimization: {
      stage: 3,
      offload_optimizer: {
        device: "nvme",
        nvme_path: "/var/tmp/dsnvme",
        buffer_count: 4,
        ...(offload_optimizer as object ?? {}),
      },
      ...rest,
    },
    ...extra,
  }, "ds.json");
}

const tinySetup = (subgroupSize = 1e9, more: Record<string, unknown> = {}) =>
  resolveSetup({
    tensors: { label: "tiny", list: tinyTensors() },
    ranksPerNode: 1,
    subgroupSize,
    scale: 1,
    iterations: 2,
    warmup: 1,
    ...more,
  });

const tiny = (zero: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => {
  const deepspeed = config(zero, extra);
  return zeroInfinity.build(tinySetup(deepspeed.subGroupSize), { local: ["local"] }, { deepspeed });
};

/** Ops of iteration `it` and `phase` (default update). */
const phaseOps = (ops: readonly Op[], it: number, phase = "update") =>
  ops.filter((op) => op.iteration === it && op.phase === phase);
const io = (ops: readonly Op[]) => ops.filter((op) => op.kind === "read" || op.kind === "write");
const file = (op: Op) => op.object!.split("/").at(-1)!;

Deno.test("zero-infinity groups whole parameter partitions until each subgroup holds ≥ sub_group_size", () => {
  const parts = parameterPartitions(setup);
  // each tensor's partition is ⌈n / tp / dp⌉: the 70B word embedding is 50257 × 8192 over 4 ranks
  assert.equal(parts[0]!.elements, Math.ceil(50257 * 8192 / 4));
  assert.equal(parts.length, 2 + 12 * 88 + 2);
  const groups = partitionedSubgroups(setup);
  assert.deepEqual(groups.flatMap((g) => g.partitions), parts);
  for (const [i, g] of groups.entries()) {
    assert.equal(g.elements, g.partitions.reduce((t, p) => t + p.elements, 0));
    if (i === groups.length - 1) continue;
    assert.ok(g.elements >= 1e8, `sg${i} reaches sub_group_size`);
    assert.ok(g.elements - g.partitions.at(-1)!.elements < 1e8, `sg${i} ends at the crossing`);
  }
  assert.equal(groups.length, 134);
  assert.deepEqual(layout.map((sg) => sg.elements), groups.map((g) => g.elements));
  assert.equal(program.derived.subgroups_per_rank, 134);
});

Deno.test("zero-infinity names swap files as DeepSpeed does: first_last ds_id of the subgroup, state prefix, gradient offset and length", () => {
  const p = tiny({ sub_group_size: 1e7 });
  const names = new Set(io(p.ranks[0]!.ops).map(file));
  for (
    const f of [
      "0_10.tensor.swp",
      "exp_avg-11_18.tensor.swp",
      "exp_avg_sq-47_51.tensor.swp",
      "0_10_gradient_1051648_3145728.tensor.swp",
      "47_51_gradient_4199424_1048576.tensor.swp",
    ]
  ) assert.ok(names.has(f), f);
  assert.ok(
    io(p.ranks[0]!.ops).every((op) => op.object!.startsWith("zero_stage_3/optimizer/rank0/")),
  );
  // as the recording: 6 subgroups, 3 + 3 + 3 + 3 + 3 + 2 gradient files plus 4 in the first
  assert.equal(p.derived.subgroups_per_rank, 6);
  assert.equal(p.derived.gradient_files_per_rank, 18);
});

Deno.test("zero-infinity pads each state swap to 1 KiB × threads, not 4 KiB, at full size", () => {
  // 1025 × 256 fp32 elements: 1,049,600 bytes, a multiple of 1 KiB and not of 4 KiB
  const s = resolveSetup({
    tensors: { label: "x", list: [{ name: "w", numel: 1025 * 256 - 7 }] },
    ranksPerNode: 1,
    scale: 1,
  });
  const [sg] = swapLayout(s, zeroInfinitySettings());
  assert.equal(sg!.swapElements, 1025 * 256);
  assert.equal(sg!.stateBytes, 1049600);
  const two = swapLayout(s, zeroInfinitySettings({ threads: 2 }))[0]!;
  assert.equal(two.swapElements % 512, 0);
  // scaled sizes keep O_DIRECT's 4 KiB
  for (const x of swapped) assert.equal(x.stateBytes, scaledBytes(setup, x.swapElements * 4));
});

Deno.test("zero-infinity keeps tensors under max(1 MiB, block_size) in host memory, with no I/O", () => {
  const small = layout.filter((sg) => !sg.swapped);
  assert.deepEqual(small.map((sg) => sg.index), [133]);
  assert.equal(program.derived.subgroups_in_host_memory, 1);
  assert.ok(!rank0.ops.some((op) => op.label.startsWith("sg133.") && op.path !== undefined));
  for (const sg of swapped) {
    const g = partitionedSubgroups(setup)[sg.index]!;
    const big = g.partitions.filter((p) => p.elements * 4 >= MiB);
    assert.deepEqual(
      [...sg.gradients.map((f) => f.elements)].sort((a, b) => a - b),
      big.map((p) => p.elements - p.elements % 256).sort((a, b) => a - b),
    );
  }
  assert.equal(program.derived.gradient_files_per_rank, 4 * 88 + 2);
  const large = swapLayout(setup, zeroInfinitySettings({ bs: 8 * MiB }));
  for (const sg of large) for (const f of sg.gradients) assert.ok(f.elements * 4 >= 8 * MiB);
});

Deno.test("zero-infinity sends gradients per reduce bucket, ascending: with one subgroup all at the start of the update", () => {
  const ops = tiny().ranks[0]!.ops;
  for (const it of [0, 1]) {
    // nothing leaves in backward: the one gradient buffer (the subgroup's size) is never full
    assert.equal(io(phaseOps(ops, it, "backward")).length, 0);
    const upd = io(phaseOps(ops, it));
    const grads = upd.filter((op) => op.kind === "write" && file(op).includes("_gradient_"));
    assert.equal(grads.length, 18);
    assert.deepEqual(upd.slice(0, 18), grads, "the gradient writes come first");
    const offsets = grads.map((op) => Number(file(op).split("_")[3]));
    assert.deepEqual(offsets, [...offsets].sort((a, b) => a - b));
    // and the first read waits for them
    const firstRead = upd.find((op) => op.kind === "read")!;
    assert.ok(firstRead.after.includes(grads.at(-1)!.id));
  }
});

Deno.test("zero-infinity flushes a full reduce bucket in backward, later parameters first, each flush ascending", () => {
  // buckets of 6e6 elements: flushed as backward reaches the earlier layers
  const s = tinySetup(1e7);
  const deepspeed = config({ sub_group_size: 1e7, reduce_bucket_size: 6e6 });
  const l = zero3Layout(s, zeroInfinitySettings({ deepspeed }));
  assert.ok(l.flushes.length > 5);
  const order = l.flushes.flatMap((f) => f.pieces.map((p) => p.param));
  for (const f of l.flushes) {
    const ids = f.pieces.map((p) => p.param);
    assert.deepEqual(ids, [...ids].sort((a, b) => a - b), "ascending within a flush");
  }
  assert.ok(order[0]! > order.at(-1)!, "the last parameters' bucket goes first");
  const ops = zeroInfinity.build(s, { local: ["local"] }, { deepspeed }).ranks[0]!.ops;
  const back = phaseOps(ops, 1, "backward");
  const computes = back.filter((op) => op.kind === "compute");
  assert.ok(computes.length > 1, "backward is cut where buffers go out");
  // every gradient file is written once per step, in the order the flushes hand them over
  const writes = io(phaseOps(ops, 1, "backward")).concat(io(phaseOps(ops, 1)))
    .filter((op) => op.kind === "write" && file(op).includes("_gradient_"));
  assert.deepEqual(writes.map(file), l.flushes.flatMap((f) => f.pieces.map((p) => p.file)));
});

Deno.test("zero-infinity's first step reads no m and v and writes them padded; later steps read them", () => {
  const ops = tiny({ sub_group_size: 1e7 }).ranks[0]!.ops;
  const reads = (it: number) => io(phaseOps(ops, it)).filter((op) => op.kind === "read").map(file);
  assert.ok(!reads(0).some((f) => f.startsWith("exp_avg")));
  assert.ok(reads(0).includes("0_10.tensor.swp"));
  assert.ok(
    reads(1).includes("exp_avg-0_10.tensor.swp") &&
      reads(1).includes("exp_avg_sq-47_51.tensor.swp"),
  );
  const writes = (it: number) =>
    io(phaseOps(ops, it)).filter((op) => op.kind === "write" && !file(op).includes("_gradient_"));
  assert.equal(writes(0).length, 18);
  assert.deepEqual(writes(0).map(file), writes(1).map(file));
  // the fp32 partition alone exists before the first op
  assert.deepEqual(
    tiny({ sub_group_size: 1e7 }).ranks[0]!.initial.map((o) => o.object.split("/").at(-1)),
    ["0_10", "11_18", "19_28", "29_36", "37_46", "47_51"].map((id) => `${id}.tensor.swp`),
  );
});

Deno.test("zero-infinity's serial swapper uses one aio handle: read states, wait, read gradients, wait, Adam, write, wait", () => {
  const ops = phaseOps(tiny({ sub_group_size: 1e7 }).ranks[0]!.ops, 1);
  assert.deepEqual([...new Set(io(ops).map((op) => op.stream))], ["local:optimizer"]);
  const byId = new Map(ops.map((op) => [op.id, op]));
  const adam = ops.filter((op) => op.label.endsWith(".adam"));
  assert.equal(adam.length, 6);
  for (const [i, c] of adam.entries()) {
    const mine = io(ops).filter((op) => op.label.startsWith(`sg${i}.`));
    const states = mine.filter((op) => op.kind === "read" && !op.label.includes(".grad@"));
    const grads = mine.filter((op) => op.kind === "read" && op.label.includes(".grad@"));
    assert.deepEqual(states.map((op) => op.label), [
      `sg${i}.params.in`,
      `sg${i}.exp_avg.in`,
      `sg${i}.exp_avg_sq.in`,
    ]);
    // the gradients are read once the states are in
    for (const g of grads) assert.ok(g.after.includes(states.at(-1)!.id));
    assert.ok(c.after.includes(grads.at(-1)!.id));
    const writes = mine.filter((op) => op.kind === "write" && !op.label.includes(".grad@"));
    assert.ok(writes.every((w) => w.after.includes(c.id)));
    const next = io(ops).find((op) => op.kind === "read" && op.label.startsWith(`sg${i + 1}.`));
    if (next) {
      assert.ok(next.after.includes(writes.at(-1)!.id), `sg${i + 1} waits for sg${i}'s write`);
    }
    assert.ok(byId.get(c.after[0]!) !== undefined);
  }
  assert.equal(tiny().derived.pipeline, false);
});

Deno.test("zero-infinity's pipelined swapper reads on one handle and writes on another, one ahead each way", () => {
  const p = tiny({
    sub_group_size: 1e7,
    offload_optimizer: { pipeline_read: true, pipeline_write: true, buffer_count: 12 },
  });
  const ops = phaseOps(p.ranks[0]!.ops, 1);
  assert.deepEqual(new Set(io(ops).map((op) => op.stream)), new Set(["local:read", "local:write"]));
  const adam = (i: number) => ops.find((op) => op.label === `sg${i}.adam`)!;
  const reads = (i: number) =>
    ops.filter((op) => op.kind === "read" && op.label.startsWith(`sg${i}.`));
  const writes = (i: number) =>
    ops.filter((op) => op.kind === "write" && op.label.startsWith(`sg${i}.`));
  for (let i = 1; i < 5; i++) {
    // read(i+1) is issued once read(i) is in, before Adam(i)
    assert.ok(reads(i + 1)[0]!.after.includes(reads(i).at(-1)!.id));
    assert.ok(reads(i + 1)[0]!.id < adam(i).id);
    // write(i) is issued once write(i−1) is done; Adam(i) does not wait for it
    assert.ok(writes(i)[0]!.after.includes(writes(i - 1).at(-1)!.id));
    assert.ok(!adam(i).after.includes(writes(i - 1).at(-1)!.id));
  }
  // the same bytes as the serial swapper moves (padded writes instead of unpadded ones)
  assert.deepEqual(
    bytesByPath(ops),
    bytesByPath(phaseOps(tiny({ sub_group_size: 1e7 }).ranks[0]!.ops, 1)),
  );
  // pipeline_read alone: reads ahead, waits for each write
  const r = phaseOps(
    tiny({ sub_group_size: 1e7, offload_optimizer: { pipeline_read: true, buffer_count: 8 } })
      .ranks[0]!.ops,
    1,
  );
  const rw = (i: number) => r.filter((op) => op.kind === "write" && op.label.startsWith(`sg${i}.`));
  const ra = (i: number) => r.find((op) => op.label === `sg${i}.adam`)!;
  assert.ok(ra(2).after.includes(rw(1).at(-1)!.id));
});

Deno.test("zero-infinity refuses a buffer_count DeepSpeed's swappers run out of, naming the count they need", () => {
  // the recordings: 4 and 8 fail with several subgroups, 12 runs
  for (const n of [4, 8]) {
    assert.throws(
      () =>
        tiny({
          sub_group_size: 1e7,
          offload_optimizer: { pipeline_read: true, pipeline_write: true, buffer_count: n },
        }),
      (e: Error) =>
        e.message.includes("ds.json: zero_optimization.offload_optimizer.buffer_count") &&
        e.message.includes("it needs 12") &&
        e.message.includes("pipelined_optimizer_swapper.py"),
    );
  }
  tiny({
    sub_group_size: 1e7,
    offload_optimizer: { pipeline_read: true, pipeline_write: true, buffer_count: 12 },
  });
  // one subgroup pipelined runs with 4 (the recording), the serial swapper needs 4 for Adam
  tiny({ offload_optimizer: { pipeline_read: true, pipeline_write: true, buffer_count: 4 } });
  assert.throws(
    () => tiny({ offload_optimizer: { buffer_count: 3 } }),
    /needs 4.*partitioned_optimizer_swapper\.py/,
  );
  assert.throws(
    () => zeroInfinity.build(tinySetup(), { local: ["local"] }, { bufferCount: 2 }),
    /--buffer-count: 2 is too few for the serial swapper/,
  );
});

Deno.test("zero-infinity with offload_param reads parameters in forward and backward and writes them in the update", () => {
  const p = tiny({
    offload_param: {
      device: "nvme",
      nvme_path: "/var/tmp/dsnvme",
      buffer_count: 40,
      buffer_size: 5e6,
      max_in_cpu: 0,
    },
  });
  const ops = p.ranks[0]!.ops;
  const ids = (list: Op[]) => list.map((op) => Number(file(op).split("_")[0]));
  const fwd = io(phaseOps(ops, 0, "forward"));
  const bwd = io(phaseOps(ops, 0, "backward"));
  const expected = [0, 4, 6, 10, 12, 16, 18, 22, 24, 28, 30, 34, 36, 40, 42, 46, 48, 50];
  assert.deepEqual(ids(fwd), expected);
  assert.deepEqual(ids(bwd), [...expected].reverse());
  assert.ok(
    fwd.every((op) =>
      op.stream === "local:param-read" && op.object!.includes("float32params/rank0/")
    ),
  );
  const upd = io(phaseOps(ops, 0));
  const params = upd.filter((op) => op.stream === "local:param-write");
  assert.deepEqual(ids(params), expected);
  const adam = phaseOps(ops, 0).find((op) => op.label === "sg0.adam")!;
  const stateWrite = upd.find((op) => op.kind === "write" && file(op) === "0_51.tensor.swp")!;
  assert.ok(params.every((op) => op.after.includes(adam.id)));
  assert.ok(
    stateWrite.after.includes(params.at(-1)!.id),
    "the state is written once the parameters are",
  );
  assert.equal(p.derived.params_on_nvme_per_rank, 18);
  // max_in_cpu holds every subgroup that fits: no parameter I/O after the initialization
  const cpu = tiny({ offload_param: { device: "nvme", nvme_path: "/x", buffer_size: 5e6 } });
  assert.ok(!cpu.ranks[0]!.ops.some((op) => op.stream.includes("param")));
  assert.throws(
    () =>
      tiny({
        offload_param: { device: "nvme", nvme_path: "/x", buffer_size: 4194304, max_in_cpu: 0 },
      }),
    /buffer_size: 4194304 elements is not more than blocks\.0\.fc1\.weight's partition.*partitioned_param_swapper\.py L345/,
  );
});

Deno.test("zero-infinity with gradient accumulation runs forward and backward per micro-step and sends gradients once", () => {
  const deepspeed = { ...config(), gradientAccumulationSteps: 3 };
  const p = zeroInfinity.build(tinySetup(), { local: ["local"] }, { deepspeed });
  const ops = p.ranks[0]!.ops;
  assert.equal(phaseOps(ops, 1, "forward").filter((op) => op.kind === "compute").length, 3);
  const grads = ops.filter((op) =>
    op.iteration === 1 && op.kind === "write" && op.label.includes(".grad@")
  );
  assert.equal(grads.length, 18);
});

Deno.test("zero-infinity backward waits for every gradient write when all its pinned buffers are in flight", () => {
  // sub_group_size 1e7: six gradient buffers' worth; with 4 buffers the fifth waits for all
  const ops = tiny({ sub_group_size: 1e7 }).ranks[0]!.ops;
  const back = phaseOps(ops, 1, "backward");
  const writes = back.filter((op) => op.kind === "write");
  assert.equal(writes.map(file).filter((f) => f.startsWith("37_46")).length, 3);
  const waited = writes.filter((op) => op.after.length > 1);
  // the 37_46 buffer is issued once 0_10 … 29_36 are written
  assert.deepEqual(new Set(waited.map((op) => file(op).split("_gradient")[0])), new Set(["37_46"]));
  assert.ok(
    waited[0]!.after.includes(writes.filter((op) => file(op).startsWith("29_36")).at(-1)!.id),
  );
  // with 8 buffers nobody waits in backward
  const eight = phaseOps(
    tiny({ sub_group_size: 1e7, offload_optimizer: { buffer_count: 8 } }).ranks[0]!.ops,
    1,
    "backward",
  );
  assert.ok(eight.filter((op) => op.kind === "write").every((op) => op.after.length === 1));
});

Deno.test("zero-infinity --threads T cuts each swap into T slices on the path", () => {
  assert.equal(program.paths[0]!.threads, undefined);
  const p = zeroInfinity.build(setup, { local: ["local"] }, { threads: 4 });
  assert.equal(p.paths[0]!.threads, 4);
  assert.equal(p.derived.threads, 4);
  assert.throws(() => zeroInfinitySettings({ threads: 0 }), /threads/);
});

Deno.test("zero-infinity says what stays on disk after the run: every swap file, gradients and parameters included", () => {
  const d = zeroInfinityDerived(tinySetup(), { deepspeed: config() });
  // 0_51, exp_avg-0_51, exp_avg_sq-0_51 and 18 gradient files
  assert.equal(d.nvme_files_left_per_rank, 21);
  assert.equal(
    d.nvme_bytes_left_per_rank,
    3 * 60872704 * 4 + Number(d.gradient_write_bytes_per_rank),
  );
});

Deno.test("zero-infinity refuses to build without a local path", () => {
  assert.throws(() => zeroInfinity.build(setup, { local: [] }), /needs a local path.*file:DIR/);
});

Deno.test("zero-infinity sizes and orders are a function of the setup alone", () => {
  const a = tiny({ sub_group_size: 1e7 });
  const b = tiny({ sub_group_size: 1e7 });
  assert.deepEqual(a.ranks, b.ranks);
  const s: TrainingSetup = tinySetup();
  assert.equal(s.parameters, 60872704);
});
