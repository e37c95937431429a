import assert from "node:assert/strict";
import { activationBytesPerLayer, layerForwardFlops } from "./model.ts";
import type { Op } from "./ops.ts";
import { gpuMs, resolveSetup, scaledBytes } from "./setup.ts";
import {
  ACTIVATION_TENSORS,
  ssdtrain,
  SSDTRAIN_IO_THREADS,
  SSDTRAIN_TASK_SIZE,
} from "./ssdtrain.ts";

const setup = resolveSetup({ model: "7b", scale: 0.001, iterations: 2, warmup: 0 });
const program = ssdtrain.build(setup, { local: ["local"] });
const rank0 = program.ranks[0]!;
const L = setup.model.layers;
const T = ACTIVATION_TENSORS.length;
// s·b·h·(34 + 5·a·s/h) with s 2048, b 1, h 4096, a 32, tp 1
const sbh = 2048 * 4096, as2b = 32 * 2048 * 2048;
const act = sbh * (34 + (5 * 32 * 2048) / 4096);
// one file per tensor, each rounded up to 4 KiB after scaling
const actScaled = ACTIVATION_TENSORS.reduce(
  (t, x) => t + scaledBytes(setup, x.sbh * sbh + x.as2b * as2b),
  0,
);
const fwdMs = gpuMs(setup, 24 * 2048 * 4096 ** 2 + 4 * 2048 ** 2 * 4096);

const phaseOps = (ops: readonly Op[], it: number, phase: string) =>
  ops.filter((op) => op.iteration === it && op.phase === phase);
const io = (op: Op) => op.kind === "read" || op.kind === "write";

Deno.test("ssdtrain saves 15 tensors per layer adding up to s·b·h·(34 + 5·a·s/h), one file each, for every layer but the last", () => {
  assert.equal(program.ranks.length, 4);
  assert.equal(T, 15);
  assert.equal(ACTIVATION_TENSORS.reduce((t, x) => t + x.sbh, 0), 34);
  assert.equal(ACTIVATION_TENSORS.reduce((t, x) => t + x.as2b, 0), 5);
  assert.equal(act, activationBytesPerLayer(setup.model, 1, 1));
  assert.equal(program.derived.activation_bytes_per_layer_unscaled, act);
  assert.equal(program.derived.activation_bytes_per_layer, actScaled);
  assert.equal(program.derived.tensors_per_layer, 15);
  // 956 301 312 B × 0.001 in 15 files, each rounded up to 4 KiB
  assert.ok(actScaled >= act * 0.001 && actScaled - act * 0.001 < 15 * 4096);
  for (let it = 0; it < 2; it++) {
    const fwd = phaseOps(rank0.ops, it, "forward").filter(io);
    assert.equal(fwd.length, (L - 1) * T);
    assert.equal(new Set(fwd.map((op) => op.object)).size, (L - 1) * T);
    assert.equal(fwd.reduce((t, op) => t + op.bytes, 0), (L - 1) * actScaled);
    const bwd = phaseOps(rank0.ops, it, "backward").filter(io);
    assert.equal(bwd.reduce((t, op) => t + op.bytes, 0), (L - 1) * actScaled);
    assert.ok(fwd.every((op) => op.kind === "write") && bwd.every((op) => op.kind === "read"));
  }
  assert.equal(program.derived.write_bytes_per_rank, (L - 1) * actScaled);
  assert.equal(rank0.initial.length, 0);
});

Deno.test("ssdtrain keeps the last layer on the GPU", () => {
  const objects = rank0.ops.filter(io).map((op) => op.object);
  assert.ok(!objects.some((o) => o!.startsWith(`layer${L - 1}.`)));
  assert.ok(objects.includes(`layer${L - 2}.gelu.input`) && objects.includes("layer0.q"));
  // its backward waits for no read: it follows the barrier on the compute stream
  const bwdLast = rank0.ops.find((op) => op.label === `layer${L - 1}.backward`)!;
  assert.deepEqual(bwdLast.after, []);
  assert.equal(rank0.ops[bwdLast.id - 1]!.kind, "barrier");
});

