import assert from "node:assert/strict";
import { activationBytesPerLayer, layerForwardFlops } from "../workloads/model.ts";
import { resolveSetup } from "../workloads/setup.ts";
import { planActivations } from "./activations.ts";

const setup = resolveSetup({ model: "7b" });
const A = activationBytesPerLayer(setup.model, 1, 1);
const f = layerForwardFlops(setup.model, 1, 1) / 100e12;

Deno.test("planActivations() offloads every layer but the last when the tier outruns the GPU", () => {
  const a = planActivations(setup, 1e15, 1e15);
  assert.equal(a.offloaded, setup.model.layers - 1);
  assert.equal(a.stall_s, 0);
  assert.equal(a.prefetch, 1);
  assert.equal(a.freed_bytes, (setup.model.layers - 1) * A);
  assert.match(a.why, /every layer but the last hides/);
});

Deno.test("planActivations() offloads as many layers as the slower direction hides, and says which binds", () => {
  // per rank: write bandwidth so that exactly 10 layers' writes fit under 31 layers of forward
  const w = (10 * A) / (31 * f) * 4;
  const a = planActivations(setup, 1e15, w * 1.0000001);
  assert.equal(a.offloaded, 10);
  assert.ok(a.stall_s < 1e-9);
  assert.ok(a.stall_all_s > 0);
  assert.match(a.why, /10 of 31 layers hide; the writes in forward bind/);
});

Deno.test("planActivations(): a slower tier never offloads more, nor predicts less stall for all layers", () => {
  let lastK = Infinity, lastStall = -1;
  for (const bw of [1e12, 1e11, 3e10, 1e10, 1e9]) {
    const a = planActivations(setup, bw, bw);
    assert.ok(a.offloaded <= lastK);
    assert.ok(a.stall_all_s >= lastStall);
    lastK = a.offloaded;
    lastStall = a.stall_all_s;
  }
});

Deno.test("planActivations() reads far enough ahead to cover one layer's read", () => {
  const a = planActivations(setup, 4 * A / (2 * f) / 3, 1e15); // a read takes 3 backward layers
  assert.equal(a.prefetch, 3);
});
