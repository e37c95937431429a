import assert from "node:assert/strict";
import { bytesByPath } from "./ops.ts";
import { resolveSetup, scaledBytes, shardParameters, subgroupSizes } from "./setup.ts";
import { zeroInfinity } from "./zero_infinity.ts";

const setup = resolveSetup({ model: "70b", scale: 0.001, iterations: 2, warmup: 0 });
const program = zeroInfinity.build(setup, { local: ["local"] });
const rank0 = program.ranks[0]!;
const sizes = subgroupSizes(setup);
const perState = (el: number) => scaledBytes(setup, el * 4);

Deno.test("zero-infinity builds one program per rank with 179 subgroups for 70B on 4 ranks", () => {
  assert.equal(program.ranks.length, 4);
  // 71.3e9 parameters over 4 ranks, 1e8 per subgroup
  assert.equal(sizes.length, Math.ceil(shardParameters(setup) / 1e8));
  assert.equal(sizes.length, 179);
  assert.equal(program.derived.subgroups_per_rank, sizes.length);
});

Deno.test("zero-infinity moves 16 B/param in and 12 B/param out in update, 4 B/param of gradients in backward", () => {
  for (let it = 0; it < 2; it++) {
    const update = bytesByPath(rank0.ops, (op) => op.iteration === it && op.phase === "update");
    const backward = bytesByPath(rank0.ops, (op) => op.iteration === it && op.phase === "backward");
    const want = (states: number) => sizes.reduce((t, el) => t + states * perState(el), 0);
    assert.deepEqual(update, { "local:read": want(4), "local:write": want(3) });
    assert.deepEqual(backward, { "local:write": want(1) });
  }
  // unscaled sizes: 1e8 elements × 4 B × 0.001 = 400 000 B, rounded up to 4 KiB
  assert.equal(perState(1e8), 401_408);
});

Deno.test("zero-infinity reads each subgroup's params, m, v, grad in ascending order", () => {
  const reads = rank0.ops.filter((op) => op.kind === "read" && op.iteration === 1);
  assert.equal(reads.length, 4 * sizes.length);
  assert.deepEqual(reads.slice(0, 5).map((op) => op.object), [
    "sg0.params",
    "sg0.m",
    "sg0.v",
    "sg0.grad",
    "sg1.params",
  ]);
  const order = reads.filter((_, i) => i % 4 === 0).map((op) => Number(op.object!.slice(2, -7)));
  assert.deepEqual(order, sizes.map((_, i) => i));
});

Deno.test("zero-infinity prefetches one subgroup ahead and keeps two write buffers", () => {
  const ops = rank0.ops;
  const adam = ops.filter((op) => op.label.endsWith(".adam") && op.iteration === 0);
  const readOf = (i: number) =>
    ops.find((op) => op.kind === "read" && op.object === `sg${i}.params`)!;
  // read(i) waits for compute(i-2), i.e. it runs while compute(i-1) runs
  assert.ok(readOf(2).after.includes(adam[0]!.id));
  assert.ok(!readOf(2).after.includes(adam[1]!.id));
  // compute(i) waits for its four reads and the write of i-2
  const c3 = adam[3]!;
  const writeOf1 = ops.filter((op) =>
    op.kind === "write" && op.object === "sg1.v" && op.iteration === 0
  );
  assert.ok(c3.after.includes(writeOf1.at(-1)!.id));
  assert.equal(c3.after.filter((id) => ops[id]!.kind === "read").length, 4);
});

Deno.test("zero-infinity writes gradients last subgroup first, each after its backward slice", () => {
  const grads = rank0.ops.filter((op) => op.object?.endsWith(".grad") && op.kind === "write");
  assert.equal(grads.length, 2 * sizes.length);
  assert.equal(grads[0]!.object, `sg${sizes.length - 1}.grad`);
  assert.equal(grads[sizes.length - 1]!.object, "sg0.grad");
  for (const g of grads) assert.equal(rank0.ops[g.after[0]!]!.kind, "compute");
});

Deno.test("zero-infinity lays out params, m and v of every subgroup before the first op", () => {
  assert.equal(rank0.initial.length, 3 * sizes.length);
  assert.ok(rank0.initial.every((o) => o.path === "local"));
});

Deno.test("zero-infinity refuses to build without a local path", () => {
  assert.throws(() => zeroInfinity.build(setup, { local: [] }), /needs a local path.*file:DIR/);
});