Deno.test("ssdtrain issues a barrier, L forwards and (L−1)·15 writes, then a barrier, (L−1)·15 reads and L backwards", () => {
  for (let it = 0; it < 2; it++) {
    const fwd = phaseOps(rank0.ops, it, "forward");
    const bwd = phaseOps(rank0.ops, it, "backward");
    assert.equal(fwd.length, 1 + L + (L - 1) * T);
    assert.equal(bwd.length, 1 + (L - 1) * T + L);
    assert.equal(fwd[0]!.kind, "barrier");
    assert.equal(bwd[0]!.kind, "barrier");
    // forward: compute(l), then its tensors; compute of the last layer ends it
    assert.deepEqual(
      fwd.slice(1, 4).map((op) => op.label),
      ["layer0.forward", "layer0.ln1.input", "layer0.qkv.input"],
    );
    assert.equal(fwd[2 + T]!.label, "layer1.forward");
    assert.equal(fwd.at(-1)!.label, `layer${L - 1}.forward`);
  }
  assert.equal(rank0.ops.length, 2 * (2 + 2 * L + 2 * (L - 1) * T));
});

Deno.test("ssdtrain thinks layerForwardFlops per layer in forward and twice that in backward", () => {
  const computes = rank0.ops.filter((op) => op.kind === "compute" && op.iteration === 0);
  assert.equal(fwdMs, gpuMs(setup, layerForwardFlops(setup.model, 1, 1)));
  for (const op of computes) {
    assert.equal(op.stream, "compute");
    assert.equal(op.ms, op.phase === "forward" ? fwdMs : 2 * fwdMs);
  }
  assert.equal(computes.length, 2 * L);
});

Deno.test("ssdtrain deals the tensors to 8 I/O threads in turn, reads back in reverse layer order", () => {
  assert.equal(SSDTRAIN_IO_THREADS, 8);
  assert.equal(program.derived.io_threads_per_rank, 8);
  for (let it = 0; it < 2; it++) {
    const writes = rank0.ops.filter((op) => op.kind === "write" && op.iteration === it);
    // tensor j of the iteration on thread j mod 8
    writes.forEach((op, j) => assert.equal(op.stream, `local:write.t${j % 8}`));
    assert.deepEqual(
      writes.map((op) => op.object),
      Array.from({ length: L - 1 }, (_, l) => ACTIVATION_TENSORS.map((t) => `layer${l}.${t.name}`))
        .flat(),
    );
    const reads = rank0.ops.filter((op) => op.kind === "read" && op.iteration === it);
    reads.forEach((op, j) => assert.equal(op.stream, `local:read.t${j % 8}`));
    assert.deepEqual(
      reads.map((op) => op.object),
      Array.from(
        { length: L - 1 },
        (_, i) => ACTIVATION_TENSORS.map((t) => `layer${L - 2 - i}.${t.name}`),
      ).flat(),
    );
    assert.ok(reads.every((op) => op.path === "local"));
    const streams = new Set(rank0.ops.filter(io).map((op) => op.stream));
    assert.equal(streams.size, 2 * 8);
  }
});

Deno.test("ssdtrain starts layer l's reads when backward(l + prefetch) starts, each after its write", () => {
  for (const prefetch of [1, 3]) {
    const ops = ssdtrain.build(setup, { local: ["local"] }, { prefetch }).ranks[0]!.ops;
    const it1 = (op: Op) => op.iteration === 1;
    const bwdOf = (l: number) => ops.find((op) => it1(op) && op.label === `layer${l}.backward`)!;
    const of = (kind: string, l: number) =>
      ops.filter((op) => it1(op) && op.kind === kind && op.object!.startsWith(`layer${l}.`));
    for (let l = 0; l < L - 1; l++) {
      const reads = of("read", l), writes = of("write", l);
      assert.equal(reads.length, T);
      for (const [i, read] of reads.entries()) {
        assert.ok(read.after.includes(writes[i]!.id), `read ${l}.${i} waits for its write`);
        const computes = read.after.filter((a) => ops[a]!.kind === "compute");
        if (l + prefetch + 1 <= L - 1) {
          assert.deepEqual(computes, [bwdOf(l + prefetch + 1).id], `read ${l}`);
        } else {
          assert.deepEqual(computes, [], `read ${l} starts with the phase`);
        }
        assert.equal(ops[read.after[0]!]!.label, "backward");
      }
      // backward(l) waits for all its reads
      assert.deepEqual(bwdOf(l).after, reads.map((op) => op.id));
    }
  }
  assert.throws(() => ssdtrain.build(setup, { local: ["local"] }, { prefetch: 0 }), /prefetch 0/);
});

