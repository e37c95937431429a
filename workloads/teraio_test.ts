import assert from "node:assert/strict";
import { activationBytesPerLayer, layerForwardFlops, modelPreset } from "./model.ts";
import { bytesByPath, type Op } from "./ops.ts";
import { gpuMs, resolveSetup, scaledBytes, type TrainingSetup } from "./setup.ts";
import {
  teraio,
  TERAIO_MIN_TENSOR_BYTES,
  TERAIO_PLAN_BYTES_PER_S,
  TERAIO_TENSORS,
  teraioPlan,
  teraioTensorBytes,
} from "./teraio.ts";

const setup = resolveSetup({ model: "7b", scale: 0.001, iterations: 2, warmup: 0 });
const L = setup.model.layers;
const one = teraio.build(setup, { local: ["local"] });
const two = teraio.build(setup, { local: ["local", "local2"] });
// 7B: s 2048, b 1, h 4096, a 32
const sbh = 2048 * 4096;
const as2b = 32 * 2048 * 2048;
const fwdMsUnscaled = ((24 * 2048 * 4096 ** 2 + 4 * 2048 ** 2 * 4096) / 100e12) * 1000;

/** The plan's rule, restated: big enough, and idle long enough to go out and come back. */
function offloads(s: TrainingSetup, paths: number, l: number, bytes: number): boolean {
  const fwd = (layerForwardFlops(s.model, s.microBatch, s.tensorParallel) / 100e12) * 1000;
  const idle = (s.model.layers - 1 - l) * 3 * fwd;
  return bytes >= 1 << 20 && idle >= (2 * bytes / (2e9 * paths)) * 1000;
}

Deno.test("teraio's tensors of a layer add up to s·b·h·34 + 5·a·s²·b", () => {
  const coef = TERAIO_TENSORS.reduce((t, x) => [t[0]! + x.sbh, t[1]! + x.as2b], [0, 0]);
  assert.deepEqual(coef, [34, 5]);
  assert.equal(TERAIO_TENSORS.length, 14);
  for (const [model, mb, tp] of [["7b", 1, 1], ["70b", 2, 4], ["175b", 1, 8]] as const) {
    const m = modelPreset(model);
    const sum = teraioTensorBytes(m, mb, tp).reduce((t, x) => t + x.bytes, 0);
    assert.ok(Math.abs(sum / activationBytesPerLayer(m, mb, tp) - 1) < 1e-12, model);
  }
  const bytes = Object.fromEntries(
    teraioTensorBytes(setup.model, 1, 1).map((t) => [t.name, t.bytes]),
  );
  assert.equal(bytes.gelu_in, 8 * sbh);
  assert.equal(bytes.softmax_out, 2 * as2b);
  assert.equal(bytes.softmax_mask, as2b);
  assert.equal(bytes.mlp_mask, sbh);
});

Deno.test("teraio offloads a tensor when its idle window covers writing and reading it at the planning bandwidth", () => {
  assert.equal(TERAIO_PLAN_BYTES_PER_S, 2e9);
  for (const paths of [1, 2, 4]) {
    const plan = teraioPlan(setup, paths);
    assert.ok(Math.abs(plan.forwardMs - fwdMsUnscaled) < 1e-9);
    for (const [l, ts] of plan.layers.entries()) {
      for (const t of ts) {
        assert.equal(t.offload, offloads(setup, paths, l, t.bytes), `${l} ${t.name}`);
      }
    }
  }
  // one path: layer L−2 is idle 3 × 8.93 ms = 26.8 ms, enough for tensors up to 2·s·b·h (16.8 ms)
  const plan = teraioPlan(setup, 1);
  const named = (l: number, offload: boolean) =>
    plan.layers[l]!.filter((t) => t.offload === offload).map((t) => t.name);
  assert.deepEqual(named(L - 2, false), [
    "qk",
    "softmax_out",
    "softmax_mask",
    "attn_dropout_out",
    "gelu_in",
    "fc2_in",
  ]);
  assert.deepEqual(named(L - 3, false), [
    "softmax_out",
    "softmax_mask",
    "attn_dropout_out",
    "gelu_in",
    "fc2_in",
  ]);
  // softmax output (2·a·s²·b, 268 ms to go out and back) needs 11 layers of idle time
  assert.equal(named(L - 11, false).length, 2);
  assert.equal(named(L - 12, false).length, 0);
  assert.equal(named(0, true).length, 14);
  // two paths halve the time: Q and K (4·s·b·h) fit in layer L−2's window
  assert.ok(teraioPlan(setup, 2).layers[L - 2]!.find((t) => t.name === "qk")!.offload);
});

