import assert from "node:assert/strict";
import { activationBytesPerLayer, layerForwardFlops } from "./model.ts";
import { bytesByPath, type Op } from "./ops.ts";
import { gpuMs, resolveSetup, scaledBytes } from "./setup.ts";
import { ssdtrain, SSDTRAIN_BS } from "./ssdtrain.ts";

const setup = resolveSetup({ model: "7b", scale: 0.001, iterations: 2, warmup: 0 });
const program = ssdtrain.build(setup, { local: ["local"] });
const rank0 = program.ranks[0]!;
const L = setup.model.layers;
// s·b·h·(34 + 5·a·s/h) with s 2048, b 1, h 4096, a 32, tp 1
const act = 2048 * 4096 * (34 + (5 * 32 * 2048) / 4096);
const actScaled = scaledBytes(setup, act);
const fwdMs = gpuMs(setup, 24 * 2048 * 4096 ** 2 + 4 * 2048 ** 2 * 4096);

const phaseOps = (ops: readonly Op[], it: number, phase: string) =>
  ops.filter((op) => op.iteration === it && op.phase === phase);

Deno.test("ssdtrain writes and reads one layer's activations, s·b·h·(34 + 5·a·s/h), for every layer but the last", () => {
  assert.equal(program.ranks.length, 4);
  assert.equal(act, activationBytesPerLayer(setup.model, 1, 1));
  assert.equal(program.derived.activation_bytes_per_layer_unscaled, act);
  assert.equal(program.derived.activation_bytes_per_layer, actScaled);
  // 956 301 312 B × 0.001, rounded up to 4 KiB
  assert.equal(actScaled, 958_464);
  for (let it = 0; it < 2; it++) {
    assert.deepEqual(bytesByPath(phaseOps(rank0.ops, it, "forward")), {
      "local:write": (L - 1) * actScaled,
    });
    assert.deepEqual(bytesByPath(phaseOps(rank0.ops, it, "backward")), {
      "local:read": (L - 1) * actScaled,
    });
  }
  assert.equal(program.derived.write_bytes_per_rank, (L - 1) * actScaled);
  assert.equal(rank0.initial.length, 0);
});

Deno.test("ssdtrain keeps the last layer on the GPU", () => {
  const objects = rank0.ops.filter((op) => op.kind !== "compute" && op.kind !== "barrier")
    .map((op) => op.object);
  assert.ok(!objects.includes(`layer${L - 1}.act`));
  assert.ok(objects.includes(`layer${L - 2}.act`) && objects.includes("layer0.act"));
  // its backward waits for no read: it follows the barrier on the compute stream
  const bwdLast = rank0.ops.find((op) => op.label === `layer${L - 1}.backward`)!;
  assert.deepEqual(bwdLast.after, []);
  assert.equal(rank0.ops[bwdLast.id - 1]!.kind, "barrier");
});