Deno.test("ssdtrain bounds the write-behind: forward(l) waits for every write of layer l−2", () => {
  const ops = rank0.ops.filter((op) => op.iteration === 0);
  const fwdOf = (l: number) => ops.find((op) => op.label === `layer${l}.forward`)!;
  const writesOf = (l: number) =>
    ops.filter((op) => op.kind === "write" && op.object!.startsWith(`layer${l}.`));
  assert.deepEqual(fwdOf(0).after, [ops[0]!.id]);
  assert.deepEqual(fwdOf(1).after, [ops[0]!.id]);
  for (let l = 2; l < L; l++) {
    assert.deepEqual(fwdOf(l).after, [ops[0]!.id, ...writesOf(l - 2).map((op) => op.id)]);
  }
  for (let l = 0; l < L - 1; l++) {
    for (const w of writesOf(l)) assert.deepEqual(w.after, [fwdOf(l).id]);
  }
});

Deno.test("ssdtrain barriers wait for the last op of every stream", () => {
  const barriers = rank0.ops.filter((op) => op.kind === "barrier");
  assert.deepEqual(barriers.map((op) => `${op.iteration}.${op.phase}`), [
    "0.forward",
    "0.backward",
    "1.forward",
    "1.backward",
  ]);
  const [, bwd0, fwd1] = barriers;
  const lastOn = (stream: string, before: number) =>
    rank0.ops.filter((op) => op.stream === stream && op.id < before).at(-1)!.id;
  const threads = Array.from({ length: 8 }, (_, k) => k);
  // before backward: the last forward and the last write of every thread
  assert.deepEqual(
    [...bwd0!.after].sort((a, b) => a - b),
    [
      lastOn("compute", bwd0!.id),
      ...threads.map((k) => lastOn(`local:write.t${k}`, bwd0!.id)),
    ].sort((a, b) => a - b),
  );
  // before the next forward: the last backward, the last read and write of every thread
  assert.deepEqual(
    [...fwd1!.after].sort((a, b) => a - b),
    [
      lastOn("compute", fwd1!.id),
      ...threads.map((k) => lastOn(`local:write.t${k}`, fwd1!.id)),
      ...threads.map((k) => lastOn(`local:read.t${k}`, fwd1!.id)),
    ].sort((a, b) => a - b),
  );
  assert.equal(rank0.ops[lastOn("compute", fwd1!.id)]!.label, "layer0.backward");
});

Deno.test("ssdtrain takes one request of at most the 64 MiB task size at a time per thread unless bs/iodepth say otherwise", () => {
  assert.equal(SSDTRAIN_TASK_SIZE, 64 << 20);
  assert.equal(program.derived.task_size, 64 << 20);
  // scaled tensors are smaller than a task: requests (and buffers) of the largest tensor
  const largest = Math.max(...rank0.ops.filter(io).map((op) => op.bytes));
  assert.deepEqual(program.paths.map((p) => [p.name, p.role, p.bs, p.iodepth]), [
    ["local", "local", largest, 1],
  ]);
  const full = ssdtrain.build({ ...setup, scale: 1 }, { local: ["local"] });
  // the softmax output, 2·a·s²·b = 256 MiB, is larger than a task
  assert.deepEqual([full.paths[0]!.bs, full.paths[0]!.iodepth], [64 << 20, 1]);
  const p = ssdtrain.build(setup, { local: ["local"] }, { bs: 1 << 20, iodepth: 4 });
  assert.deepEqual([p.paths[0]!.bs, p.paths[0]!.iodepth], [1 << 20, 4]);
});

Deno.test("ssdtrain refuses to build without a local path", () => {
  assert.throws(() => ssdtrain.build(setup, { local: [] }), /ssdtrain needs a local path/);
});

Deno.test("ssdtrain with offloadLayers writes and reads only the first N layers, the rest stay on the GPU", () => {
  const p = ssdtrain.build(setup, { local: ["local"] }, { offloadLayers: 3 });
  assert.equal(p.derived.offloaded_layers, 3);
  const ops = p.ranks[0]!.ops;
  const objects = (phase: string) => [
    ...new Set(
      phaseOps(ops, 0, phase).filter(io).map((op) => op.object!.split(".")[0]),
    ),
  ];
  assert.deepEqual(objects("forward"), ["layer0", "layer1", "layer2"]);
  assert.deepEqual(objects("backward"), ["layer2", "layer1", "layer0"]);
  // every layer still computes, forward and backward
  const computes = phaseOps(ops, 0, "forward").filter((op) => op.kind === "compute");
  assert.equal(computes.length, L);
  assert.equal(
    ssdtrain.build(setup, { local: ["local"] }, { offloadLayers: 0 }).ranks[0]!.ops
      .filter((op) => op.kind === "write" || op.kind === "read").length,
    0,
  );
  for (const bad of [-1, L, 1.5]) {
    assert.throws(
      () => ssdtrain.build(setup, { local: ["local"] }, { offloadLayers: bad }),
      /offloadLayers .* not an integer in \[0, 31\]/,
    );
  }
});