Deno.test("teraio keeps the last layer and tensors under 1 MiB on the GPU", () => {
  for (const plan of [teraioPlan(setup, 1), teraioPlan(setup, 4)]) {
    assert.ok(plan.layers[L - 1]!.every((t) => !t.offload));
  }
  assert.ok(!one.ranks[0]!.ops.some((op) => op.object?.startsWith(`layer${L - 1}.`)));
  // tp 16: s·b·h/tp is 512 KiB, so the two dropout masks of s·b·h stay, the rest goes out
  const tp16 = resolveSetup({ model: "7b", ranksPerNode: 16, tensorParallel: 16, scale: 0.001 });
  assert.equal(TERAIO_MIN_TENSOR_BYTES, 1 << 20);
  const kept = teraioPlan(tp16, 1).layers[0]!.filter((t) => !t.offload).map((t) => t.name);
  assert.deepEqual(kept, ["attn_mask", "mlp_mask"]);
});

Deno.test("teraio stripes each offloaded tensor over every path in equal shares", () => {
  const plan = teraioPlan(setup, 2);
  const ops = two.ranks[0]!.ops.filter((op) => op.iteration === 1);
  for (const [l, ts] of plan.layers.entries()) {
    for (const t of ts) {
      const of = (kind: string) =>
        ops.filter((op) => op.kind === kind && op.label === `layer${l}.${t.name}`);
      const share = scaledBytes(setup, t.bytes / 2);
      for (const kind of ["write", "read"]) {
        const got = of(kind).map((op) => [op.path, op.stream, op.object, op.bytes]);
        assert.deepEqual(
          got,
          t.offload
            ? [
              ["local", `local:${kind}`, `layer${l}.${t.name}.s0`, share],
              ["local2", `local2:${kind}`, `layer${l}.${t.name}.s1`, share],
            ]
            : [],
        );
      }
    }
  }
});

Deno.test("teraio moves the same bytes per iteration on every path, as derived says", () => {
  for (const [program, paths] of [[one, ["local"]], [two, ["local", "local2"]]] as const) {
    const plan = teraioPlan(setup, paths.length);
    const perPath = plan.layers.flat().filter((t) => t.offload)
      .reduce((a, t) => a + scaledBytes(setup, t.bytes / paths.length), 0);
    for (let it = 0; it < 2; it++) {
      const ops = program.ranks[0]!.ops;
      const fwd = bytesByPath(ops, (op) => op.iteration === it && op.phase === "forward");
      const bwd = bytesByPath(ops, (op) => op.iteration === it && op.phase === "backward");
      assert.deepEqual(fwd, Object.fromEntries(paths.map((p) => [`${p}:write`, perPath])));
      assert.deepEqual(bwd, Object.fromEntries(paths.map((p) => [`${p}:read`, perPath])));
    }
    assert.equal(program.derived.write_bytes_per_path_per_rank, perPath);
    assert.equal(program.derived.paths, paths.length);
    const out = plan.layers.flat().filter((t) => t.offload).length;
    assert.equal(program.derived.tensors_offloaded, out);
    assert.equal(program.derived.tensors_kept, 14 * L - out);
    assert.equal(program.derived.activation_bytes_per_layer_unscaled, 34 * sbh + 5 * as2b);
    assert.deepEqual(program.paths.map((p) => p.name), paths);
  }
  assert.ok(one.notes.some((n) => n.includes("2 GB/s per local path")));
});

Deno.test("teraio reads activations back in reverse layer order", () => {
  const ops = one.ranks[0]!.ops.filter((op) => op.iteration === 0);
  const bwd = ops.filter((op) => op.kind === "compute" && op.phase === "backward");
  assert.deepEqual(
    bwd.map((op) => op.label),
    Array.from({ length: L }, (_, i) => `layer${L - 1 - i}.backward`),
  );
  const fwd = ops.filter((op) => op.kind === "compute" && op.phase === "forward");
  assert.deepEqual(
    fwd.map((op) => op.label),
    Array.from({ length: L }, (_, i) => `layer${i}.forward`),
  );
  for (const { name } of TERAIO_TENSORS) {
    const layers = ops.filter((op) => op.kind === "read" && op.label.endsWith(`.${name}`))
      .map((op) => Number(op.label.slice(5, op.label.indexOf("."))));
    assert.ok(layers.length > 0, name);
    assert.deepEqual(layers, [...layers].sort((a, b) => b - a), name);
  }
});

