import assert from "node:assert/strict";
import { activationBytesPerLayer, layerForwardFlops } from "../workloads/model.ts";
import { resolveSetup } from "../workloads/setup.ts";
import { planActivations, simulateActivations } from "./activations.ts";

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

Deno.test("planActivations(): with two layers awaiting offload, writes hide only when a layer writes within a forward layer", () => {
  // layer l's write starts when its forward ends, and layer l + 2 starts one forward layer later:
  // a write slower than that stalls the forward from the first offloaded layer on
  const x = (writeS: number) => ({
    layers: setup.model.layers,
    forwardS: f,
    writeS,
    readS: A / (1e15 / 4),
  });
  const fast = planActivations(setup, 1e15, 4 * A / (0.99 * f));
  assert.equal(fast.offloaded, 31);
  assert.equal(fast.stall_all_s, 0);
  const slow = planActivations(setup, 1e15, 4 * A / (1.24 * f));
  assert.equal(slow.offloaded, 0);
  assert.equal(slow.stall_s, 0);
  assert.ok(slow.stall_all_s > 0);
  assert.match(slow.why, /0 of 31 layers hide; the writes in forward bind/);
  // the predicted phases are the simulation's
  assert.deepEqual(slow.phases?.plan, simulateActivations(x(1.24 * f), 0, slow.prefetch));
  assert.deepEqual(slow.phases?.all, simulateActivations(x(1.24 * f), 31, slow.prefetch_all!));
  assert.ok(simulateActivations(x(1.24 * f), 1, 1).stall_s > 0);
});

Deno.test("simulateActivations(): two layers await offload at most, reads wait for the backward d + 1 layers later", () => {
  const x = { layers: 6, forwardS: 1, writeS: 3, readS: 1 };
  // forward: w0 1–4, w1 4–7; layer 2 waits for w0 (4), layer 3 for w1 (7): 7 + 3 layers = 10
  assert.equal(simulateActivations(x, 2, 1).forward_s, 10);
  // backward (2 s a layer), layers 5 … 0, only 0 and 1 offloaded; d = 1: r1 waits for bwd(3) (6),
  // ends 7; bwd(1) starts at max(8, 7) = 8; r0 waits for bwd(2) (8), ends 9; bwd(0) 10–12
  assert.equal(simulateActivations(x, 2, 1).backward_s, 12);
  // d = 0 would read each layer only once the layer above is done: 1 s of stall per layer read
  assert.equal(simulateActivations({ ...x, writeS: 0.5 }, 2, 0).stall_s, 2);
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

Deno.test("planActivations() reads just far enough ahead: one layer less would stall", () => {
  // a read takes 1.5 backward layers: reads fall behind, and the layers that stay on the GPU at the
  // end of the model give them a head start only if they start early enough
  const r = 4 * A / (1.5 * 2 * f);
  const a = planActivations(setup, r, 1e15);
  assert.ok(a.offloaded > 0 && a.offloaded < setup.model.layers - 1, String(a.offloaded));
  assert.ok(a.stall_s < 1e-9);
  const x = { layers: setup.model.layers, forwardS: f, writeS: A / (1e15 / 4), readS: 1.5 * 2 * f };
  if (a.prefetch > 1) assert.ok(simulateActivations(x, a.offloaded, a.prefetch - 1).stall_s > 0);
  assert.match(a.why, /the reads in backward bind/);
});