Deno.test("ssdtrain issues a barrier, L forwards and L−1 writes, then a barrier, L−1 reads and L backwards", () => {
  for (let it = 0; it < 2; it++) {
    const fwd = phaseOps(rank0.ops, it, "forward");
    const bwd = phaseOps(rank0.ops, it, "backward");
    assert.equal(fwd.length, 1 + L + (L - 1));
    assert.equal(bwd.length, 1 + (L - 1) + L);
    assert.equal(fwd[0]!.kind, "barrier");
    assert.equal(bwd[0]!.kind, "barrier");
    // forward alternates compute(l), write(l); compute of the last layer ends it
    assert.deepEqual(
      fwd.slice(1, 5).map((op) => op.label),
      ["layer0.forward", "layer0.act", "layer1.forward", "layer1.act"],
    );
    assert.equal(fwd.at(-1)!.label, `layer${L - 1}.forward`);
  }
  assert.equal(rank0.ops.length, 2 * (2 + 2 * L + 2 * (L - 1)));
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

Deno.test("ssdtrain reads activations back in reverse layer order", () => {
  for (let it = 0; it < 2; it++) {
    const reads = rank0.ops.filter((op) => op.kind === "read" && op.iteration === it);
    assert.deepEqual(
      reads.map((op) => op.object),
      Array.from({ length: L - 1 }, (_, i) => `layer${L - 2 - i}.act`),
    );
    assert.ok(reads.every((op) => op.stream === "local:read" && op.path === "local"));
    const writes = rank0.ops.filter((op) => op.kind === "write" && op.iteration === it);
    assert.deepEqual(
      writes.map((op) => op.object),
      Array.from({ length: L - 1 }, (_, i) => `layer${i}.act`),
    );
    assert.ok(writes.every((op) => op.stream === "local:write"));
  }
});

Deno.test("ssdtrain starts read(l) when backward(l + prefetch) starts, after write(l)", () => {
  for (const prefetch of [1, 3]) {
    const ops = ssdtrain.build(setup, { local: ["local"] }, { prefetch }).ranks[0]!.ops;
    const it1 = (op: Op) => op.iteration === 1;
    const bwdOf = (l: number) => ops.find((op) => it1(op) && op.label === `layer${l}.backward`)!;
    const readOf = (l: number) =>
      ops.find((op) => it1(op) && op.kind === "read" && op.object === `layer${l}.act`)!;
    const writeOf = (l: number) =>
      ops.find((op) => it1(op) && op.kind === "write" && op.object === `layer${l}.act`)!;
    for (let l = 0; l < L - 1; l++) {
      const read = readOf(l);
      assert.ok(read.after.includes(writeOf(l).id), `read ${l} waits for its write`);
      const computes = read.after.filter((a) => ops[a]!.kind === "compute");
      if (l + prefetch + 1 <= L - 1) {
        assert.deepEqual(computes, [bwdOf(l + prefetch + 1).id], `read ${l}`);
      } else {
        assert.deepEqual(computes, [], `read ${l} starts with the phase`);
      }
      assert.equal(ops[read.after[0]!]!.label, "backward");
      // backward(l) waits for its read
      assert.deepEqual(bwdOf(l).after, [read.id]);
    }
  }
  assert.throws(() => ssdtrain.build(setup, { local: ["local"] }, { prefetch: 0 }), /prefetch 0/);
});

Deno.test("ssdtrain bounds the write-behind: forward(l) waits for write(l−2)", () => {
  const ops = rank0.ops.filter((op) => op.iteration === 0);
  const fwdOf = (l: number) => ops.find((op) => op.label === `layer${l}.forward`)!;
  const writeOf = (l: number) =>
    ops.find((op) => op.kind === "write" && op.object === `layer${l}.act`)!;
  assert.deepEqual(fwdOf(0).after, [ops[0]!.id]);
  assert.deepEqual(fwdOf(1).after, [ops[0]!.id]);
  for (let l = 2; l < L; l++) assert.ok(fwdOf(l).after.includes(writeOf(l - 2).id));
  for (let l = 0; l < L - 1; l++) assert.deepEqual(writeOf(l).after, [fwdOf(l).id]);
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
  // before backward: the last forward and the last write
  assert.deepEqual(
    bwd0!.after.map((a) => rank0.ops[a]!.label).sort(),
    [
      `layer${L - 1}.forward`,
      `layer${L - 2}.act`,
    ].sort(),
  );
  // before the next forward: the last backward, the last read and the last write
  assert.deepEqual(
    fwd1!.after.map((a) => `${rank0.ops[a]!.kind}:${rank0.ops[a]!.label}`).sort(),
    ["compute:layer0.backward", "read:layer0.act", `write:layer${L - 2}.act`].sort(),
  );
});

Deno.test("ssdtrain drives the local path with 4 MiB requests unless bs says otherwise", () => {
  assert.deepEqual(program.paths.map((p) => [p.name, p.role, p.bs, p.iodepth]), [
    ["local", "local", SSDTRAIN_BS, 8],
  ]);
  assert.equal(SSDTRAIN_BS, 4 << 20);
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
  const objects = (phase: string) =>
    phaseOps(ops, 0, phase).filter((op) => op.kind !== "compute" && op.kind !== "barrier")
      .map((op) => op.object);
  assert.deepEqual(objects("forward"), ["layer0.act", "layer1.act", "layer2.act"]);
  assert.deepEqual(objects("backward"), ["layer2.act", "layer1.act", "layer0.act"]);
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