Deno.test("teraio starts a tensor's reads when backward of layer l + d starts, d from the read time", () => {
  const plan = teraioPlan(setup, 1);
  const bwdMs = 2 * fwdMsUnscaled;
  const d = (bytes: number) => Math.max(1, Math.ceil(((bytes / 2e9) * 1000) / bwdMs));
  const dist = Object.fromEntries(plan.layers[0]!.map((t) => [t.name, t.distance]));
  for (const t of plan.layers[0]!) assert.equal(t.distance, d(t.bytes), t.name);
  // 2·a·s²·b: 134 ms to read over 17.9 ms per layer; 8·s·b·h: 33.6 ms; 2·s·b·h: 8.4 ms
  assert.equal(dist.softmax_out, 8);
  assert.equal(dist.gelu_in, 2);
  assert.equal(dist.ln1_in, 1);
  checkReleases(one.ranks[0]!.ops, plan.layers);
});

Deno.test("teraio's prefetch option replaces the planned distance", () => {
  const p = teraio.build(setup, { local: ["local", "local2"] }, { prefetch: 3 });
  const plan = teraioPlan(setup, 2, 3);
  assert.ok(plan.layers.flat().every((t) => t.distance === 3));
  assert.equal(p.derived.prefetch, "option");
  assert.equal(two.derived.prefetch, "plan");
  checkReleases(p.ranks[0]!.ops, plan.layers);
  assert.throws(() => teraio.build(setup, { local: ["local"] }, { prefetch: 0 }), /prefetch 0/);
});

/** Every read waits for its write and for backward(l + d + 1) (or the phase start only); backward(l) waits for its reads. */
function checkReleases(
  all: readonly Op[],
  layers: readonly (readonly { name: string; offload: boolean; distance: number }[])[],
) {
  const ops = all.filter((op) => op.iteration === 1);
  const bwdOf = (l: number) => ops.find((op) => op.label === `layer${l}.backward`)!;
  for (const [l, ts] of layers.entries()) {
    let reads = 0;
    for (const t of ts.filter((x) => x.offload)) {
      for (
        const read of ops.filter((op) => op.kind === "read" && op.label === `layer${l}.${t.name}`)
      ) {
        reads++;
        const write = ops.find((op) => op.kind === "write" && op.object === read.object)!;
        assert.ok(read.after.includes(write.id));
        assert.equal(all[read.after[0]!]!.label, "backward");
        const computes = read.after.filter((a) => all[a]!.kind === "compute");
        const trigger = l + t.distance + 1;
        assert.deepEqual(computes, trigger <= L - 1 ? [bwdOf(trigger).id] : [], `${l} ${t.name}`);
      }
    }
    const waits = bwdOf(l).after;
    assert.equal(waits.length, reads);
    assert.ok(
      waits.every((a) => all[a]!.kind === "read" && all[a]!.label.startsWith(`layer${l}.`)),
    );
  }
}

Deno.test("teraio bounds the write-behind: forward(l) waits for the last writes of layer l−2 on every path", () => {
  const ops = two.ranks[0]!.ops.filter((op) => op.iteration === 0);
  const fwdOf = (l: number) => ops.find((op) => op.label === `layer${l}.forward`)!;
  for (let l = 2; l < L; l++) {
    const lastOf = (path: string) =>
      ops.filter((op) =>
        op.kind === "write" && op.path === path && op.label.startsWith(`layer${l - 2}.`)
      )
        .at(-1)!;
    assert.deepEqual(
      fwdOf(l).after.slice(1).sort(),
      [lastOf("local").id, lastOf("local2").id].sort(),
    );
  }
  const ms = gpuMs(setup, layerForwardFlops(setup.model, 1, 1));
  assert.ok(
    ops.filter((op) => op.kind === "compute").every((op) =>
      op.ms === (op.phase === "forward" ? ms : 2 * ms)
    ),
  );
});

Deno.test("teraio refuses to build without a local path", () => {
  assert.throws(() => teraio.build(setup, { local: [] }), /teraio needs a local path/);
});
