import assert from "node:assert/strict";
import {
  activationBytesPerLayer,
  layerForwardFlops,
  LLAMA_PRESETS,
  MODEL_NAMES,
  MODEL_PRESETS,
  modelPreset,
  parameterCount,
} from "./model.ts";
import { partitionedSubgroups, resolveSetup, shardParameters } from "./setup.ts";

Deno.test("every GPT-style preset's derived parameter count is within 5 % of its name", () => {
  assert.deepEqual(
    MODEL_NAMES.slice(0, 8),
    ["7b", "13b", "40b", "52b", "70b", "100b", "175b", "280b"],
  );
  for (const m of MODEL_PRESETS) {
    const n = parameterCount(m);
    assert.ok(Math.abs(n / m.nominal - 1) < 0.05, `${m.name}: ${n}`);
    assert.equal(m.hidden % m.heads, 0, `${m.name}: hidden not divisible by heads`);
  }
});

Deno.test("parameterCount() is 12·L·h² + 13·L·h + (V + s + 2)·h", () => {
  const m = { name: "t", nominal: 0, layers: 2, hidden: 8, heads: 2, sequence: 4, vocabulary: 10 };
  assert.equal(parameterCount(m), 2 * (12 * 64 + 13 * 8) + (10 + 4 + 2) * 8);
  // GPT-3 175B: 96 layers of 12288
  assert.equal(Math.round(parameterCount(modelPreset("175b")) / 1e9), 175);
});

Deno.test("modelPreset() accepts 70B and 70b and names the presets otherwise", () => {
  assert.equal(modelPreset("70B").layers, 88);
  assert.throws(() => modelPreset("71b"), /use one of 7b, 13b/);
});

Deno.test("activationBytesPerLayer() is s·b·h·(34 + 5·a·s/h) over tp", () => {
  const m = modelPreset("7b"); // s 2048, h 4096, a 32
  const want = 2048 * 1 * 4096 * (34 + (5 * 32 * 2048) / 4096);
  assert.equal(activationBytesPerLayer(m, 1, 1), want);
  assert.equal(activationBytesPerLayer(m, 2, 2), want);
});

Deno.test("layerForwardFlops() is 24·b·s·h² + 4·b·s²·h over tp", () => {
  const m = modelPreset("7b");
  assert.equal(layerForwardFlops(m, 1, 1), 24 * 2048 * 4096 ** 2 + 4 * 2048 ** 2 * 4096);
  assert.equal(layerForwardFlops(m, 1, 4), layerForwardFlops(m, 1, 1) / 4);
});

Deno.test("the LLaMA-2 presets are the sizes of MLP-Offload's launch script", () => {
  assert.deepEqual(
    LLAMA_PRESETS.map((m) => m.name),
    ["7b", "8.3b", "10b", "13b", "20b", "30b", "40b", "52b", "66b", "70b", "100b", "120b"]
      .map((n) => `llama2-${n}`),
  );
  for (const m of LLAMA_PRESETS) {
    assert.equal(m.hidden % m.heads, 0, m.name);
    assert.equal(m.kvHeads, 4, m.name);
    assert.equal(m.vocabulary, 50304, m.name);
  }
  assert.equal(modelPreset("LLaMA2-70B").layers, 80);
});

// The artifact's logs (mauryaavinash95/MLP-Offload e181b47, logs/log-{40,52,70,100}B-…-tmp.log):
// "number of parameters on (tensor, pipeline) model parallel rank (0, 0)", and on 4 ranks with
// sub_group_size 1e8 "Swappable FP32 Partitions: count=… size=… GB" (size in GiB).
const LOGGED = [
  { model: "llama2-40b", parameters: 48163722240, subgroups: 97, gib: "44.86" },
  { model: "llama2-52b", parameters: 44278226944, subgroups: 66, gib: "41.24" },
  { model: "llama2-70b", parameters: 68605452288, subgroups: 82, gib: "63.89" },
  { model: "llama2-100b", parameters: 105885147136, subgroups: 126, gib: "98.61" },
];

Deno.test("the LLaMA-2 presets have the parameters and subgroups per rank the artifact's logs state", () => {
  for (const want of LOGGED) {
    assert.equal(parameterCount(modelPreset(want.model)), want.parameters, want.model);
    const setup = resolveSetup({ model: want.model, ranksPerNode: 4, subgroupSize: 1e8 });
    assert.equal(partitionedSubgroups(setup).length, want.subgroups, want.model);
    assert.equal((shardParameters(setup) * 4 / 2 ** 30).toFixed(2), want.gib, want.model);
  }
  // 70B: subgroups of up to 2.1e8 elements (an MLP-out, then a whole layer but its MLP-out)
  const g = partitionedSubgroups(resolveSetup({ model: "llama2-70b", subgroupSize: 1e8 }));
  assert.equal(Math.max(...g.map((x) => x.elements)), 211816448);
});

Deno.test("layerForwardFlops() of a LLaMA-2 preset counts its SwiGLU and grouped-query weights", () => {
  const m = modelPreset("llama2-70b"); // h 8192, F 28672, 64 heads, 4 key/value heads
  const weights = 8192 * (8192 + 2 * 4 * 128) + 8192 * 8192 + 3 * 8192 * 28672;
  assert.equal(layerForwardFlops(m, 1, 1), 2 * 2048 * weights + 4 * 2048 ** 2 * 8192);
});
