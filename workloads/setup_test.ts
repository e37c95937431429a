import assert from "node:assert/strict";
import { ConfigError } from "../core/errors.ts";
import { parameterCount } from "./model.ts";
import {
  adamMs,
  alignedElements,
  parameterPartitions,
  resolveSetup,
  scaledBytes,
  scaledMs,
  shardParameters,
  SIZE_ALIGNMENT,
  subgroupSizes,
  swappable,
} from "./setup.ts";

Deno.test("resolveSetup() defaults to MLP-Offload's setup: 4 ranks, subgroups of 1e8, dp = ranks / tp", () => {
  const s = resolveSetup();
  assert.equal(s.model.name, "70b");
  assert.equal(s.ranksPerNode, 4);
  assert.equal(s.dataParallel, 4);
  assert.equal(s.subgroupElements, 1e8);
  assert.equal(resolveSetup({ tensorParallel: 2 }).dataParallel, 2);
  assert.equal(resolveSetup({ subgroupSize: "1e9" }).subgroupElements, 1e9);
});

Deno.test("resolveSetup() names the field and what it accepts", () => {
  const bad: [Record<string, unknown>, RegExp][] = [
    [{ model: "6b" }, /^--model: .*7b, 13b/],
    [{ scale: 0 }, /^--scale: .*\(0, 1\]/],
    [{ scale: "x" }, /^--scale: .*"x" is not a number/],
    [{ ranksPerNode: 0 }, /^--ranks-per-node: /],
    [{ bytesPerState: 3 }, /^--bytes-per-state: .*2 or 4/],
    [{ tensorParallel: 3 }, /^--tp: 3 does not divide/],
    [{ dataParallel: 1 }, /^--dp: 1 × --tp 1 is fewer than the 4 ranks/],
    [{ warmup: -1 }, /^--warmup: .*≥ 0/],
  ];
  for (const [raw, want] of bad) {
    assert.throws(
      () => resolveSetup(raw),
      (e: unknown) => e instanceof ConfigError && want.test(e.message),
    );
  }
});

Deno.test("scale shrinks bytes and think times but keeps the number of subgroups", () => {
  const full = resolveSetup({ model: "70b" });
  const small = resolveSetup({ model: "70b", scale: 0.001 });
  assert.deepEqual(subgroupSizes(full), subgroupSizes(small));
  assert.equal(subgroupSizes(full).reduce((a, b) => a + b), shardParameters(full));
  assert.equal(scaledBytes(full, 4e8), Math.ceil(4e8 / 4096) * 4096);
  assert.equal(scaledBytes(small, 4e8) % SIZE_ALIGNMENT, 0);
  assert.ok(Math.abs(scaledBytes(small, 4e8) / 4e5 - 1) < 0.011);
  assert.equal(scaledBytes(small, 0), 0);
  assert.equal(scaledMs(small, 1000), 1);
  // 1e8 parameters at 1e9 per second: 100 ms, scaled to 0.1 ms
  assert.equal(adamMs(full, 1e8), 100);
  assert.ok(Math.abs(adamMs(small, 1e8) - 0.1) < 1e-12);
});

Deno.test("shardParameters() splits the model over dp × tp", () => {
  const s = resolveSetup({ model: "7b", ranksPerNode: 8, tensorParallel: 2 });
  assert.equal(shardParameters(s), Math.ceil(s.parameters / 8));
});

Deno.test("parameterPartitions() splits each tensor over tp then dp, rounding each partition up", () => {
  const one = resolveSetup({ model: "13b", ranksPerNode: 1 });
  const whole = parameterPartitions(one);
  assert.equal(whole.reduce((t, p) => t + p.elements, 0), parameterCount(one.model));
  for (const [ranks, tp] of [[4, 1], [4, 2], [8, 4]] as const) {
    const s = resolveSetup({ model: "13b", ranksPerNode: ranks, tensorParallel: tp });
    const parts = parameterPartitions(s);
    assert.deepEqual(
      parts.map((p) => p.elements),
      whole.map((p) => Math.ceil(Math.ceil(p.elements / tp) / (ranks / tp))),
    );
    // the padding per tensor is under one element per rank: the sum is the shard, nearly
    const sum = parts.reduce((t, p) => t + p.elements, 0);
    assert.ok(sum >= shardParameters(s) && sum - shardParameters(s) < 2 * parts.length);
  }
  // --params scales every tensor
  const half = resolveSetup({
    model: "13b",
    ranksPerNode: 1,
    parameters: parameterCount(one.model) / 2,
  });
  const halved = parameterPartitions(half).reduce((t, p) => t + p.elements, 0);
  assert.ok(Math.abs(halved / half.parameters - 1) < 1e-6);
});

Deno.test("alignedElements() and swappable() state DeepSpeed's padding and its 1 MiB / block_size bar", () => {
  assert.equal(alignedElements(1, 4), 256);
  assert.equal(alignedElements(257, 4), 512);
  assert.equal(alignedElements(1000, 4, 4), 1024);
  assert.equal(alignedElements(1, 2), 512);
  assert.ok(swappable((1 << 20) / 4, 4, 1 << 20));
  assert.ok(!swappable((1 << 20) / 4 - 1, 4, 1 << 20));
  assert.ok(!swappable((1 << 20) / 4, 4, 2 << 20));
});
